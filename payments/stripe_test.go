package payments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/ticketing/ticketing/payments"
)

// fakeStripe answers like Stripe's API for the calls the adapter makes
// (Stripe-format JSON fixtures), without network.
type fakeStripe struct {
	mu      sync.Mutex
	byKey   map[string]string // idempotency key -> intent id
	status  map[string]string
	refunds int
	fail    bool
	inUse   bool // creates answer 409 idempotency_key_in_use
}

func (f *fakeStripe) intent(id string, amount int64) map[string]any {
	return map[string]any{"id": id, "object": "payment_intent", "amount": amount, "currency": "eur",
		"status": f.status[id], "client_secret": id + "_secret_x", "created": 1700000000,
		"metadata":      map[string]string{"reference": "att-" + id},
		"latest_charge": map[string]any{"id": "ch_" + id, "object": "charge", "refunded": f.status[id] == "refunded_"}}
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	write := func(code int, v any) { w.WriteHeader(code); _ = json.NewEncoder(w).Encode(v) }
	stripeErr := func(code int, typ, c string) {
		write(code, map[string]any{"error": map[string]any{"type": typ, "code": c, "message": c}})
	}
	switch {
	case f.fail:
		stripeErr(500, "api_error", "")
	case f.inUse && r.Method == "POST" && r.URL.Path == "/v1/payment_intents":
		stripeErr(409, "idempotency_error", "idempotency_key_in_use")
	case r.Method == "POST" && r.URL.Path == "/v1/payment_intents":
		key := r.Header.Get("Idempotency-Key")
		id, ok := f.byKey[key]
		if !ok {
			id = fmt.Sprintf("pi_%d", len(f.byKey)+1)
			f.byKey[key] = id
			f.status[id] = "requires_payment_method"
		}
		write(200, f.intent(id, 5000))
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
		if _, ok := f.status[id]; !ok {
			stripeErr(404, "invalid_request_error", "resource_missing")
			return
		}
		write(200, f.intent(id, 5000))
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/cancel"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/cancel")
		if f.status[id] != "requires_payment_method" {
			stripeErr(400, "invalid_request_error", "payment_intent_unexpected_state")
			return
		}
		f.status[id] = "canceled"
		write(200, f.intent(id, 5000))
	case r.Method == "POST" && r.URL.Path == "/v1/refunds":
		id := r.PostForm.Get("payment_intent")
		if f.status[id] != "succeeded" {
			stripeErr(400, "invalid_request_error", "charge_already_refunded")
			return
		}
		f.refunds++
		write(200, map[string]any{"id": "re_1", "object": "refund", "amount": 5000, "currency": "eur", "status": "succeeded", "payment_intent": id})
	default:
		stripeErr(404, "invalid_request_error", "resource_missing")
	}
}

