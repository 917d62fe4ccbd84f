package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/internal/fixtures"
)

// duringAttack runs attack from 8 goroutines, 4 times each, while it asks
// /healthz; it fails unless a health request was answered 200 while the
// attack was still running.
func (b *testBundle) duringAttack(t *testing.T, attack func()) {
	t.Helper()
	var wg sync.WaitGroup
	var running atomic.Int32
	running.Store(8)
	for range 8 {
		wg.Go(func() {
			defer running.Add(-1)
			for range 4 {
				attack()
			}
		})
	}
	answered := false
	for running.Load() > 0 && !answered {
		resp, err := http.Get(b.srv.URL + "/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answered = resp.StatusCode == http.StatusOK && running.Load() > 0
		}
	}
	wg.Wait()
	require.True(t, answered, "no health request was answered during the attack")
}

// post sends a raw /graphql body.
func (b *testBundle) post(t *testing.T, body string) gqlResponse {
	t.Helper()
	resp, err := http.Post(b.srv.URL+"/graphql", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out gqlResponse
	raw, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(raw, &out), "body %.300s", raw)
	out.Status = resp.StatusCode
	return out
}

func (b *testBundle) get(t *testing.T, query string) gqlResponse {
	t.Helper()
	resp, err := http.Get(b.srv.URL + "/graphql?query=" + url.QueryEscape(query))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out gqlResponse
	raw, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(raw, &out), "body %.300s", raw)
	out.Status = resp.StatusCode
	return out
}

// wsFirstError subscribes with query over graphql-transport-ws and returns
// the error payload the server answers.
func (b *testBundle) wsFirstError(t *testing.T, query string) []map[string]any {
	t.Helper()
	c, _, err := b.wsDial(t, "graphql-transport-ws", publicURL)
	require.NoError(t, err)
	require.NoError(t, c.WriteJSON(wsMsg{Type: "connection_init"}))
	var m wsMsg
	require.NoError(t, c.ReadJSON(&m))
	require.Equal(t, "connection_ack", m.Type)
	p, _ := json.Marshal(map[string]string{"query": query})
	require.NoError(t, c.WriteJSON(wsMsg{ID: "1", Type: "subscribe", Payload: p}))
	for m.Type != "error" && m.Type != "next" {
		require.NoError(t, c.ReadJSON(&m))
	}
	var errs []map[string]any
	if m.Type == "next" {
		var r struct{ Errors []map[string]any }
		require.NoError(t, json.Unmarshal(m.Payload, &r))
		errs = r.Errors
	} else {
		require.NoError(t, json.Unmarshal(m.Payload, &errs))
	}
	return errs
}

func codeOf(r gqlResponse) string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

