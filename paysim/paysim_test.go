package paysim

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
)

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testdb.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func TestMigrateConcurrentAndRepeated(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	productVersions := func() (n, top int64) {
		require.NoError(t, pool.QueryRow(context.Background(),
			`SELECT count(*), coalesce(max(version_id), 0) FROM public.goose_db_version`).Scan(&n, &top))
		return n, top
	}
	before, beforeTop := productVersions()
	require.Positive(t, beforeTop, "the product's migrations are applied")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = Migrate(context.Background(), pool) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, Migrate(context.Background(), pool))
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM paysim.goose_db_version WHERE version_id > 0`).Scan(&n))
	require.Equal(t, 2, n)
	// The product's own version table is untouched by paysim.
	after, afterTop := productVersions()
	require.Equal(t, before, after)
	require.Equal(t, beforeTop, afterTop)
}

func TestCheckoutPageAndErrors(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	require.NoError(t, Migrate(context.Background(), pool))
	srv := httptest.NewServer(New(pool, Options{WebhookSecret: "s"}).Handler())
	defer srv.Close()

	post := func(path, key, body string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/v1/payments", "k1", `{"amount":12345,"currency":"eur","reference":"ord<1>","webhook_url":"http://127.0.0.1:1/wh"}`)
	require.Equal(t, http.StatusOK, code, body)
	id := body[strings.Index(body, "pay_") : strings.Index(body, "pay_")+28]

	resp, err := http.Get(srv.URL + "/checkout/" + id)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(page), "123.45 EUR")
	require.Contains(t, string(page), "ord&lt;1&gt;")
	require.Contains(t, string(page), `value="succeed"`)
	require.Contains(t, string(page), `value="decline"`)

	resp, err = http.Get(srv.URL + "/checkout/pay_missing")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	code, _ = post("/checkout/"+id, "", "outcome=maybe")
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = post("/v1/refunds", "", `{"payment_id":"`+id+`"}`)
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = post("/v1/payments", "k2", `{"amount":1,"currency":"EUR","reference":"r","webhook_url":"http://x.test/","extra":1}`)
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = post("/v1/payments", "k1", `{"amount":12345,"currency":"EUR","reference":"ord<1>","webhook_url":"http://127.0.0.1:1/wh"}`)
	require.Equal(t, http.StatusOK, code, "currency is normalised before comparing bodies")
	code, _ = post("/v1/payments", "k1", `{"amount":12345,"currency":"EUR","reference":"ord<1>","webhook_url":"http://127.0.0.1:1/wh","simulate":{"decline":true}}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)

	resp, err = http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The address dev.sh prints: the latest payments, each linking to its checkout page.
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body = get("/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `href="`+srv.URL+`/checkout/`+id+`"`)
	require.Contains(t, body, "123.45 EUR")
	code, _ = get("/nothing")
	require.Equal(t, http.StatusNotFound, code)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `ticketing_paysim_payments{status="pending"} 1`)
	require.Contains(t, body, `ticketing_paysim_payments{status="succeeded"} 0`)
	require.Contains(t, body, `ticketing_paysim_webhook_deliveries_pending 0`, "a create notifies nothing")
	require.Contains(t, body, `ticketing_paysim_http_requests_total{code="200",route="GET /healthz"} 1`)
	require.Contains(t, body, `ticketing_paysim_scrape_error 0`)
}

func TestParseFaults(t *testing.T) {
	t.Parallel()
	f, err := parseFaults([]byte(`{"duplicate_webhooks":true,"webhook_delay_ms":5}`))
	require.NoError(t, err)
	require.Equal(t, Count(2), *f.DuplicateWebhooks)
	f, err = parseFaults([]byte(`{"duplicate_webhooks":20}`))
	require.NoError(t, err)
	require.Equal(t, Count(20), *f.DuplicateWebhooks)
	for _, bad := range []string{`{"duplicate_webhooks":"x"}`, `{"auto_outcome":"maybe"}`, `{"fail_rate":2}`, `{"unknown":1}`, `{"webhook_delay_ms":-1}`} {
		_, err := parseFaults([]byte(bad))
		require.Error(t, err, bad)
	}
	g := Faults{DropWebhooks: ptr(true), Decline: ptr(true)}
	m := g.over(Faults{DropWebhooks: ptr(false)})
	require.False(t, *m.DropWebhooks)
	require.True(t, *m.Decline)
}

func ptr[T any](v T) *T { return &v }

func TestBackoff(t *testing.T) {
	t.Parallel()
	s := New(nil, Options{BackoffBase: time.Second, BackoffMax: time.Minute})
	for n := 1; n <= 100; n++ {
		d := s.backoff(n)
		want := min(time.Second<<min(n-1, 20), time.Minute)
		require.GreaterOrEqual(t, d, want/2, n)
		require.LessOrEqual(t, d, want, n)
	}
}