func TestStripeAdapterAgainstFixtures(t *testing.T) {
	t.Parallel()
	f := &fakeStripe{byKey: map[string]string{}, status: map[string]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	s := payments.NewStripe("sk_test_x", "whsec_stripe", payments.StripeBackends(srv.URL, srv.Client()))
	ctx := context.Background()

	req := payments.CreateRequest{Amount: 5000, Currency: "EUR", Reference: "att-1", ReturnURL: "http://shop.test/orders/o1", IdempotencyKey: "pay_1"}
	p, err := s.CreatePayment(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "pi_1", p.ID)
	require.Equal(t, payments.StatusPending, p.Status)
	require.Contains(t, p.CheckoutURL, "payment_intent_client_secret=pi_1_secret_x")
	again, err := s.CreatePayment(ctx, req)
	require.NoError(t, err)
	require.Equal(t, p.ID, again.ID, "same idempotency key, same intent")

	f.status["pi_1"] = "succeeded"
	got, err := s.GetPayment(ctx, "pi_1")
	require.NoError(t, err)
	require.Equal(t, payments.StatusSucceeded, got.Status)
	cur, err := s.CancelPayment(ctx, "pi_1")
	require.ErrorIs(t, err, payments.ErrNotPending)
	require.Equal(t, payments.StatusSucceeded, cur.Status)
	r, err := s.Refund(ctx, "pi_1", "refund_1")
	require.NoError(t, err)
	require.Equal(t, "re_1", r.ID)
	f.status["pi_1"] = "refunded_"
	_, err = s.Refund(ctx, "pi_1", "refund_1")
	require.ErrorIs(t, err, payments.ErrNotRefundable)
	_, err = s.GetPayment(ctx, "pi_404")
	require.ErrorIs(t, err, payments.ErrNotFound)

	// 409 idempotency_key_in_use: the first create with this key may still
	// succeed: an unknown outcome, never a refusal.
	f.inUse = true
	_, err = s.CreatePayment(ctx, req)
	require.ErrorIs(t, err, payments.ErrUnknownOutcome)
	require.NotErrorIs(t, err, payments.ErrRejected)
	f.inUse = false

	f.fail = true
	_, err = s.CreatePayment(ctx, payments.CreateRequest{Amount: 1, Currency: "EUR", IdempotencyKey: "k9"})
	require.ErrorIs(t, err, payments.ErrUnknownOutcome)
	_, err = s.GetPayment(ctx, "pi_1")
	require.ErrorIs(t, err, payments.ErrUnavailable)
}

func TestStripeWebhookVerification(t *testing.T) {
	t.Parallel()
	s := payments.NewStripe("sk_test_x", "whsec_stripe", payments.StripeBackends("http://127.0.0.1:1", nil))
	event := func(typ string, obj map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "type": typ, "created": time.Now().Unix(),
			"api_version": "2025-01-01", "data": map[string]any{"object": obj}})
		return b
	}
	pi := map[string]any{"id": "pi_7", "object": "payment_intent", "amount": 5000, "currency": "eur", "status": "succeeded",
		"metadata": map[string]string{"reference": "att-7"}}
	body := event("payment_intent.succeeded", pi)
	sign := func(body []byte, secret string, at time.Time) http.Header {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
		h := http.Header{}
		h.Set("Stripe-Signature", sp.Header)
		return h
	}
	now := time.Now()
	n, err := s.VerifyWebhook(sign(body, "whsec_stripe", now), body, now)
	require.NoError(t, err)
	require.Equal(t, payments.EventPaymentSucceeded, n.Type)
	require.Equal(t, "pi_7", n.Payment.ID)
	require.Equal(t, "att-7", n.Payment.Reference)
	require.Equal(t, payments.StatusSucceeded, n.Payment.Status)

	_, err = s.VerifyWebhook(sign(body, "whsec_other", now), body, now)
	require.ErrorIs(t, err, payments.ErrInvalidSignature)
	_, err = s.VerifyWebhook(sign(body, "whsec_stripe", now.Add(-6*time.Minute)), body, now)
	require.ErrorIs(t, err, payments.ErrInvalidSignature)
	_, err = s.VerifyWebhook(http.Header{}, body, now)
	require.ErrorIs(t, err, payments.ErrInvalidSignature)

	refund := event("charge.refunded", map[string]any{"id": "ch_7", "object": "charge", "amount": 5000, "currency": "eur",
		"refunded": true, "amount_refunded": 5000, "payment_intent": "pi_7"})
	n, err = s.VerifyWebhook(sign(refund, "whsec_stripe", now), refund, now)
	require.NoError(t, err)
	require.Equal(t, payments.EventRefundSucceeded, n.Type)
	require.Equal(t, "pi_7", n.Payment.ID)
	require.Equal(t, payments.StatusRefunded, n.Payment.Status)

	// amount_refunded is honoured: part of the charge refunded is not a
	// refund of the payment.
	partial := event("charge.refunded", map[string]any{"id": "ch_7", "object": "charge", "amount": 5000, "currency": "eur",
		"refunded": false, "amount_refunded": 1000, "payment_intent": "pi_7"})
	n, err = s.VerifyWebhook(sign(partial, "whsec_stripe", now), partial, now)
	require.NoError(t, err)
	require.Equal(t, payments.EventRefundPartial, n.Type)
	require.Equal(t, payments.StatusSucceeded, n.Payment.Status)
	require.EqualValues(t, 1000, n.Payment.RefundedAmount)

	// A chargeback: the money is back with the cardholder.
	dispute := event("charge.dispute.created", map[string]any{"id": "dp_7", "object": "dispute", "amount": 5000, "currency": "eur",
		"charge": "ch_7", "payment_intent": "pi_7", "status": "needs_response"})
	n, err = s.VerifyWebhook(sign(dispute, "whsec_stripe", now), dispute, now)
	require.NoError(t, err)
	require.Equal(t, payments.EventPaymentDisputed, n.Type)
	require.Equal(t, "pi_7", n.Payment.ID)
	require.Equal(t, payments.StatusRefunded, n.Payment.Status)
	require.Equal(t, payments.FailureDisputed, n.Payment.FailureCode)

	failed := event("payment_intent.payment_failed", map[string]any{"id": "pi_8", "object": "payment_intent", "status": "requires_payment_method",
		"last_payment_error": map[string]any{"code": "card_declined"}})
	n, err = s.VerifyWebhook(sign(failed, "whsec_stripe", now), failed, now)
	require.NoError(t, err)
	require.Equal(t, payments.EventPaymentFailed, n.Type)
	require.Equal(t, payments.StatusFailed, n.Payment.Status)
}

// The provider is chosen by PAYMENTS_PROVIDER; stripe needs its key, and
// the error names the variable, as configuration errors do.
func TestNewProvider(t *testing.T) {
	_, err := payments.NewProvider("stripe", "", "whsec_x", "")
	require.ErrorContains(t, err, "STRIPE_SECRET_KEY")
	p, err := payments.NewProvider("stripe", "", "whsec_x", "sk_test_x")
	require.NoError(t, err)
	require.NotNil(t, p)
	_, err = payments.NewProvider("paypal", "", "whsec_x", "")
	require.ErrorContains(t, err, "PAYMENTS_PROVIDER")
}
