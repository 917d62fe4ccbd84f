package orders_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// auditKinds runs the audit without the provider and returns its anomaly
// kinds.
func (e *env) auditKinds() []string {
	e.t.Helper()
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{})
	require.NoError(e.t, err)
	out := []string{}
	for _, a := range r.Anomalies {
		out = append(out, a.Kind)
	}
	return out
}

// Issue 18, case 2 (first part): a validly signed payment.succeeded whose
// amount and currency are not the attempt's (1 USD for a 50 EUR order)
// never confirms. It is recorded (a mismatch, an audit anomaly until it is
// settled), the attempt bound to that provider payment is FAILED, and the
// provider payment is settled from the provider's own state: here still
// pending, so it is voided; the audit is then clean.
func TestNotificationWithAnotherAmountNeverConfirms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	_, o, p := e.checkout(u, 0)
	require.EqualValues(t, 5000, p.Amount)
	body, _ := json.Marshal(map[string]any{"id": "evt_usd_" + p.ID, "type": payments.EventPaymentSucceeded, "created": time.Now().Unix(),
		"data": map[string]any{"id": *p.ProviderRef, "status": "succeeded", "amount": 100, "currency": "USD", "reference": p.ID}})
	require.Equal(t, http.StatusOK, e.post(body, payments.Sign(testSecret, time.Now(), body)))

	require.NotEqual(t, orders.OrderConfirmed, e.storedOrderStatus(o.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	require.Equal(t, orders.PaymentFailed, e.payments(o.ID)[0].Status)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_mismatches WHERE provider_payment_id = $1 AND payment_id = $2
		AND amount = 100 AND currency = 'USD'`, *p.ProviderRef, p.ID))
	require.Equal(t, []string{"PAYMENT_MISMATCH"}, e.auditKinds())
	// The same amount later (the buyer pays the real 50 EUR) still does not
	// confirm from a provider payment that once disagreed.
	body2, _ := json.Marshal(map[string]any{"id": "evt_eur_" + p.ID, "type": payments.EventPaymentSucceeded, "created": time.Now().Unix(),
		"data": map[string]any{"id": *p.ProviderRef, "status": "succeeded", "amount": 5000, "currency": "EUR", "reference": p.ID}})
	require.Equal(t, http.StatusOK, e.post(body2, payments.Sign(testSecret, time.Now(), body2)))
	require.NotEqual(t, orders.OrderConfirmed, e.storedOrderStatus(o.ID))

	e.startWorkers()
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM payment_mismatches WHERE provider_payment_id = $1 AND resolved_at IS NOT NULL`, *p.ProviderRef) == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, payments.StatusCancelled, e.providerStatus(p))
	require.Empty(t, e.auditKinds())
}

// Issue 18, case 2 (second part): an attempt left UNKNOWN after a create
// timeout (no provider id yet) is not bound by a notification that only
// carries its reference: a 1-cent payment created directly at the sandbox
// with that reference and paid does not confirm the 100 EUR order; it is
// recorded, an audit anomaly, and refunded; the real attempt is still
// resolved with its own key afterwards.
func TestForeignPaymentWithOurReferenceIsRefundedNotBound(t *testing.T) {
	t.Parallel()
	u := user("alice")
	e, o, p := newUnansweredEnv(t, u)
	foreign, err := e.sb.CreatePayment(e.ctx, payments.CreateRequest{Amount: 1, Currency: "EUR", Reference: p.ID,
		WebhookURL: e.srv.URL + "/webhooks/payments", IdempotencyKey: "attacker-" + p.ID})
	require.NoError(t, err)
	pay(t, foreign.CheckoutURL, "succeed")
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM payment_mismatches WHERE provider_payment_id = $1`, foreign.ID) == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.NotEqual(t, orders.OrderConfirmed, e.storedOrderStatus(o.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	ps := e.payments(o.ID)
	require.Len(t, ps, 1)
	require.Nil(t, ps[0].ProviderRef, "the foreign payment must not bind the attempt")
	require.Equal(t, orders.PaymentUnknown, ps[0].Status)
	require.Contains(t, e.auditKinds(), "PAYMENT_MISMATCH")

	e.startWorkers()
	require.Eventually(t, func() bool {
		pp, err := e.sb.GetPayment(e.ctx, foreign.ID)
		return err == nil && pp.Status == payments.StatusRefunded
	}, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM payment_mismatches WHERE provider_payment_id = $1 AND resolved_at IS NOT NULL`, foreign.ID) == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.NotContains(t, e.auditKinds(), "PAYMENT_MISMATCH")
}