func TestHostileDocuments(t *testing.T) {
	t.Parallel()
	// The byte budget per address would refuse most of the attack first
	// (TestRequestBytesPerAddress): off, to reach the document limits.
	b := setupEnv(t, map[string]string{"ABUSE_LIMITS": "off"})
	typenames := func(n int) string { return "{ " + strings.Repeat("__typename ", n) + "}" }
	pairs := func(n int) string { return `{ event(id:"x") { ` + strings.Repeat("a:id a:name ", n) + "} }" }
	cases := []struct {
		name, query, code string
	}{
		// 20,000 times the same name: over the token limit, refused by the parser.
		{"TokenLimit", "# random\n" + typenames(20000), "GRAPHQL_PARSE_FAILED"},
		// Under the token limit, but over the selection cap once the
		// fragment is counted where it is spread.
		{"Selections", `{ ...F ...F ...F } fragment F on Query { ` + distinct(400) + `}`, "GRAPHQL_VALIDATION_FAILED"},
		// Few selections, one name repeated: over the repeated-name cap.
		{"RepeatedName", typenames(MaxRepeated + 1), "GRAPHQL_VALIDATION_FAILED"},
		// The 700 conflicting pairs of the issue (490,000 validation errors
		// before): over the token limit now.
		{"ConflictingAliases", pairs(700), "GRAPHQL_PARSE_FAILED"},
		{"ConflictingAliasesUnderTokenLimit", pairs(300), "GRAPHQL_VALIDATION_FAILED"},
		{"ConflictingAliasesFew", pairs(15), "GRAPHQL_VALIDATION_FAILED"},
		// Fragments spread inside fragments: counted where they are spread.
		{"FragmentFanOut", `{ ...F0 }` + fragmentFanOut(12), "GRAPHQL_VALIDATION_FAILED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			body, _ := json.Marshal(map[string]string{"query": c.query})
			b.duringAttack(t, func() {
				r := b.post(t, string(body))
				require.Equal(t, c.code, codeOf(r), "%+v", r.Errors)
				require.LessOrEqual(t, len(r.Errors), app.MaxErrors)
			})
			if len(c.query) < 6000 { // a URL of the GET transport stays short
				r := b.get(t, c.query)
				require.Equal(t, c.code, codeOf(r), "GET: %+v", r.Errors)
			}
			if len(c.query) < 60<<10 { // the WebSocket read limit
				errs := b.wsFirstError(t, c.query)
				require.NotEmpty(t, errs)
				require.LessOrEqual(t, len(errs), app.MaxErrors)
				ext, _ := errs[0]["extensions"].(map[string]any)
				require.Equal(t, c.code, ext["code"], "WebSocket: %v", errs)
			}
		})
	}
	t.Run("OKUnderTheCaps", func(t *testing.T) {
		t.Parallel()
		r := b.graphql(t, "", typenames(app.MaxRepeatedName))
		require.Empty(t, r.Errors)
	})
	t.Run("ErrorsCapped", func(t *testing.T) {
		t.Parallel()
		var q strings.Builder
		q.WriteString("{ ")
		for i := range 400 {
			fmt.Fprintf(&q, "f%d ", i)
		}
		q.WriteString("}")
		r := b.graphql(t, "", q.String())
		require.Equal(t, "GRAPHQL_VALIDATION_FAILED", codeOf(r))
		require.Len(t, r.Errors, app.MaxErrors)
		require.Contains(t, r.Errors[app.MaxErrors-1].Message, "more errors not shown")
	})
}

// distinct is n fields of distinct response names.
func distinct(n int) string {
	var s strings.Builder
	for i := range n {
		fmt.Fprintf(&s, "a%d: __typename ", i)
	}
	return s.String()
}

// MaxRepeated mirrors app.MaxRepeatedName for the table above.
const MaxRepeated = app.MaxRepeatedName

// fragmentFanOut is F0 spreading F1 twice, F1 spreading F2 twice, ...: 2^n
// fields once expanded, from a document of a few hundred bytes.
func fragmentFanOut(n int) string {
	var s strings.Builder
	for i := range n {
		fmt.Fprintf(&s, " fragment F%d on Query { a%d: __typename ...F%d b%d: __typename ...F%d }", i, i, i+1, i, i+1)
	}
	fmt.Fprintf(&s, " fragment F%d on Query { __typename }", n)
	return s.String()
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	b := setupEnv(t, map[string]string{"ABUSE_LIMITS": "off"}) // see TestHostileDocuments
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	cases := []struct{ name, body string }{
		{"ArrayBatch", `[{"query":"{ __typename }"},{"query":"{ __typename }"}]`},
		{"DeepVariables", `{"query":"query($v: String) { __typename }","variables":` + deep + `}`},
		{"BadPersistedHash", `{"query":"{ __typename }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`},
		{"NotJSON", `{"query": `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b.duringAttack(t, func() {
				r := b.post(t, c.body)
				require.Equal(t, "BAD_USER_INPUT", codeOf(r), "%+v", r.Errors)
				require.LessOrEqual(t, len(r.Errors[0].Message), 210, "the message is cut short")
			})
		})
	}
	t.Run("UnknownPersistedHash", func(t *testing.T) {
		t.Parallel()
		r := b.post(t, `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"`+strings.Repeat("ab", 32)+`"}}}`)
		require.Equal(t, "PERSISTED_QUERY_NOT_FOUND", codeOf(r))
	})
}

