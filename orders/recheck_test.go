package orders_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/orders"
)

// stripeAPI answers like Stripe's API for the PaymentIntent calls the
// adapter makes; the test sets each intent's state, as the buyer's card
// and Stripe would.
type stripeAPI struct {
	mu     sync.Mutex
	byKey  map[string]string // idempotency key -> intent id
	status map[string]string // intent id -> Stripe status
	err    map[string]bool   // intent id -> a last_payment_error (declined)
	gets   map[string]int    // intent id -> GET requests
	amount map[string]string // intent id -> amount created with
}

func newStripeAPI() *stripeAPI {
	return &stripeAPI{byKey: map[string]string{}, status: map[string]string{}, err: map[string]bool{}, gets: map[string]int{},
		amount: map[string]string{}}
}

func (f *stripeAPI) set(id, status string, declined bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[id], f.err[id] = status, declined
}

func (f *stripeAPI) statusOf(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[id]
}

func (f *stripeAPI) getCount(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[id]
}

func (f *stripeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	intent := func(id string) {
		amount, _ := strconv.Atoi(f.amount[id])
		pi := map[string]any{"id": id, "object": "payment_intent", "amount": amount, "currency": "eur",
			"status": f.status[id], "client_secret": id + "_secret_x", "created": 1700000000,
			"metadata": map[string]string{"reference": id}}
		if f.err[id] {
			pi["last_payment_error"] = map[string]any{"type": "card_error", "code": "card_declined"}
		}
		_ = json.NewEncoder(w).Encode(pi)
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/v1/payment_intents":
		key := r.Header.Get("Idempotency-Key")
		id, ok := f.byKey[key]
		if !ok {
			id = fmt.Sprintf("pi_%d", len(f.byKey)+1)
			f.byKey[key] = id
			f.status[id] = "requires_payment_method"
			f.amount[id] = r.Form.Get("amount")
		}
		intent(id)
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/cancel"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/cancel")
		if f.status[id] != "requires_payment_method" {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "payment_intent_unexpected_state"}})
			return
		}
		f.status[id], f.err[id] = "canceled", false
		intent(id)
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
		f.gets[id]++
		intent(id)
	default:
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "resource_missing"}})
	}
}

// A Stripe payment declined, then paid by the buyer on the same
// PaymentIntent with another card, both notifications lost: the
// reconciler keeps asking about the FAILED payment, at doubling intervals
// within RecheckFailedFor, finds the success and confirms the order (or
// compensates the charge when the hold is gone). Without the recheck the
// charge would stay unnoticed (the audit's PROVIDER_MISMATCH).
func TestReconcilerFindsSuccessAfterStripeDecline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	api, stripe, svc := e.stripeService(time.Minute)
	// age moves a payment's failure (and last check) back in time.
	age := func(paymentID string, d time.Duration) {
		_, err := e.pool.Exec(e.ctx, `UPDATE payments SET updated_at = updated_at - $2 * interval '1 second',
  checked_at = checked_at - $2 * interval '1 second' WHERE id = $1`, paymentID, d.Seconds())
		require.NoError(t, err)
	}
	reconcile := func() {
		_, err := svc.Reconcile(e.ctx)
		require.NoError(t, err)
	}
	// pay opens an order for one seat whose payment the buyer's bank declines.
	declined := func(u string, seat int) (orders.Order, orders.Payment) {
		h := e.hold(user(u), []int{seat}, 0)
		o, err := svc.Create(e.ctx, user(u), h.ID, "k-"+u)
		require.NoError(t, err)
		p := e.payments(o.ID)[0]
		require.Equal(t, orders.PaymentPending, p.Status)
		api.set(*p.ProviderRef, "requires_payment_method", true)
		age(p.ID, 2*time.Minute)
		reconcile()
		p = e.payments(o.ID)[0]
		require.Equal(t, orders.PaymentFailed, p.Status)
		require.Equal(t, orders.OrderPaymentFailed, e.order(user(u), o.ID).Status)
		return o, p
	}

	o, p := declined("alice", 0)
	ref := *p.ProviderRef
	gets := api.getCount(ref)
	reconcile()
	require.Equal(t, gets, api.getCount(ref), "just failed: not asked again before ReconcileAfter")

	age(p.ID, 2*time.Minute)
	reconcile()
	require.Equal(t, gets+1, api.getCount(ref), "asked again a while after the failure")
	reconcile()
	require.Equal(t, gets+1, api.getCount(ref), "then not at every pass: it waits as long as it had been failed")
	age(p.ID, time.Minute)
	reconcile()
	require.Equal(t, gets+1, api.getCount(ref), "failed 2 min at the last check: not before 2 min more")

	// The buyer pays with another card on the same intent; the notification is lost.
	api.set(ref, "succeeded", false)
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{Provider: stripe})
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(r.Anomalies), "PROVIDER_MISMATCH", "the unnoticed charge")
	gets = api.getCount(ref)
	age(p.ID, 2*time.Minute)
	reconcile()
	require.Equal(t, gets+1, api.getCount(ref))
	require.Equal(t, orders.PaymentSucceeded, e.payments(o.ID)[0].Status)
	require.Equal(t, orders.OrderConfirmed, e.order(user("alice"), o.ID).Status)
	tickets, err := svc.Tickets(e.ctx, o.ID)
	require.NoError(t, err)
	require.Len(t, tickets, 1)

	// Paid after the hold ran out: the charge is compensated.
	o2, p2 := declined("bob", 1)
	h2 := e.order(user("bob"), o2.ID).HoldID
	e.expireHold(h2)
	reconcile() // expires the order (its FAILED payment is not due yet)
	require.Equal(t, orders.OrderExpired, e.order(user("bob"), o2.ID).Status)
	api.set(*p2.ProviderRef, "succeeded", false)
	age(p2.ID, 2*time.Minute)
	reconcile()
	require.Equal(t, orders.PaymentRefundPending, e.payments(o2.ID)[0].Status)
	require.Equal(t, orders.OrderExpired, e.order(user("bob"), o2.ID).Status)

	// Failed longer ago than RecheckFailedFor (24h): no longer asked about.
	_, p3 := declined("carol", 2)
	age(p3.ID, 25*time.Hour)
	gets = api.getCount(*p3.ProviderRef)
	reconcile()
	require.Equal(t, gets, api.getCount(*p3.ProviderRef))
	require.Equal(t, orders.PaymentFailed, e.payments(p3.OrderID)[0].Status)
}
