package payments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/paysim"
)

// sim is an in-process paysim on its own test database.
type sim struct {
	URL  string
	Pool *pgxpool.Pool
	SB   *payments.Sandbox
}

// testOptions are short timings for tests.
func testOptions() paysim.Options {
	return paysim.Options{
		WebhookSecret: testSecret,
		PublicBaseURL: "http://shop.test",
		PollInterval:  20 * time.Millisecond,
		BackoffBase:   20 * time.Millisecond,
		BackoffMax:    200 * time.Millisecond,
		ReorderWindow: time.Second,
	}
}

func newPool(t *testing.T, dbURL string) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.MaxConns = 10
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// startSim migrates a fresh database and serves paysim with its worker.
func startSim(t *testing.T, opt paysim.Options) *sim {
	t.Helper()
	pool := newPool(t, testdb.NewDatabase(t))
	require.NoError(t, paysim.Migrate(context.Background(), pool))
	return startInstance(t, pool, opt)
}

// startInstance serves one more paysim instance on pool.
func startInstance(t *testing.T, pool *pgxpool.Pool, opt paysim.Options) *sim {
	t.Helper()
	s := paysim.New(pool, opt)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &sim{URL: srv.URL, Pool: pool, SB: payments.NewSandbox(srv.URL, testSecret, nil)}
}

// delivery is one webhook request the receiver got.
type delivery struct {
	N      payments.Notification
	At     time.Time
	Header http.Header
	Body   []byte
}

// receiver is the merchant's webhook endpoint: it verifies every request
// with VerifyWebhook and records the verified ones.
type receiver struct {
	URL      string
	fail     atomic.Int32 // answer 500 to this many requests first
	attempts atomic.Int32
	mu       sync.Mutex
	got      []delivery
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	verifier := payments.NewSandbox("http://unused.invalid", testSecret, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		at := time.Now()
		r.attempts.Add(1)
		if r.fail.Add(-1) >= 0 {
			r.mu.Lock()
			r.got = append(r.got, delivery{At: at}) // a failed attempt: no notification
			r.mu.Unlock()
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		n, err := verifier.VerifyWebhook(req.Header, body, time.Now())
		if err != nil {
			t.Errorf("receiver: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, delivery{N: n, At: at, Header: req.Header.Clone(), Body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/webhooks/payments"
	return r
}

// notifications returns the verified notifications in arrival order.
func (r *receiver) notifications() []payments.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []payments.Notification
	for _, d := range r.got {
		if d.N.ID != "" {
			out = append(out, d.N)
		}
	}
	return out
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitFor waits until the receiver has at least n notifications.
func (r *receiver) waitFor(t *testing.T, n int) []payments.Notification {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.notifications()) >= n }, 10*time.Second, 10*time.Millisecond,
		"want %d notifications", n)
	return r.notifications()
}

var keySeq atomic.Int64

func newKey() string { return fmt.Sprintf("key-%d-%d", time.Now().UnixNano(), keySeq.Add(1)) }

func createReq(r *receiver, simulate map[string]any) payments.CreateRequest {
	return payments.CreateRequest{Amount: 5000, Currency: "EUR", Reference: "ord_" + newKey(),
		WebhookURL: r.URL, IdempotencyKey: newKey(), Simulate: simulate}
}

// checkout posts the buyer's choice to the hosted page as an API client.
func checkout(t *testing.T, checkoutURL, outcome string) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(checkoutURL, url.Values{"outcome": {outcome}})
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

// eventInfo is paysim's GET /v1/payments/{id}/events item.
type eventInfo struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Copies    int    `json:"copies"`
	Delivered int    `json:"delivered"`
	Attempts  int    `json:"attempts"`
}

func events(t *testing.T, base, paymentID string) []eventInfo {
	t.Helper()
	resp, err := http.Get(base + "/v1/payments/" + paymentID + "/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct{ Data []eventInfo }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Data
}

func doJSON(t *testing.T, method, u, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
