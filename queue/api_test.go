package queue_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

const (
	secret   = "queue-api-test-secret-0123456789"
	issuer   = "ticketing-test"
	audience = "ticketing"
)

type api struct {
	t   *testing.T
	app *app.App
	srv *httptest.Server
}

// newAPI builds the real App (own database, queue keys under a test prefix)
// behind httptest.NewServer, with one queue-protected event on sale and one
// without a queue.
func newAPI(t *testing.T) (a *api, queued, plain string) {
	env := map[string]string{
		"DATABASE_URL":         testdb.NewDatabase(t),
		"REDIS_URL":            testdb.RedisURL(),
		"JWT_ISSUER":           issuer,
		"JWT_AUDIENCE":         audience,
		"JWT_HS256_SECRET":     secret,
		"QUEUE_KEY_PREFIX":     testdb.RedisPrefix(t),
		"QUEUE_JOIN_RATE_USER": "1", // burst 5
		"QUEUE_ADMIT_RATE":     "1000",
		"SEARCH_DIR":           t.TempDir(),
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	ctx := context.Background()
	ap, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(ap.Close)
	srv := httptest.NewServer(ap.Handler())
	t.Cleanup(srv.Close)

	venue := uuid.NewString()
	require.NoError(t, ap.Store.VenueCreate(ctx, store.Venue{ID: venue, Name: "Hall " + venue[:6], Address: "1 Main St", City: "Madrid", Country: "ES"}))
	now := time.Now()
	mk := func(q bool) string {
		id := uuid.NewString()
		require.NoError(t, ap.Store.EventCreate(ctx, store.Event{
			ID: id, VenueID: venue, Name: "Show " + id[:6], Category: "concert",
			StartsAt: now.Add(30 * 24 * time.Hour), SaleStartsAt: now.Add(-time.Hour),
			MaxTicketsPerUser: 4, HoldDurationSeconds: 600, QueueRequired: q, Version: 1,
		}))
		return id
	}
	return &api{t: t, app: ap, srv: srv}, mk(true), mk(false)
}

func (a *api) token(sub string) string {
	tok, err := auth.Mint(secret, issuer, audience, sub, nil, time.Hour)
	require.NoError(a.t, err)
	return tok
}

type gqlResp struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (r gqlResp) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

func (a *api) do(user, query string, vars map[string]any) gqlResp {
	a.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", a.srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+a.token(user))
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	var out gqlResp
	require.NoError(a.t, json.NewDecoder(res.Body).Decode(&out))
	return out
}

type ticket struct {
	Status               string
	Position             *int
	EstimatedWaitSeconds *int
	AdmissionToken       *string
	AdmissionExpiresAt   *time.Time
}

const ticketFields = `eventId status position estimatedWaitSeconds admissionToken admissionExpiresAt`

func (a *api) join(user, event string) (ticket, gqlResp) {
	r := a.do(user, `mutation($e: ID!) { joinQueue(eventId: $e) { `+ticketFields+` } }`, map[string]any{"e": event})
	var t ticket
	if raw := r.Data["joinQueue"]; len(raw) > 0 {
		require.NoError(a.t, json.Unmarshal(raw, &t))
	}
	return t, r
}

func (a *api) ticket(user, event string) *ticket {
	r := a.do(user, `query($e: ID!) { queueTicket(eventId: $e) { `+ticketFields+` } }`, map[string]any{"e": event})
	require.Empty(a.t, r.Errors)
	var t *ticket
	require.NoError(a.t, json.Unmarshal(r.Data["queueTicket"], &t))
	return t
}

func (a *api) holdCode(user, event, token string) string {
	in := map[string]any{"eventId": event, "seatIds": []string{uuid.NewString()}, "idempotencyKey": uuid.NewString()}
	if token != "" {
		in["admissionToken"] = token
	}
	r := a.do(user, `mutation($in: CreateHoldInput!) { createHold(input: $in) { id } }`, map[string]any{"in": in})
	return r.code()
}

func TestQueueThroughTheAPI(t *testing.T) {
	t.Parallel()
	a, event, plain := newAPI(t)
	ctx := context.Background()

	alice, r := a.join("alice", event)
	require.Empty(t, r.Errors)
	require.Equal(t, "WAITING", alice.Status)
	require.Equal(t, 1, *alice.Position)
	bob, _ := a.join("bob", event)
	require.Equal(t, 2, *bob.Position)
	again, _ := a.join("alice", event)
	require.Equal(t, 1, *again.Position, "rejoining keeps the place")
	require.Nil(t, a.ticket("nobody", event))

	_, r = a.join("", event)
	require.Equal(t, "UNAUTHENTICATED", r.code())
	_, r = a.join("alice", plain)
	require.Equal(t, "BAD_USER_INPUT", r.code())
	for range 6 {
		_, r = a.join("carol", event)
	}
	require.Equal(t, "RATE_LIMITED", r.code(), "burst of 5, then refused")
	require.NotNil(t, r.Errors[0].Extensions["retryAfterSeconds"])

	// Without an admission, a queue-protected hold is refused.
	require.Equal(t, "QUEUE_ADMISSION_REQUIRED", a.holdCode("alice", event, ""))
	require.Equal(t, "QUEUE_ADMISSION_REQUIRED", a.holdCode("alice", event, "not-a-token"))

	// Bob watches his place over SSE while Alice is admitted (window: default).
	sub := a.subscribe("bob", event)
	first := sub.next(t)
	require.Equal(t, "WAITING", first.Status)
	require.Equal(t, 2, *first.Position)

	got, err := a.app.Queue.AdmitEvent(ctx, event)
	require.NoError(t, err)
	require.Equal(t, []string{"alice", "bob", "carol"}, got)
	adm := a.ticket("alice", event)
	require.Equal(t, "ADMITTED", adm.Status)
	require.NotEmpty(t, *adm.AdmissionToken)
	require.True(t, adm.AdmissionExpiresAt.After(time.Now()))
	update := sub.next(t)
	require.Equal(t, "ADMITTED", update.Status)
	require.NotEqual(t, *adm.AdmissionToken, *update.AdmissionToken, "bound to the user")

	require.Equal(t, "QUEUE_ADMISSION_REQUIRED", a.holdCode("alice", event, *update.AdmissionToken), "Bob's token")
	require.Equal(t, "QUEUE_ADMISSION_REQUIRED", a.holdCode("alice", event, a.token("alice")), "a user JWT is no permit")
	code := a.holdCode("alice", event, *adm.AdmissionToken)
	require.NotEqual(t, "QUEUE_ADMISSION_REQUIRED", code, "admitted: the hold goes on to the seats (code %s)", code)

	r = a.do("alice", `mutation($e: ID!) { leaveQueue(eventId: $e) }`, map[string]any{"e": event})
	require.Empty(t, r.Errors)
	require.JSONEq(t, "true", string(r.Data["leaveQueue"]))
	require.Nil(t, a.ticket("alice", event))

	// Metrics are exposed.
	res, err := http.Get(a.srv.URL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, m := range []string{"ticketing_queue_length", "ticketing_queue_admissions_total", "ticketing_queue_wait_seconds", "ticketing_queue_active_admitted"} {
		require.Contains(t, string(body), m)
	}
}

type sseSub struct {
	res *http.Response
	sc  *bufio.Scanner
}

func (a *api) subscribe(user, event string) *sseSub {
	body, _ := json.Marshal(map[string]any{
		"query":     `subscription($e: ID!) { queueUpdates(eventId: $e) { ` + ticketFields + ` } }`,
		"variables": map[string]any{"e": event},
	})
	ctx, cancel := context.WithCancel(context.Background())
	a.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", a.srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+a.token(user))
	res, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	a.t.Cleanup(func() { res.Body.Close() })
	return &sseSub{res: res, sc: bufio.NewScanner(res.Body)}
}

func (s *sseSub) next(t *testing.T) ticket {
	t.Helper()
	done := make(chan ticket, 1)
	go func() {
		for s.sc.Scan() {
			line := s.sc.Text()
			if !strings.HasPrefix(line, "data:") {
				continue
			}
			var r struct {
				Data struct{ QueueUpdates ticket }
			}
			if json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(line, "data:"))), &r) == nil && r.Data.QueueUpdates.Status != "" {
				done <- r.Data.QueueUpdates
				return
			}
		}
		close(done)
	}()
	select {
	case tk, ok := <-done:
		require.True(t, ok, "stream ended")
		return tk
	case <-time.After(15 * time.Second):
		t.Fatal("no queue update")
		return ticket{}
	}
}

