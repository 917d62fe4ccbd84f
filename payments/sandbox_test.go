package payments_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/payments"
)

func TestCreateReplayAndMismatch(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	ctx := context.Background()

	req := createReq(r, nil)
	req.ReturnURL = "http://shop.test/orders/1"
	p, err := s.SB.CreatePayment(ctx, req)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(p.ID, "pay_"), p.ID)
	require.Equal(t, payments.StatusPending, p.Status)
	require.Equal(t, int64(5000), p.Amount)
	require.Equal(t, "EUR", p.Currency)
	require.Equal(t, req.Reference, p.Reference)
	require.Equal(t, s.URL+"/checkout/"+p.ID, p.CheckoutURL)
	require.False(t, p.Replayed)
	require.WithinDuration(t, time.Now(), p.Created, time.Minute)

	again, err := s.SB.CreatePayment(ctx, req)
	require.NoError(t, err)
	require.Equal(t, p.ID, again.ID)
	require.True(t, again.Replayed)

	other := req
	other.Amount = 6000
	_, err = s.SB.CreatePayment(ctx, other)
	require.ErrorIs(t, err, payments.ErrIdempotencyKeyReused)
	require.ErrorIs(t, err, payments.ErrRejected)
	require.NotErrorIs(t, err, payments.ErrUnknownOutcome)
	var ae *payments.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusUnprocessableEntity, ae.StatusCode)

	got, err := s.SB.GetPayment(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, p.ID, got.ID)
	require.Equal(t, payments.StatusPending, got.Status)

	_, err = s.SB.GetPayment(ctx, "pay_nope")
	require.ErrorIs(t, err, payments.ErrNotFound)

	// Validation: definite rejections naming the parameter.
	for param, mutate := range map[string]func(*payments.CreateRequest){
		"amount":      func(c *payments.CreateRequest) { c.Amount = 0 },
		"currency":    func(c *payments.CreateRequest) { c.Currency = "EURO" },
		"webhook_url": func(c *payments.CreateRequest) { c.WebhookURL = "/relative" },
		"reference":   func(c *payments.CreateRequest) { c.Reference = "" },
		"simulate":    func(c *payments.CreateRequest) { c.Simulate = map[string]any{"no_such_fault": true} },
	} {
		c := createReq(r, nil)
		mutate(&c)
		_, err := s.SB.CreatePayment(ctx, c)
		require.ErrorIs(t, err, payments.ErrRejected, param)
		require.ErrorAs(t, err, &ae)
		require.Equal(t, http.StatusBadRequest, ae.StatusCode, param)
		require.Equal(t, param, ae.Param)
	}

	// No Idempotency-Key: 400.
	code, body := doJSON(t, "POST", s.URL+"/v1/payments",
		`{"amount":1,"currency":"EUR","reference":"x","webhook_url":"http://x.test/"}`, nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "idempotency_key_missing", body["error"].(map[string]any)["code"])
	_, err = s.SB.CreatePayment(ctx, payments.CreateRequest{Amount: 1, Currency: "EUR"})
	require.Error(t, err)
}

