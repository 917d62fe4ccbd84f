package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/paysimtest"
	"github.com/ticketing/ticketing/internal/testdb"
)

const (
	jwtSecret     = "rest-test-secret-0123456789abcdef"
	webhookSecret = "whsec_rest_test"
)

// paysimURL is the sandbox provider, run by TestMain as a separate process
// (orders/internal/paysimd) with its state in its own database.
var paysimURL string

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	ps, stop, err := paysimtest.Start(webhookSecret)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	paysimURL = ps.URL
	return m.Run()
}

// event is a fixture event (fixtures.SmallEvent).
type event = fixtures.Event

// env is the real handler of `ticketing serve` (workers running) on a real
// port, over its own database, with three events: on sale, queue-protected
// and not on sale yet.
type env struct {
	t                    *testing.T
	a                    *app.App
	base                 string
	ev, queued, upcoming event
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dbURL := testdb.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	e := &env{t: t}
	// Before app.New, so the search index's first build has them.
	e.ev = createEvent(t, conn, "Gran Concierto", false, "1 hour")
	e.queued = createEvent(t, conn, "Queued Show", true, "1 hour")
	e.upcoming = createEvent(t, conn, "Later Show", false, "-1 day")
	conn.Close()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	vars := map[string]string{
		"DATABASE_URL":            dbURL,
		"REDIS_URL":               testdb.RedisURL(),
		"JWT_HS256_SECRET":        jwtSecret,
		"PAYMENTS_BASE_URL":       paysimURL,
		"PAYMENTS_WEBHOOK_SECRET": webhookSecret,
		"PUBLIC_BASE_URL":         "http://" + l.Addr().String(),
		"TICKET_SIGNING_KEY":      "ticket-key-for-rest-tests-0123456789",
		"SEARCH_DIR":              t.TempDir(),
		"SEATMAP_REDIS_PREFIX":    testdb.RedisPrefix(t), // the rate limits' keys too
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	require.NoError(t, err)
	e.a, err = app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(e.a.Close)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.a.RunWorkers(wctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewUnstartedServer(e.a.Handler())
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	e.base = srv.URL
	return e
}

// createEvent writes a fixture event whose sale started saleAgo ago.
func createEvent(t *testing.T, pool *pgxpool.Pool, name string, queued bool, saleAgo string) event {
	return fixtures.SmallEvent(t, pool, fixtures.EventOptions{Name: name, Queued: queued, SaleAgo: saleAgo})
}

// token mints a bearer token for a fresh user named after who.
func (e *env) token(who string) string {
	tok, err := auth.Mint(jwtSecret, "ticketing-dev", "ticketing", who+"-"+uuid.NewString()[:8], nil, time.Hour)
	require.NoError(e.t, err)
	return tok
}

// response is an answer read in full.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// into decodes the body into v.
func (r response) into(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), string(r.Body))
}

// apiError is the REST error body.
func (r response) apiError(t *testing.T) map[string]any {
	t.Helper()
	var b struct{ Error map[string]any }
	r.into(t, &b)
	require.NotNil(t, b.Error, string(r.Body))
	return b.Error
}

// requireError checks status, code, no-store and returns the error object.
func (r response) requireError(t *testing.T, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Body))
	e := r.apiError(t)
	require.Equal(t, code, e["code"], string(r.Body))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	return e
}

// do sends a request; body is JSON-encoded unless it is a string; hdr are
// header name/value pairs.
func (e *env) do(method, path, tok string, body any, hdr ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	require.NoError(e.t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return response{resp.StatusCode, resp.Header, b}
}

// graphql runs a GraphQL operation; it fails the test on errors.
func (e *env) graphql(tok, query string, vars map[string]any, out any) {
	e.t.Helper()
	r := e.do("POST", "/graphql", tok, map[string]any{"query": query, "variables": vars})
	var g struct {
		Data   json.RawMessage
		Errors []map[string]any
	}
	r.into(e.t, &g)
	require.Empty(e.t, g.Errors)
	require.NoError(e.t, json.Unmarshal(g.Data, out))
}

// expireHold moves a hold's expiry into the past.
func (e *env) expireHold(holdID string) { fixtures.ExpireHold(e.t, e.a.Pool, holdID) }

// pay settles a payment at paysim's hosted checkout as the buyer would.
func pay(t *testing.T, checkoutURL, outcome string) {
	t.Helper()
	resp, err := http.PostForm(checkoutURL, url.Values{"outcome": {outcome}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
