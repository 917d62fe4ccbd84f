package orders_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// One order whose expiry fails (here a trigger refuses its update) does not
// stop the reconciliation pass: the next one is expired, and the pass
// reports the failure.
func TestReconcilerGoesOnPastAFailingExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	ha, oa, _ := e.checkout(user("alice"), 0)
	hb, ob, _ := e.checkout(user("bob"), 1)
	e.expireHold(ha.ID)
	e.expireHold(hb.ID)
	for _, q := range []string{
		`CREATE FUNCTION refuse_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'planted failure'; END $$`,
		`CREATE TRIGGER refuse_order BEFORE UPDATE ON orders FOR EACH ROW WHEN (OLD.id = '` + oa.ID + `') EXECUTE FUNCTION refuse_order()`,
	} {
		_, err := e.pool.Exec(e.ctx, q)
		require.NoError(t, err)
	}
	_, err := e.svc.Reconcile(e.ctx)
	require.ErrorContains(t, err, "planted failure")
	require.Equal(t, orders.OrderExpired, e.storedOrderStatus(ob.ID))
	require.Equal(t, orders.OrderAwaitingPayment, e.storedOrderStatus(oa.ID))
}

// A void whose job is gone (its attempts exhausted, or lost) is enqueued
// again by the reconciler while the attempt is still open on an ended
// order, and then runs: no cap drops a void.
func TestVoidEnqueuedAgainUntilDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	h, o, p := e.checkout(user("alice"), 0)
	e.expireHold(h.ID)
	_, err := e.svc.Reconcile(e.ctx)
	require.NoError(t, err)
	require.Equal(t, orders.OrderExpired, e.storedOrderStatus(o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM river_job WHERE kind = 'orders.void'`))
	_, err = e.pool.Exec(e.ctx, `DELETE FROM river_job WHERE kind = 'orders.void'`)
	require.NoError(t, err)
	_, err = e.pool.Exec(e.ctx, `UPDATE payments SET updated_at = now() - interval '1 minute' WHERE id = $1`, p.ID)
	require.NoError(t, err)
	_, err = e.svc.Reconcile(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM river_job WHERE kind = 'orders.void' AND args->>'payment_id' = $1`, p.ID))
	e.startWorkers()
	e.waitPayment(o.ID, 1, orders.PaymentCancelled)
	require.Equal(t, payments.StatusCancelled, e.providerStatus(p))
	e.auditClean()
}

// webhook_inbox deduplicates per provider: the same event id from two
// providers is two notifications.
func TestInboxIsKeyedByProvider(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	_, _, p := e.checkout(user("alice"), 0)
	n := payments.Notification{ID: "evt_shared", Type: payments.EventPaymentFailed,
		Payment: payments.ProviderPayment{ID: *p.ProviderRef, Status: payments.StatusFailed, Amount: p.Amount, Currency: p.Currency}}
	require.NoError(t, e.svc.ApplyNotification(e.ctx, "stripe", n, nil))
	require.Equal(t, orders.PaymentPending, e.payments(p.OrderID)[0].Status, "not a sandbox payment")
	require.NoError(t, e.svc.ApplyNotification(e.ctx, "sandbox", n, nil))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM webhook_inbox WHERE id = 'evt_shared'`))
	require.Equal(t, orders.PaymentFailed, e.payments(p.OrderID)[0].Status, "the sandbox's own notification applies")
	require.NoError(t, e.svc.ApplyNotification(e.ctx, "sandbox", n, nil))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM webhook_inbox WHERE id = 'evt_shared'`))
}

// Stripe: a declined intent (FAILED, requires_payment_method) stays
// payable. retryPayment voids it at Stripe before opening the next
// attempt, and when the order ends (hold expired) its FAILED attempt is
// voided too, so no old intent can take money afterwards.
func TestStripeDeclinedIntentVoidedBeforeRetryAndWhenTheOrderEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	api, _, svc := e.stripeService(time.Second)
	u := user("alice")
	h := e.hold(u, []int{0}, 0)
	o, err := svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	decline := func(attempt int) orders.Payment {
		t.Helper()
		p := e.payments(o.ID)[attempt-1]
		api.set(*p.ProviderRef, "requires_payment_method", true)
		_, err := e.pool.Exec(e.ctx, `UPDATE payments SET updated_at = now() - interval '1 minute' WHERE id = $1`, p.ID)
		require.NoError(t, err)
		_, err = svc.Reconcile(e.ctx)
		require.NoError(t, err)
		p = e.payments(o.ID)[attempt-1]
		require.Equal(t, orders.PaymentFailed, p.Status)
		return p
	}
	p1 := decline(1)
	require.Equal(t, "requires_payment_method", api.statusOf(*p1.ProviderRef), "still payable at Stripe")

	_, err = svc.RetryPayment(e.ctx, u, o.ID, "r1")
	require.NoError(t, err)
	require.Equal(t, "canceled", api.statusOf(*p1.ProviderRef), "voided before the next attempt")
	ps := e.payments(o.ID)
	require.Len(t, ps, 2)
	require.Equal(t, orders.PaymentCancelled, ps[0].Status)
	require.Equal(t, orders.PaymentPending, ps[1].Status)

	p2 := decline(2)
	e.expireHold(h.ID)
	_, err = svc.Reconcile(e.ctx)
	require.NoError(t, err)
	require.Equal(t, orders.OrderExpired, e.storedOrderStatus(o.ID))
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.RunWorkers(e.ctx) }()
	t.Cleanup(func() { e.cancel(); <-done })
	require.Eventually(t, func() bool { return api.statusOf(*p2.ProviderRef) == "canceled" }, 30*time.Second, 50*time.Millisecond)
	e.waitPayment(o.ID, 2, orders.PaymentCancelled)
}