func TestIntrospectionOffInProduction(t *testing.T) {
	t.Parallel()
	b := setupEnv(t, map[string]string{"GRAPHQL_INTROSPECTION": ""}) // not a loopback URL: off
	r := b.graphql(t, "", `{ __schema { queryType { name } } }`)
	require.Equal(t, "GRAPHQL_VALIDATION_FAILED", codeOf(r), "%+v", r.Errors)
	require.Contains(t, r.Errors[0].Message, "introspection is disabled")
	r = b.graphql(t, "", `{ x: __type(name: "Query") { name } }`)
	require.Equal(t, "GRAPHQL_VALIDATION_FAILED", codeOf(r))
	r = b.graphql(t, "", `{ __typename }`)
	require.Empty(t, r.Errors)
	// No "Did you mean" suggestions either.
	r = b.graphql(t, "", `{ evnt(id: "x") { id } }`)
	require.Equal(t, "GRAPHQL_VALIDATION_FAILED", codeOf(r))
	require.NotContains(t, r.Errors[0].Message, "Did you mean")
}

// eventPageQuery is the web app's event page query (web/src/pages/event.ts).
const eventPageQuery = `query Event($id: ID!) {
  event(id: $id) {
    id name description category startsAt endsAt saleStatus
    venue { id name address city country
      sections { id name kind capacity bounds { x y width height } seats { id row number x y } } }
    artists { id name genres }
    saleConditions { saleStartsAt saleEndsAt maxTicketsPerUser holdDurationSeconds queueRequired refundPolicy }
    prices { section { id } price { amount currency } }
    availability { available held sold capacity }
    minPrice { amount currency } maxPrice { amount currency }
    seatMap { eventId cursor seats { seatId sectionId status version } generalAdmission { sectionId available version } }
  }
}`

func TestCostCountsSeatsByTheirRealNumber(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := fixtures.SmallEvent(t, b.app.Pool, fixtures.EventOptions{Seats: 20000})
	small := fixtures.SmallEvent(t, b.app.Pool, fixtures.EventOptions{})
	aliases := func(id string, n int) string {
		var q strings.Builder
		q.WriteString("{ ")
		for i := range n {
			fmt.Fprintf(&q, `e%d: event(id: %q) { seatMap { seats { seatId status } } } `, i, id)
		}
		return q.String() + "}"
	}
	before := snapshotCounts(t, b.app.Pool)
	// The 20 aliases of a 20,000-seat map (55 MB): refused before it runs.
	b.duringAttack(t, func() {
		r := b.graphql(t, "", aliases(big.ID, 20))
		require.Equal(t, "COMPLEXITY_LIMIT_EXCEEDED", codeOf(r), "%+v", r.Errors)
		require.Contains(t, []string{"", "null"}, string(r.Data))
	})
	// Through a venue's sections too.
	r := b.graphql(t, "", fmt.Sprintf(`{ a: event(id: %q) { venue { sections { seats { id row number x y } } } }
		b: event(id: %q) { venue { sections { seats { id row number x y } } } }
		c: event(id: %q) { venue { sections { seats { id row number x y } } } }
		d: event(id: %q) { venue { sections { seats { id row number x y } } } } }`, big.ID, big.ID, big.ID, big.ID))
	require.Equal(t, "COMPLEXITY_LIMIT_EXCEEDED", codeOf(r), "%+v", r.Errors)
	// The same 20 aliases of a 10-seat map are cheap.
	r = b.graphql(t, "", aliases(small.ID, 20))
	require.Empty(t, r.Errors)
	// The web app's event page of the 20,000-seat event is served whole.
	body, _ := json.Marshal(map[string]any{"query": eventPageQuery, "variables": map[string]any{"id": big.ID}})
	r = b.post(t, string(body))
	require.Empty(t, r.Errors)
	var page struct {
		Event struct {
			SeatMap struct{ Seats []json.RawMessage }
		}
	}
	require.NoError(t, json.Unmarshal(r.Data, &page))
	require.Len(t, page.Event.SeatMap.Seats, 20000)
	require.Equal(t, before, snapshotCounts(t, b.app.Pool), "nothing changed")
}