// ended waits for the stream to end.
func (s *sseSub) ended(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		for s.sc.Scan() {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not end")
	}
}

// cancelEvent ends the event's queue: a waiting and an admitted buyer are
// told (a last EXPIRED on queueUpdates, then the stream ends), nobody has a
// place or a permit any more (a hold with one given before is refused by
// the trigger on holds: TestCancelEventEndsHoldsOrdersAndRefunds), a join
// is refused with SALE_NOT_OPEN, and the change goes to the search
// projection through the outbox (topic catalog).
func TestCancelledEventEndsItsQueue(t *testing.T) {
	t.Parallel()
	a, event, _ := newAPI(t)
	ctx := context.Background()
	_, r := a.join("alice", event)
	require.Empty(t, r.Errors)
	got, err := a.app.Queue.AdmitEvent(ctx, event)
	require.NoError(t, err)
	require.Equal(t, []string{"alice"}, got)
	adm := a.ticket("alice", event)
	require.Equal(t, "ADMITTED", adm.Status)
	a.join("bob", event)
	admitted, waiting := a.subscribe("alice", event), a.subscribe("bob", event)
	require.Equal(t, "ADMITTED", admitted.next(t).Status)
	require.Equal(t, "WAITING", waiting.next(t).Status)

	tok, err := auth.Mint(secret, issuer, audience, "root", []string{"admin"}, time.Hour)
	require.NoError(t, err)
	body, _ := json.Marshal(map[string]any{"query": `mutation($e: ID!) { cancelEvent(id: $e, reason: "storm") { cancelledAt saleStatus } }`,
		"variables": map[string]any{"e": event}})
	req, _ := http.NewRequest("POST", a.srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var out gqlResp
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	res.Body.Close()
	require.Empty(t, out.Errors)
	require.Equal(t, "ENDED", jsonField(t, out.Data["cancelEvent"], "saleStatus"))

	for _, s := range []*sseSub{admitted, waiting} {
		last := s.next(t)
		require.Equal(t, "EXPIRED", last.Status)
		require.Nil(t, last.AdmissionToken)
		require.Nil(t, last.Position)
		s.ended(t)
	}
	require.Nil(t, a.ticket("alice", event))
	require.Nil(t, a.ticket("bob", event))
	_, r = a.join("carol", event)
	require.Equal(t, "SALE_NOT_OPEN", r.code())
	var n int
	require.NoError(t, a.app.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox o JOIN events e ON e.id = o.event_id
		WHERE o.event_id = $1 AND o.topic = 'catalog' AND (o.payload->>'version')::bigint = e.version`, event).Scan(&n))
	require.Equal(t, 1, n, "the cancellation reaches the search projection through the outbox")
}

func jsonField(t *testing.T, raw json.RawMessage, k string) any {
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[k]
}
