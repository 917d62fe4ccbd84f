package orders_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/redisstore"
)

// withLeases gives the env the holds service as the API builds it: Redis
// leases in front of Postgres (the shared test Redis, a per-test prefix).
func (e *env) withLeases() {
	e.t.Helper()
	rdb := testdb.NewRedis(e.t) // one Redis, or the cluster (testdb.RedisCluster)
	e.holds = holds.New(e.st, holds.Config{Leases: redisstore.NewLeases(rdb, testdb.RedisPrefix(e.t))})
	e.t.Cleanup(e.holds.Wait)
}

// storedOrderStatus reads the order row as stored, without the lazy expiry
// of orders.Service.Get (so only the engine's own work can change it).
func (e *env) storedOrderStatus(id string) string {
	e.t.Helper()
	o, err := e.st.GetOrder(e.ctx, id)
	require.NoError(e.t, err)
	return o.Status
}

// providerStatus is paysim's status of an attempt.
func (e *env) providerStatus(p orders.Payment) payments.Status {
	e.t.Helper()
	require.NotNil(e.t, p.ProviderRef)
	pp, err := e.sb.GetPayment(e.ctx, *p.ProviderRef)
	require.NoError(e.t, err)
	return pp.Status
}

// The buyer cancels the hold of an order awaiting payment (holds.Service
// Cancel, what cancelHold and DELETE /api/holds/{id} call): with the
// workers running and nobody reading the order, the engine marks the order
// CANCELLED and voids the open payment at paysim; the seats are free again
// (another buyer holds and buys them), the buyer cannot pay again, and the
// audit is clean.
func TestCancelHoldCancelsOrderAndVoidsPayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true})
	e.withLeases()
	alice, bob := user("alice"), user("bob")
	h := e.hold(alice, []int{0, 1}, 1)
	o, err := e.svc.Create(e.ctx, alice, h.ID, "k1")
	require.NoError(t, err)
	require.Equal(t, orders.OrderAwaitingPayment, o.Status)
	p := e.lastPayment(o.ID)
	require.Equal(t, orders.PaymentPending, p.Status)
	require.Equal(t, payments.StatusPending, e.providerStatus(p))

	c, err := e.holds.Cancel(e.ctx, alice, h.ID)
	require.NoError(t, err)
	require.Equal(t, holds.StatusCancelled, c.Status)

	// The reconciler (not a read of ours) ends the order and the void job
	// cancels the attempt at the provider.
	require.Eventually(t, func() bool { return e.storedOrderStatus(o.ID) == orders.OrderCancelled },
		30*time.Second, 50*time.Millisecond, "order %s never became CANCELLED", o.ID)
	e.waitPayment(o.ID, 1, orders.PaymentCancelled)
	require.Equal(t, payments.StatusCancelled, e.providerStatus(p))
	require.Equal(t, orders.OrderCancelled, e.order(alice, o.ID).Status)
	require.Len(t, e.payments(o.ID), 1)
	require.Equal(t, 1, providerCharges(t, p.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND reason LIKE 'order CANCELLED (hold CANCELLED): void requested%'`, p.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))

	// No way back for the cancelled order.
	_, err = e.svc.RetryPayment(e.ctx, alice, o.ID, "r1")
	require.ErrorIs(t, err, apperr.ErrHoldExpired)
	_, err = e.holds.Cancel(e.ctx, alice, h.ID)
	require.ErrorIs(t, err, apperr.ErrHoldExpired)

	// The seats and the GA unit are free again, leases included: another
	// buyer holds the same ones and buys them.
	require.Equal(t, 0, e.count(`SELECT count(*) FROM inventory WHERE hold_id = $1 OR order_id = $2`, h.ID, o.ID))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM inventory WHERE event_id = $1 AND seat_id::text = ANY($2) AND status = 'AVAILABLE'`,
		e.ev.ID, e.ev.Seats[:2]))
	hb := e.hold(bob, []int{0, 1}, 1)
	ob, err := e.svc.Create(e.ctx, bob, hb.ID, "kb")
	require.NoError(t, err)
	pb := e.lastPayment(ob.ID)
	pay(t, *pb.CheckoutURL, "succeed")
	e.waitOrder(bob, ob.ID, orders.OrderConfirmed)
	require.Equal(t, 3, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1 AND status = 'VALID'`, ob.ID))
	require.Equal(t, orders.OrderCancelled, e.order(alice, o.ID).Status)
	e.auditClean()
}

// The void loses to the buyer: the hold is cancelled and the order seen
// CANCELLED (the void is enqueued, no worker has run it yet), the buyer
// pays at paysim's checkout, which still has the payment pending, and the
// seat is meanwhile held by another buyer. The charge must not sell the
// seat or issue a ticket: it is refunded (REFUND_PENDING, then REFUNDED once
// the workers run), and the void that runs afterwards changes nothing.
func TestChargeAfterHoldCancelIsRefunded(t *testing.T) {
	t.Parallel()
	alice, bob := user("alice"), user("bob")
	e, o, p := newCancelledWithOpenOrder(t, alice)
	require.Equal(t, orders.OrderCancelled, e.order(alice, o.ID).Status)
	require.Equal(t, orders.PaymentPending, e.payments(o.ID)[0].Status)
	require.Equal(t, payments.StatusPending, e.providerStatus(p), "the void must not have run yet")
	hb := e.hold(bob, []int{0}, 0)

	pay(t, *p.CheckoutURL, "succeed")
	e.waitPayment(o.ID, 1, orders.PaymentRefundPending)
	require.Equal(t, orders.OrderCancelled, e.order(alice, o.ID).Status)

	e.startWorkers() // the refund job runs, and the void enqueued by the cancel
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	require.Equal(t, payments.StatusRefunded, e.providerStatus(p))
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM river_job WHERE kind = 'orders.void' AND args->>'payment_id' = $1 AND state = 'completed'`, p.ID) == 1
	}, 30*time.Second, 50*time.Millisecond, "the void job never completed")
	require.Equal(t, orders.PaymentRefunded, e.payments(o.ID)[0].Status)
	require.Equal(t, []string{"UNKNOWN", "PENDING", "PENDING", "SUCCEEDED", "REFUND_PENDING", "REFUNDED"}, e.statuses(p.ID))
	require.Equal(t, orders.OrderCancelled, e.order(alice, o.ID).Status)
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM inventory WHERE order_id = $1`, o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM inventory WHERE hold_id = $1 AND status = 'HELD' AND seat_id = $2`, hb.ID, e.ev.Seats[0]))
	require.Equal(t, 1, providerCharges(t, p.ID))
	e.auditClean()
}