// snapshotCounts counts the rows a refused request must not have written.
func snapshotCounts(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, q := range []struct{ name, sql string }{
		{"holds", `SELECT count(*) FROM holds`},
		{"held", `SELECT count(*) FROM inventory WHERE status <> 'AVAILABLE'`},
		{"orders", `SELECT count(*) FROM orders`},
		{"events", `SELECT count(*) FROM events`},
	} {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), q.sql).Scan(&n))
		out[q.name] = n
	}
	return out
}

// setupHandler is setupEnv with a body read timeout, and the server built
// after it is set.
func setupHandler(t *testing.T, extra map[string]string, bodyTimeout time.Duration) *testBundle {
	t.Helper()
	b := setupEnv(t, extra)
	b.app.BodyReadTimeout = bodyTimeout
	srv := httptest.NewServer(b.app.Handler())
	t.Cleanup(srv.Close)
	b.srv = srv
	return b
}

func TestStalledBodyEndsTheConnection(t *testing.T) {
	t.Parallel()
	b := setupHandler(t, nil, 300*time.Millisecond)
	host := strings.TrimPrefix(b.srv.URL, "http://")
	var conns []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", host)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = io.WriteString(c, "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"query\":")
		require.NoError(t, err)
		conns = append(conns, c)
	}
	resp, err := http.Get(b.srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "answered while the bodies stall")
	for _, c := range conns {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "the 400 is delivered")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.True(t, resp.Close, "Connection: close")
		body, _ := io.ReadAll(resp.Body)
		require.Contains(t, string(body), "BAD_USER_INPUT")
		_, err = br.ReadByte()
		require.ErrorIs(t, err, io.EOF, "then the server closes the socket")
	}
}

func TestMetricLabelsAreAFixedSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 50 {
		req, _ := http.NewRequest(fmt.Sprintf("M%dX%s", i, strings.Repeat("Y", 200)), b.srv.URL+"/nowhere/"+fmt.Sprint(i), nil)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	resp, err := http.Get(b.srv.URL + "/metrics")
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(raw)
	require.NotContains(t, metrics, "M1X")
	require.NotContains(t, metrics, "/nowhere/")
	require.Contains(t, metrics, `method="OTHER"`)
}

func TestStreamsPerAddressCapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var open []*websocket.Conn
	for range app.MaxStreamsPerAddress {
		c, _, err := b.wsDial(t, "graphql-transport-ws", publicURL)
		require.NoError(t, err)
		open = append(open, c)
	}
	_, resp, err := b.wsDial(t, "graphql-transport-ws", publicURL)
	require.Error(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	// SSE counts too.
	req, _ := http.NewRequest("GET", b.srv.URL+"/graphql?query="+url.QueryEscape(`subscription { seatMapUpdates(eventId: "x") { cursor } }`), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Origin", publicURL)
	sse, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	sse.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, sse.StatusCode)
	hz, err := http.Get(b.srv.URL + "/healthz")
	require.NoError(t, err)
	hz.Body.Close()
	require.Equal(t, http.StatusOK, hz.StatusCode)
	// A closed connection gives its slot back.
	open[0].Close()
	require.Eventually(t, func() bool {
		c, _, err := b.wsDial(t, "graphql-transport-ws", publicURL)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
}

func TestNoStreamCapWithAbuseLimitsOff(t *testing.T) {
	t.Parallel()
	b := setupEnv(t, map[string]string{"ABUSE_LIMITS": "off"})
	for range app.MaxStreamsPerAddress + 1 {
		_, _, err := b.wsDial(t, "graphql-transport-ws", publicURL)
		require.NoError(t, err)
	}
}

func TestWebAppSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, p := range []string{"/", "/events/x"} {
		resp, err := http.Get(b.srv.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "frame-ancestors 'none'")
		require.Contains(t, csp, "script-src 'self';")
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	}
	resp, err := http.Get(b.srv.URL + "/playground")
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
}

func TestUnstorableInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := fixtures.SmallEvent(t, b.app.Pool, fixtures.EventOptions{})
	tok := "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["sub"] = "fan-1" }))
	before := snapshotCounts(t, b.app.Pool)
	hold := `mutation($input: CreateHoldInput!) { createHold(input: $input) { id } }`
	send := func(authz string, vars map[string]any, query string) gqlResponse {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", authz)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out gqlResponse
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	field := func(r gqlResponse) any {
		require.NotEmpty(t, r.Errors)
		return r.Errors[0].Extensions["field"]
	}
	t.Run("GAQuantitiesThatOverflow", func(t *testing.T) {
		// 2^62+1 twice: was accepted as a 2-unit hold (int overflow, then int32).
		r := send(tok, map[string]any{"input": map[string]any{"eventId": ev.ID, "idempotencyKey": "k1",
			"generalAdmission": []any{
				map[string]any{"sectionId": ev.GA, "quantity": int64(1<<62 + 1)},
				map[string]any{"sectionId": ev.Seated, "quantity": int64(1<<62 + 1)},
			}}}, hold)
		require.Equal(t, "BAD_USER_INPUT", codeOf(r), "%+v", r.Errors)
		require.Equal(t, "input.generalAdmission.quantity", field(r))
		// Inline, too.
		r = send(tok, nil, fmt.Sprintf(`mutation { createHold(input: {eventId: %q, idempotencyKey: "k2",
			generalAdmission: [{sectionId: %q, quantity: 4611686018427387905}]}) { id } }`, ev.ID, ev.GA))
		require.Equal(t, "BAD_USER_INPUT", codeOf(r), "%+v", r.Errors)
		// Within Int, but over the hold's cap: refused before any sum.
		r = send(tok, map[string]any{"input": map[string]any{"eventId": ev.ID, "idempotencyKey": "k3",
			"generalAdmission": []any{
				map[string]any{"sectionId": ev.GA, "quantity": math.MaxInt32},
				map[string]any{"sectionId": ev.Seated, "quantity": math.MaxInt32},
			}}}, hold)
		require.Equal(t, "BAD_USER_INPUT", codeOf(r), "%+v", r.Errors)
		require.Equal(t, "input.generalAdmission.quantity", field(r))
	})
	t.Run("NULInIdempotencyKey", func(t *testing.T) {
		r := send(tok, map[string]any{"input": map[string]any{"eventId": ev.ID, "idempotencyKey": "a\x00b", "seatIds": []string{ev.Seats[0]}}}, hold)
		require.Equal(t, "BAD_USER_INPUT", codeOf(r), "%+v", r.Errors)
		require.Equal(t, "input.idempotencyKey", field(r))
	})
	t.Run("NULInAnArgument", func(t *testing.T) {
		r := send("", map[string]any{"id": "x\x00"}, `query($id: ID!) { event(id: $id) { id } }`)
		require.Equal(t, "BAD_USER_INPUT", codeOf(r), "%+v", r.Errors)
		require.Equal(t, "id", field(r))
	})
	t.Run("NULInTheTokensSub", func(t *testing.T) {
		bad := "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["sub"] = "fan\x00" }))
		r := send(bad, map[string]any{"input": map[string]any{"eventId": ev.ID, "idempotencyKey": "k4", "seatIds": []string{ev.Seats[0]}}}, hold)
		require.Equal(t, "UNAUTHENTICATED", codeOf(r), "%+v", r.Errors)
	})
	require.Equal(t, before, snapshotCounts(t, b.app.Pool), "nothing was written")
	// And a fan's ordinary hold still goes through.
	r := send(tok, map[string]any{"input": map[string]any{"eventId": ev.ID, "idempotencyKey": "ok", "seatIds": []string{ev.Seats[0]},
		"generalAdmission": []any{map[string]any{"sectionId": ev.GA, "quantity": 2}}}}, hold)
	require.Empty(t, r.Errors)
}

func TestFairUseRateLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := fixtures.SmallEvent(t, b.app.Pool, fixtures.EventOptions{})
	token := func(sub string) string {
		return "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["sub"] = sub }))
	}
	// A hold of a seat that does not exist: refused by the service
	// (BAD_USER_INPUT or NOT_FOUND) unless the limit refuses it first.
	bogus := func(i int) string {
		return fmt.Sprintf(`mutation { createHold(input: {eventId: %q, seatIds: ["%s"], idempotencyKey: "k%d"}) { id } }`,
			ev.ID, "00000000-0000-7000-8000-000000000000", i)
	}
	t.Run("PerUser", func(t *testing.T) {
		t.Parallel()
		tok := token("bot-user")
		limited := 0
		var retry any
		for i := range app.FairUse["createHold"].User.Burst + 10 {
			r := b.graphql(t, tok, bogus(i))
			if codeOf(r) == "RATE_LIMITED" {
				limited++
				retry = r.Errors[0].Extensions["retryAfterSeconds"]
			}
		}
		require.Positive(t, limited)
		require.NotNil(t, retry)
		require.GreaterOrEqual(t, retry.(float64), 1.0)
		// Another user from the same address is not bothered.
		r := b.graphql(t, token("fan"), bogus(999))
		require.NotEqual(t, "RATE_LIMITED", codeOf(r))
	})
	t.Run("PerAddressOverREST", func(t *testing.T) {
		t.Parallel()
		// Many accounts from one address: each under its own limit, the
		// address over its own.
		limited := 0
		var retryAfter string
		lim := app.FairUse["createOrder"]
		for i := range lim.Addr.Burst + 40 {
			req, _ := http.NewRequest("POST", b.srv.URL+"/api/orders", strings.NewReader(`{"holdId":"00000000-0000-7000-8000-000000000000"}`))
			req.Header.Set("Authorization", token(fmt.Sprintf("acct-%d", i%(lim.Addr.Burst/lim.User.Burst+5))))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprint("o", i))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			var body struct{ Error map[string]any }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				limited++
				retryAfter = resp.Header.Get("Retry-After")
				require.Equal(t, "RATE_LIMITED", body.Error["code"])
				require.NotNil(t, body.Error["retryAfterSeconds"])
			}
		}
		require.Positive(t, limited)
		require.NotEmpty(t, retryAfter)
	})
	t.Run("ARealFanIsNotBothered", func(t *testing.T) {
		t.Parallel()
		// A fan trying a few seats, then a few searches.
		tok := token("real-fan")
		for i := range 8 {
			require.NotEqual(t, "RATE_LIMITED", codeOf(b.graphql(t, tok, bogus(100+i))))
			require.NotEqual(t, "RATE_LIMITED", codeOf(b.graphql(t, tok, `{ searchEvents(first: 5) { edges { node { id } } } }`)))
		}
	})
	require.Equal(t, 0, snapshotCounts(t, b.app.Pool)["holds"])
}