func TestConcurrentCreateSameKeyMakesOnePayment(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	req := createReq(r, nil)
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := s.SB.CreatePayment(context.Background(), req)
			if err == nil {
				ids[i] = p.ID
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.NotEmpty(t, id)
		require.Equal(t, ids[0], id)
	}
	var count int
	require.NoError(t, s.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM paysim.payments WHERE reference = $1`, req.Reference).Scan(&count))
	require.Equal(t, 1, count)
}

func TestCheckoutSucceedSendsSignedWebhook(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	ctx := context.Background()
	p, err := s.SB.CreatePayment(ctx, createReq(r, nil))
	require.NoError(t, err)

	// The hosted page.
	resp, err := http.Get(p.CheckoutURL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")

	code, body := checkout(t, p.CheckoutURL, "succeed")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "succeeded", body["status"])

	ns := r.waitFor(t, 1)
	n := ns[0]
	require.True(t, strings.HasPrefix(n.ID, "evt_"), n.ID)
	require.Equal(t, payments.EventPaymentSucceeded, n.Type)
	require.Equal(t, p.ID, n.Payment.ID)
	require.Equal(t, payments.StatusSucceeded, n.Payment.Status)
	require.Equal(t, int64(5000), n.Payment.Amount)

	// The raw request verifies on its own, and fails with another secret.
	d := r.deliveries()[0]
	require.True(t, strings.HasPrefix(d.Header.Get(payments.SignatureHeader), "t="))
	require.NoError(t, payments.VerifySignature(testSecret, d.Header.Get(payments.SignatureHeader), d.Body, time.Now(), payments.SignatureTolerance))
	require.ErrorIs(t, payments.VerifySignature("other", d.Header.Get(payments.SignatureHeader), d.Body, time.Now(), payments.SignatureTolerance), payments.ErrInvalidSignature)

	got, err := s.SB.GetPayment(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, payments.StatusSucceeded, got.Status)

	// Settling again changes nothing and says so.
	code, body = checkout(t, p.CheckoutURL, "decline")
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, "payment_not_pending", body["error"].(map[string]any)["code"])
	require.Equal(t, "succeeded", body["payment"].(map[string]any)["status"])
	require.Len(t, events(t, s.URL, p.ID), 1)
}

func TestCheckoutBrowserRedirect(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(u string) *http.Response {
		req, err := http.NewRequest("POST", u, strings.NewReader("outcome=succeed"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "text/html,application/xhtml+xml")
		resp, err := noFollow.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}

	req := createReq(r, nil)
	req.ReturnURL = "http://shop.test/orders/42?x=1"
	p, err := s.SB.CreatePayment(context.Background(), req)
	require.NoError(t, err)
	resp := post(p.CheckoutURL)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "http://shop.test/orders/42?payment_id="+p.ID+"&status=succeeded&x=1", resp.Header.Get("Location"))

	// No return_url at create: a return_url query parameter under
	// PUBLIC_BASE_URL is honoured, anything else falls back to it.
	p, err = s.SB.CreatePayment(context.Background(), createReq(r, nil))
	require.NoError(t, err)
	resp = post(p.CheckoutURL + "?return_url=http://evil.test/")
	require.Equal(t, "http://shop.test?payment_id="+p.ID+"&status=succeeded", resp.Header.Get("Location"))
	p, err = s.SB.CreatePayment(context.Background(), createReq(r, nil))
	require.NoError(t, err)
	resp = post(p.CheckoutURL + "?return_url=http://shop.test/back")
	require.Equal(t, "http://shop.test/back?payment_id="+p.ID+"&status=succeeded", resp.Header.Get("Location"))
}

func TestDeclineSendsPaymentFailed(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	p, err := s.SB.CreatePayment(context.Background(), createReq(r, nil))
	require.NoError(t, err)
	code, _ := checkout(t, p.CheckoutURL, "decline")
	require.Equal(t, http.StatusOK, code)
	n := r.waitFor(t, 1)[0]
	require.Equal(t, payments.EventPaymentFailed, n.Type)
	require.Equal(t, payments.StatusFailed, n.Payment.Status)
	require.Equal(t, "card_declined", n.Payment.FailureCode)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	ctx := context.Background()
	p, err := s.SB.CreatePayment(ctx, createReq(r, nil))
	require.NoError(t, err)
	c, err := s.SB.CancelPayment(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, payments.StatusCancelled, c.Status)
	n := r.waitFor(t, 1)[0]
	require.Equal(t, payments.EventPaymentCancelled, n.Type)
	require.Equal(t, p.ID, n.Payment.ID)

	// Not pending any more: 409, with the current state.
	c, err = s.SB.CancelPayment(ctx, p.ID)
	require.ErrorIs(t, err, payments.ErrNotPending)
	require.ErrorIs(t, err, payments.ErrRejected)
	require.Equal(t, payments.StatusCancelled, c.Status)
	code, _ := checkout(t, p.CheckoutURL, "succeed")
	require.Equal(t, http.StatusConflict, code)
	_, err = s.SB.CancelPayment(ctx, "pay_missing")
	require.ErrorIs(t, err, payments.ErrNotFound)
}

func TestRefund(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	ctx := context.Background()
	p, err := s.SB.CreatePayment(ctx, createReq(r, nil))
	require.NoError(t, err)

	// A pending payment cannot be refunded (cancel it instead).
	key := newKey()
	_, err = s.SB.Refund(ctx, p.ID, key)
	require.ErrorIs(t, err, payments.ErrNotRefundable)

	checkout(t, p.CheckoutURL, "succeed")
	rf, err := s.SB.Refund(ctx, p.ID, key)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(rf.ID, "re_"), rf.ID)
	require.Equal(t, p.ID, rf.PaymentID)
	require.Equal(t, int64(5000), rf.Amount)
	require.Equal(t, payments.StatusRefunded, rf.Payment.Status)
	require.Equal(t, rf.ID, rf.Payment.RefundID)

	again, err := s.SB.Refund(ctx, p.ID, key)
	require.NoError(t, err)
	require.Equal(t, rf.ID, again.ID)
	require.True(t, again.Replayed)

	_, err = s.SB.Refund(ctx, p.ID, newKey())
	require.ErrorIs(t, err, payments.ErrNotRefundable)
	_, err = s.SB.Refund(ctx, "pay_other", key)
	require.ErrorIs(t, err, payments.ErrIdempotencyKeyReused)

	ns := r.waitFor(t, 2)
	require.Equal(t, payments.EventPaymentSucceeded, ns[0].Type)
	require.Equal(t, payments.EventRefundSucceeded, ns[1].Type)
	require.Equal(t, payments.StatusRefunded, ns[1].Payment.Status)
	got, err := s.SB.GetPayment(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, payments.StatusRefunded, got.Status)
}

func TestWebhookRetriedWithBackoffUntil2xx(t *testing.T) {
	t.Parallel()
	opt := testOptions()
	opt.BackoffBase = 40 * time.Millisecond
	opt.BackoffMax = time.Second
	s := startSim(t, opt)
	r := newReceiver(t)
	r.fail.Store(3)
	p, err := s.SB.CreatePayment(context.Background(), createReq(r, map[string]any{"auto_outcome": "succeed"}))
	require.NoError(t, err)

	n := r.waitFor(t, 1)[0]
	require.Equal(t, payments.EventPaymentSucceeded, n.Type)
	ds := r.deliveries()
	require.Len(t, ds, 4)
	// Attempt k+1 waits at least half of base*2^(k-1) (the jitter-free part).
	for k := 1; k < len(ds); k++ {
		gap := ds[k].At.Sub(ds[k-1].At)
		require.GreaterOrEqual(t, gap, opt.BackoffBase<<(k-1)/2, "gap %d", k)
	}
	require.Eventually(t, func() bool {
		ev := events(t, s.URL, p.ID)
		return len(ev) == 1 && ev[0].Delivered == 1 && ev[0].Attempts == 4
	}, 5*time.Second, 10*time.Millisecond)
}

func TestDuplicateWebhooks(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	_, err := s.SB.CreatePayment(context.Background(),
		createReq(r, map[string]any{"duplicate_webhooks": 3, "auto_outcome": "succeed"}))
	require.NoError(t, err)
	ns := r.waitFor(t, 3)
	for _, n := range ns {
		require.Equal(t, ns[0].ID, n.ID)
		require.Equal(t, payments.EventPaymentSucceeded, n.Type)
	}
}

func TestReorderWebhooks(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	ctx := context.Background()
	p, err := s.SB.CreatePayment(ctx, createReq(r, map[string]any{"reorder_webhooks": true, "reorder_window_ms": 1500}))
	require.NoError(t, err)
	checkout(t, p.CheckoutURL, "succeed")
	_, err = s.SB.Refund(ctx, p.ID, newKey())
	require.NoError(t, err)
	ns := r.waitFor(t, 2)
	require.Equal(t, payments.EventRefundSucceeded, ns[0].Type)
	require.Equal(t, payments.EventPaymentSucceeded, ns[1].Type)
}

func TestDropWebhooks(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	ctx := context.Background()
	p, err := s.SB.CreatePayment(ctx, createReq(r, map[string]any{"drop_webhooks": true, "auto_outcome": "succeed", "auto_settle_ms": 50}))
	require.NoError(t, err)
	require.Equal(t, payments.StatusPending, p.Status)
	require.Eventually(t, func() bool {
		got, err := s.SB.GetPayment(ctx, p.ID)
		return err == nil && got.Status == payments.StatusSucceeded
	}, 10*time.Second, 10*time.Millisecond)
	ev := events(t, s.URL, p.ID)
	require.Len(t, ev, 1)
	require.Equal(t, "payment.succeeded", ev[0].Type)
	require.Zero(t, ev[0].Copies, "recorded, never scheduled for delivery")
	require.Zero(t, r.attempts.Load())
}

func TestGlobalFaults(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	ctx := context.Background()
	code, body := doJSON(t, "POST", s.URL+"/v1/faults", `{"auto_outcome":"decline","duplicate_webhooks":true}`, nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "decline", body["auto_outcome"])
	code, _ = doJSON(t, "POST", s.URL+"/v1/faults", `{"bogus":1}`, nil)
	require.Equal(t, http.StatusBadRequest, code)

	// The payment's own simulate wins over the global faults.
	_, err := s.SB.CreatePayment(ctx, createReq(r, map[string]any{"duplicate_webhooks": false}))
	require.NoError(t, err)
	n := r.waitFor(t, 1)[0]
	require.Equal(t, payments.EventPaymentFailed, n.Type)

	code, body = doJSON(t, "POST", s.URL+"/v1/faults", `{"auto_outcome":null}`, nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"duplicate_webhooks": float64(2)}, body)
	code, body = doJSON(t, "DELETE", s.URL+"/v1/faults", ``, nil)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, body)
	code, body = doJSON(t, "GET", s.URL+"/v1/faults", ``, nil)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, body)
}

func TestCreateTimeoutThenRetryReturnsSamePayment(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	req := createReq(r, map[string]any{"create_timeout": true})

	impatient := payments.NewSandbox(s.URL, testSecret, &http.Client{Timeout: 300 * time.Millisecond})
	_, err := impatient.CreatePayment(context.Background(), req)
	require.ErrorIs(t, err, payments.ErrUnknownOutcome)
	require.NotErrorIs(t, err, payments.ErrRejected)

	// Also with a context deadline instead of a client timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	other := createReq(r, map[string]any{"create_timeout": true})
	_, err = s.SB.CreatePayment(ctx, other)
	require.ErrorIs(t, err, payments.ErrUnknownOutcome)
	require.True(t, errors.Is(err, context.DeadlineExceeded))

	p, err := s.SB.CreatePayment(context.Background(), req)
	require.NoError(t, err)
	require.True(t, p.Replayed)
	require.Equal(t, payments.StatusPending, p.Status)
	var count int
	require.NoError(t, s.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM paysim.payments WHERE reference = $1`, req.Reference).Scan(&count))
	require.Equal(t, 1, count, "no second charge")
}