// The charge lands before anything has looked at the order since the hold
// was cancelled (the order is still AWAITING_PAYMENT when the webhook
// comes): confirmation finds the hold CANCELLED, so the charge is refunded,
// no seat is sold and no ticket issued.
func TestChargeBeforeOrderSeesHoldCancelIsRefunded(t *testing.T) {
	t.Parallel()
	alice, bob := user("alice"), user("bob")
	e, o, p := newCancelledWithOpenOrder(t, alice)
	require.Equal(t, orders.OrderAwaitingPayment, e.storedOrderStatus(o.ID))
	hb := e.hold(bob, []int{0}, 0)

	pay(t, *p.CheckoutURL, "succeed")
	e.waitPayment(o.ID, 1, orders.PaymentRefundPending)
	e.startWorkers()
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	require.Equal(t, payments.StatusRefunded, e.providerStatus(p))
	require.Equal(t, []string{"UNKNOWN", "PENDING", "SUCCEEDED", "REFUND_PENDING", "REFUNDED"}, e.statuses(p.ID))
	// Not sold and never confirmable again: CANCELLED, as when the cancel
	// is noticed first (the buyer cancelled; the hold did not run out).
	require.Equal(t, orders.OrderCancelled, e.order(alice, o.ID).Status)
	_, err := e.svc.RetryPayment(e.ctx, alice, o.ID, "r1")
	require.ErrorIs(t, err, apperr.ErrHoldExpired)
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM inventory WHERE order_id = $1`, o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM inventory WHERE hold_id = $1 AND status = 'HELD' AND seat_id = $2`, hb.ID, e.ev.Seats[0]))
	require.Equal(t, 1, providerCharges(t, p.ID))
	e.auditClean()
}

// newCancelledWithOpenOrder is an env (Redis leases on, no workers) where
// u held seat 0, ordered it (payment pending at paysim) and then cancelled
// the hold.
func newCancelledWithOpenOrder(t *testing.T, u auth.User) (*env, orders.Order, orders.Payment) {
	t.Helper()
	e := newEnv(t, envOpts{})
	e.withLeases()
	h, o, p := e.checkout(u, 0)
	_, err := e.holds.Cancel(e.ctx, u, h.ID)
	require.NoError(t, err)
	return e, o, p
}