func TestFairUseOff(t *testing.T) {
	t.Parallel()
	b := setupEnv(t, map[string]string{"ABUSE_LIMITS": "off"})
	tok := "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(nil))
	for range app.FairUse["searchEvents"].User.Burst + 20 {
		r := b.graphql(t, tok, `{ searchEvents(first: 1) { edges { node { id } } } }`)
		require.NotEqual(t, "RATE_LIMITED", codeOf(r))
	}
}

// TestHoldLimitPerAddress: the crowd of fake accounts, each holding
// 8 seats from one address, racing: the address gets HOLD_LIMIT_PER_ADDRESS
// tickets and not one more. The cap is a Redis call that fails open past
// HOLDS_REDIS_TIMEOUT (the hold goes on, as with Redis down); under a
// loaded CI run Redis took longer than the 100 ms default once and ten
// holds went through, so this test, which is about the cap and not about
// its timeout, gives Redis seconds.
func TestHoldLimitPerAddress(t *testing.T) {
	t.Parallel()
	b := setupEnv(t, map[string]string{"HOLDS_REDIS_TIMEOUT": "5s"})
	ev := fixtures.SmallEvent(t, b.app.Pool, fixtures.EventOptions{Seats: 200})
	limit := b.app.Cfg.HoldLimitPerAddress
	require.Equal(t, 40, limit, "the contract's default")
	hold := `mutation($input: CreateHoldInput!) { createHold(input: $input) { id } }`
	var mu sync.Mutex
	var won []string
	var refused int
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			tok := "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["sub"] = fmt.Sprint("fake-", i) }))
			body, _ := json.Marshal(map[string]any{"query": hold, "variables": map[string]any{"input": map[string]any{
				"eventId": ev.ID, "idempotencyKey": "k", "seatIds": ev.Seats[i*8 : i*8+8]}}})
			req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", tok)
			resp, err := http.DefaultClient.Do(req)
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			var r gqlResponse
			assert.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
			mu.Lock()
			defer mu.Unlock()
			switch codeOf(r) {
			case "":
				won = append(won, tok)
			case "HOLD_LIMIT_EXCEEDED":
				refused++
				assert.EqualValues(t, limit, r.Errors[0].Extensions["limit"])
			default:
				t.Errorf("unexpected %+v", r.Errors)
			}
		})
	}
	wg.Wait()
	require.Len(t, won, limit/8)
	require.Equal(t, 10-limit/8, refused)
	require.Equal(t, limit, snapshotCounts(t, b.app.Pool)["held"], "exactly the cap is held")
	// A cancelled hold gives its tickets back to the address.
	var holdID string
	require.NoError(t, b.app.Pool.QueryRow(context.Background(), `SELECT id::text FROM holds WHERE status = 'ACTIVE' LIMIT 1`).Scan(&holdID))
	var owner string
	require.NoError(t, b.app.Pool.QueryRow(context.Background(), `SELECT owner FROM holds WHERE id = $1`, holdID).Scan(&owner))
	tok := "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["sub"] = owner }))
	r := b.graphql(t, tok, fmt.Sprintf(`mutation { cancelHold(id: %q) { status } }`, holdID))
	require.Empty(t, r.Errors)
	other := "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["sub"] = "late" }))
	body, _ := json.Marshal(map[string]any{"query": hold, "variables": map[string]any{"input": map[string]any{
		"eventId": ev.ID, "idempotencyKey": "late", "seatIds": ev.Seats[190:198]}}})
	req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", other)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var rr gqlResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rr))
	resp.Body.Close()
	require.Empty(t, rr.Errors)
}