func TestUnreachableProviderIsUnknownOutcome(t *testing.T) {
	t.Parallel()
	sb := payments.NewSandbox("http://127.0.0.1:1", testSecret, nil)
	_, err := sb.CreatePayment(context.Background(), payments.CreateRequest{Amount: 1, Currency: "EUR",
		Reference: "x", WebhookURL: "http://x.test/", IdempotencyKey: "k"})
	require.ErrorIs(t, err, payments.ErrUnknownOutcome)
	_, err = sb.GetPayment(context.Background(), "pay_x")
	require.ErrorIs(t, err, payments.ErrUnavailable)
}

func TestTwoInstancesDeliverEachNotificationOnce(t *testing.T) {
	t.Parallel()
	a := startSim(t, testOptions())
	b := startInstance(t, a.Pool, testOptions())
	r := newReceiver(t)
	const n = 10
	for i := range n {
		sb := a.SB
		if i%2 == 1 {
			sb = b.SB
		}
		_, err := sb.CreatePayment(context.Background(), createReq(r, map[string]any{"auto_outcome": "succeed"}))
		require.NoError(t, err)
	}
	ns := r.waitFor(t, n)
	seen := map[string]bool{}
	for _, x := range ns {
		require.False(t, seen[x.ID], "delivered twice: %s", x.ID)
		seen[x.ID] = true
	}
	require.Eventually(t, func() bool {
		var pending int
		_ = a.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM paysim.deliveries WHERE delivered_at IS NULL`).Scan(&pending)
		return pending == 0
	}, 5*time.Second, 10*time.Millisecond)
	require.Len(t, r.notifications(), n)
}

func TestWebhookDelay(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	r := newReceiver(t)
	p, err := s.SB.CreatePayment(context.Background(), createReq(r, map[string]any{"webhook_delay_ms": 400}))
	require.NoError(t, err)
	checkout(t, p.CheckoutURL, "succeed")
	settled := time.Now()
	r.waitFor(t, 1)
	require.GreaterOrEqual(t, r.deliveries()[0].At.Sub(settled), 300*time.Millisecond)
}

// A notification the merchant is slow to answer holds back no other
// payment's: while one delivery hangs, the notifications of 30 other
// payments (more than one claim of the worker) are all delivered.
func TestSlowWebhookHoldsBackNoOther(t *testing.T) {
	t.Parallel()
	s := startSim(t, testOptions())
	release := make(chan struct{})
	var slowHits atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		slowHits.Add(1)
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	stuck := createReq(&receiver{URL: slow.URL}, map[string]any{"auto_outcome": "succeed"})
	_, err := s.SB.CreatePayment(context.Background(), stuck)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return slowHits.Load() > 0 }, 10*time.Second, 10*time.Millisecond, "the slow delivery started")
	r := newReceiver(t)
	const n = 30
	for range n {
		_, err := s.SB.CreatePayment(context.Background(), createReq(r, map[string]any{"auto_outcome": "succeed"}))
		require.NoError(t, err)
	}
	r.waitFor(t, n)
	require.Equal(t, int32(1), slowHits.Load(), "the slow one is still in its first attempt")
}