func TestHoldLimitPerAddressOff(t *testing.T) {
	t.Parallel()
	b := setupEnv(t, map[string]string{"ABUSE_LIMITS": "off"})
	ev := fixtures.SmallEvent(t, b.app.Pool, fixtures.EventOptions{Seats: 100})
	for i := range 6 {
		tok := "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(testSecret), claims(func(c jwt.MapClaims) { c["sub"] = fmt.Sprint("load-", i) }))
		seats, _ := json.Marshal(ev.Seats[i*8 : i*8+8])
		r := b.graphql(t, tok, fmt.Sprintf(`mutation { createHold(input: {eventId: %q, idempotencyKey: "k", seatIds: %s}) { id } }`, ev.ID, seats))
		require.Empty(t, r.Errors)
	}
}

func TestRequestBytesPerAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body, _ := json.Marshal(map[string]string{"query": "# x\n{ " + strings.Repeat("__typename ", 20000) + "}"})
	var limited atomic.Int32
	b.duringAttack(t, func() {
		resp, err := http.Post(b.srv.URL+"/graphql", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		var r gqlResponse
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			require.Equal(t, "RATE_LIMITED", codeOf(r))
			require.NotEmpty(t, resp.Header.Get("Retry-After"))
			limited.Add(1)
		default:
			require.Equal(t, "GRAPHQL_PARSE_FAILED", codeOf(r))
		}
	})
	require.Greater(t, limited.Load(), int32(16), "most of 32 bodies of 220 KB from one address are refused")
	// The address is refused only while its budget is spent: it refills
	// at BytesPerAddressRate.
	require.Eventually(t, func() bool {
		return codeOf(b.graphql(t, "", "{ __typename }")) == ""
	}, 10*time.Second, 50*time.Millisecond)
}
