package orders_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

func TestHappyPathToConfirmedWithTickets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	h := e.hold(u, []int{0, 1}, 1)

	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	require.Equal(t, orders.OrderAwaitingPayment, o.Status)
	require.EqualValues(t, 5000+5000+2500, o.TotalAmount)
	p := e.lastPayment(o.ID)
	require.Equal(t, orders.PaymentPending, p.Status)
	require.NotNil(t, p.ProviderRef)
	require.Contains(t, *p.CheckoutURL, paysimURL+"/checkout/")

	// Idempotent retry: the same order.
	again, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	require.Equal(t, o.ID, again.ID)

	pay(t, *p.CheckoutURL, "succeed")
	o = e.waitOrder(u, o.ID, orders.OrderConfirmed)
	require.NotNil(t, o.ConfirmedAt)

	ts, err := e.svc.Tickets(e.ctx, o.ID)
	require.NoError(t, err)
	require.Len(t, ts, 3)
	for _, tk := range ts {
		c, err := ticketKeys.Verify(tk.Code)
		require.NoError(t, err)
		require.Equal(t, tk.ID, c.TicketID)
		require.Equal(t, e.ev.ID, c.EventID)
	}
	require.Equal(t, 3, e.count(`SELECT count(*) FROM inventory WHERE order_id = $1 AND status = 'SOLD'`, o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM holds WHERE id = $1 AND status = 'PURCHASED'`, h.ID))
	require.Equal(t, 3, e.count(`SELECT count(*) FROM hold_items WHERE hold_id = $1 AND upper_inf(period)`, h.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox WHERE payload->>'kind' = 'sale' AND payload->>'orderId' = $1`, o.ID))

	// A second key on the same hold: HOLD_ALREADY_ORDERED with the order id.
	_, err = e.svc.Create(e.ctx, u, h.ID, "k2")
	var ao *apperr.HoldAlreadyOrderedError
	require.ErrorAs(t, err, &ao)
	require.Equal(t, o.ID, ao.OrderID)
	// Another user's order is not visible.
	_, err = e.svc.Get(e.ctx, user("mallory"), o.ID)
	require.ErrorIs(t, err, apperr.ErrForbidden)

	page, err := e.svc.List(e.ctx, u, 10, "")
	require.NoError(t, err)
	require.Len(t, page.Orders, 1)
	e.auditClean()
}

func TestCreateOrderRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	h := e.hold(u, []int{2}, 0)
	_, err := e.svc.Create(e.ctx, user("bob"), h.ID, "k")
	require.ErrorIs(t, err, apperr.ErrForbidden)
	e.expireHold(h.ID)
	_, err = e.svc.Create(e.ctx, u, h.ID, "k")
	require.ErrorIs(t, err, apperr.ErrHoldExpired)
	h2 := e.hold(u, []int{3}, 0)
	_, err = e.svc.Create(e.ctx, u, h2.ID, "k") // the failed attempt rolled its key back
	require.NoError(t, err)
	h3 := e.hold(u, []int{4}, 0)
	_, err = e.svc.Create(e.ctx, u, h3.ID, "k")
	require.ErrorIs(t, err, apperr.ErrIdempotencyKeyReused)
}

func TestDeclineThenRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	_, o, p1 := e.checkout(u, 0)

	_, err := e.svc.RetryPayment(e.ctx, u, o.ID, "r0")
	require.ErrorIs(t, err, apperr.ErrPaymentInProgress)

	pay(t, *p1.CheckoutURL, "decline")
	e.waitOrder(u, o.ID, orders.OrderPaymentFailed)
	e.waitPayment(o.ID, 1, orders.PaymentFailed)

	o2, err := e.svc.RetryPayment(e.ctx, u, o.ID, "r1")
	require.NoError(t, err)
	require.Equal(t, orders.OrderAwaitingPayment, o2.Status)
	again, err := e.svc.RetryPayment(e.ctx, u, o.ID, "r1") // idempotent
	require.NoError(t, err)
	require.Equal(t, o.ID, again.ID)
	ps := e.payments(o.ID)
	require.Len(t, ps, 2)
	p2 := e.lastPayment(o.ID)
	require.NotEqual(t, *p1.ProviderRef, *p2.ProviderRef)

	pay(t, *p2.CheckoutURL, "succeed")
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	e.waitPayment(o.ID, 2, orders.PaymentSucceeded)
	_, err = e.svc.RetryPayment(e.ctx, u, o.ID, "r2")
	var inv *apperr.InvalidInputError
	require.ErrorAs(t, err, &inv)
	e.auditClean()
}

func TestTwoKeysOneHoldOneOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	h := e.hold(u, []int{0}, 0)
	var wg sync.WaitGroup
	ids := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := e.svc.Create(e.ctx, u, h.ID, []string{"a", "b"}[i])
			ids[i], errs[i] = o.ID, err
		}()
	}
	wg.Wait()
	require.Equal(t, 1, e.count(`SELECT count(*) FROM orders WHERE hold_id = $1`, h.ID))
	okIdx := 0
	if errs[0] != nil {
		okIdx = 1
	}
	require.NoError(t, errs[okIdx])
	var ao *apperr.HoldAlreadyOrderedError
	require.ErrorAs(t, errs[1-okIdx], &ao)
	require.Equal(t, ids[okIdx], ao.OrderID)
	d, _ := apperr.Describe(errs[1-okIdx])
	require.Equal(t, "HOLD_ALREADY_ORDERED", d.Code)
	require.Equal(t, ids[okIdx], d.Extensions["orderId"])
}

func TestDuplicateWebhooksConfirmOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{simulate: map[string]any{"auto_outcome": "succeed", "auto_settle_ms": 100, "duplicate_webhooks": 20}})
	u := user("alice")
	h := e.hold(u, []int{0, 1}, 0)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	p := e.lastPayment(o.ID)

	// The same signed notification 20 more times, concurrently.
	body, _ := json.Marshal(map[string]any{"id": "evt_dup_" + p.ID, "type": payments.EventPaymentSucceeded,
		"created": time.Now().Unix(), "data": map[string]any{"id": *p.ProviderRef, "status": "succeeded", "reference": p.ID,
			"amount": p.Amount, "currency": p.Currency}})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.Equal(t, http.StatusOK, e.post(body, payments.Sign(testSecret, time.Now(), body)))
		}()
	}
	wg.Wait()
	// paysim's copies arrive over time: wait for its deliveries, then count.
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM webhook_inbox WHERE payload->'data'->>'id' = $1`, *p.ProviderRef) >= 2
	}, 20*time.Second, 50*time.Millisecond)
	// ...until paysim has delivered every copy (they must change nothing).
	require.Eventually(t, func() bool {
		total, pending := providerDeliveries(t, p.ID)
		return total > 1 && pending == 0
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, 2, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND to_status = 'SUCCEEDED'`, p.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox WHERE payload->>'orderId' = $1`, o.ID))
	e.auditClean()
}

func TestForgedOrStaleSignatureChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	_, o, p := e.checkout(u, 0)
	body, _ := json.Marshal(map[string]any{"id": "evt_forged", "type": payments.EventPaymentSucceeded,
		"created": time.Now().Unix(), "data": map[string]any{"id": *p.ProviderRef, "status": "succeeded"}})
	require.Equal(t, http.StatusUnauthorized, e.post(body, payments.Sign("whsec_wrong", time.Now(), body)))
	require.Equal(t, http.StatusUnauthorized, e.post(body, payments.Sign(testSecret, time.Now().Add(-6*time.Minute), body)))
	require.Equal(t, http.StatusUnauthorized, e.post(body, ""))
	tampered := append([]byte{}, body...)
	tampered[len(tampered)-2] = ' '
	require.Equal(t, http.StatusUnauthorized, e.post(tampered, payments.Sign(testSecret, time.Now(), body)))
	junk := []byte(`{"not":"a notification"}`)
	require.Equal(t, http.StatusBadRequest, e.post(junk, payments.Sign(testSecret, time.Now(), junk)))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM webhook_inbox`))
	require.Equal(t, orders.OrderAwaitingPayment, e.order(u, o.ID).Status)
	require.Equal(t, orders.PaymentPending, e.payments(o.ID)[0].Status)
}

func TestLateChargeIsRefundedAndSeatStaysWithNewHolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice, bob := user("alice"), user("bob")
	h := e.hold(alice, []int{0}, 0)
	o, err := e.svc.Create(e.ctx, alice, h.ID, "k1")
	require.NoError(t, err)
	p := e.lastPayment(o.ID)

	e.expireHold(h.ID)
	hb := e.hold(bob, []int{0}, 0) // the seat is re-taken
	pay(t, *p.CheckoutURL, "succeed")

	e.waitPayment(o.ID, 1, orders.PaymentRefundPending)
	require.Equal(t, orders.OrderExpired, e.order(alice, o.ID).Status)
	e.startWorkers() // the refund job runs
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM inventory WHERE hold_id = $1 AND status = 'HELD' AND seat_id = $2`, hb.ID, e.ev.Seats[0]))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	pp, err := e.sb.GetPayment(e.ctx, *p.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, payments.StatusRefunded, pp.Status)
	var reasons []string
	evs, err := e.st.PaymentEvents(e.ctx, p.ID)
	require.NoError(t, err)
	for _, ev := range evs {
		reasons = append(reasons, ev.ToStatus)
	}
	require.Equal(t, []string{"UNKNOWN", "PENDING", "SUCCEEDED", "REFUND_PENDING", "REFUNDED"}, reasons)
	e.auditClean()
}

func TestExpiredOrderVoidsPendingPayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true})
	u := user("alice")
	h, o, p := e.checkout(u, 0)
	e.expireHold(h.ID)
	e.waitOrder(u, o.ID, orders.OrderExpired)
	e.waitPayment(o.ID, 1, orders.PaymentCancelled)
	pp, err := e.sb.GetPayment(e.ctx, *p.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, payments.StatusCancelled, pp.Status)
	_, err = e.svc.RetryPayment(e.ctx, u, o.ID, "r")
	require.ErrorIs(t, err, apperr.ErrHoldExpired)
	e.auditClean()
}

func TestReorderedWebhooks(t *testing.T) {
	t.Parallel()
	// The payment's first notification (payment.succeeded) is held back, so
	// refund.succeeded arrives before it.
	e := newEnv(t, envOpts{simulate: map[string]any{"reorder_webhooks": true, "reorder_window_ms": 1500}})
	u := user("alice")
	h, o, p := e.checkout(u, 0)
	e.expireHold(h.ID)
	pay(t, *p.CheckoutURL, "succeed")
	// We learn of the success before its notification: the reconciler asks.
	e.startWorkers()
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	// Let the held-back payment.succeeded arrive: it must change nothing.
	require.Eventually(t, func() bool {
		return e.count(`SELECT count(*) FROM webhook_inbox WHERE type = 'payment.succeeded'`) == 1
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, orders.PaymentRefunded, e.payments(o.ID)[0].Status)
	require.Equal(t, orders.OrderExpired, e.order(u, o.ID).Status)

	// A late payment.failed for a confirmed sale changes nothing either.
	h2 := e.hold(u, []int{1}, 0)
	o2, err := e.svc.Create(e.ctx, u, h2.ID, "k2")
	require.NoError(t, err)
	p2 := e.lastPayment(o2.ID)
	pay(t, *p2.CheckoutURL, "succeed")
	e.waitOrder(u, o2.ID, orders.OrderConfirmed)
	body, _ := json.Marshal(map[string]any{"id": "evt_late_fail", "type": payments.EventPaymentFailed,
		"created": time.Now().Unix(), "data": map[string]any{"id": *p2.ProviderRef, "status": "failed",
			"amount": p2.Amount, "currency": p2.Currency}})
	require.Equal(t, http.StatusOK, e.post(body, payments.Sign(testSecret, time.Now(), body)))
	require.Equal(t, orders.OrderConfirmed, e.order(u, o2.ID).Status)
	require.Equal(t, orders.PaymentSucceeded, e.payments(o2.ID)[0].Status)
	e.auditClean()
}

func TestDroppedWebhooksSettledByReconciliation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true, simulate: map[string]any{"drop_webhooks": true, "auto_outcome": "succeed", "auto_settle_ms": 100}})
	u := user("alice")
	h := e.hold(u, []int{0}, 2)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	require.Equal(t, 0, e.count(`SELECT count(*) FROM webhook_inbox`))
	require.Equal(t, 3, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	e.auditClean()
}

func TestCreateTimeoutNeverChargesTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{httpTimeout: 300 * time.Millisecond, simulate: map[string]any{"create_timeout": true}})
	u := user("alice")
	h := e.hold(u, []int{0}, 0)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err, "a provider timeout is not the buyer's error")
	ps := e.payments(o.ID)
	require.Len(t, ps, 1)
	require.Equal(t, orders.PaymentUnknown, ps[0].Status)
	require.Nil(t, ps[0].ProviderRef)

	// retryPayment resolves the unknown attempt (same key) instead of
	// opening a second charge, then refuses: it is still open.
	_, err = e.svc.RetryPayment(e.ctx, u, o.ID, "r1")
	require.ErrorIs(t, err, apperr.ErrPaymentInProgress)
	p := e.lastPayment(o.ID)
	require.Equal(t, orders.PaymentPending, p.Status)
	require.Equal(t, 1, providerCharges(t, p.ID))
	require.Len(t, e.payments(o.ID), 1)

	pay(t, *p.CheckoutURL, "succeed")
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	require.Equal(t, 1, providerCharges(t, p.ID))
	e.auditClean()
}

func TestCreateTimeoutResolvedByReconciler(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true, httpTimeout: 300 * time.Millisecond,
		simulate: map[string]any{"create_timeout": true, "auto_outcome": "succeed", "auto_settle_ms": 100}})
	u := user("alice")
	h := e.hold(u, []int{0}, 0)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	p := e.payments(o.ID)[0]
	require.Equal(t, 1, providerCharges(t, p.ID))
	e.auditClean()
}

func TestAuditReportsPlantedAnomalies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	_, o, p := e.checkout(u, 0)
	pay(t, *p.CheckoutURL, "succeed")
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	e.auditClean()

	// Plant: a sold seat without a ticket, a succeeded payment whose order
	// is not confirmed, a stale refund, a ticket without a sale.
	h2 := e.hold(u, []int{1}, 0)
	o2, err := e.svc.Create(e.ctx, u, h2.ID, "k2")
	require.NoError(t, err)
	p2 := e.lastPayment(o2.ID)
	for _, q := range []string{
		`UPDATE tickets SET status = 'VOID' WHERE order_id = '` + o.ID + `'`,
		`UPDATE payments SET status = 'SUCCEEDED' WHERE id = '` + p2.ID + `'`,
	} {
		_, err := e.pool.Exec(e.ctx, q)
		require.NoError(t, err)
	}
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{})
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, a := range r.Anomalies {
		kinds[a.Kind] = true
	}
	require.True(t, kinds["SOLD_WITHOUT_TICKET"], "%+v", r.Anomalies)
	require.True(t, kinds["PAYMENT_WITHOUT_ORDER"], "%+v", r.Anomalies)

	_, err = e.pool.Exec(e.ctx, `UPDATE payments SET status = 'REFUND_PENDING', updated_at = now() - interval '1 hour' WHERE id = $1`, p2.ID)
	require.NoError(t, err)
	_, err = e.pool.Exec(e.ctx, `UPDATE tickets SET status = 'VALID' WHERE order_id = $1`, o.ID)
	require.NoError(t, err)
	_, err = e.pool.Exec(e.ctx, `UPDATE inventory SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, expires_at = NULL, order_id = NULL WHERE order_id = $1`, o.ID)
	require.NoError(t, err)
	r, err = audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{RefundGrace: time.Minute, Provider: e.sb})
	require.NoError(t, err)
	kinds = map[string]bool{}
	for _, a := range r.Anomalies {
		kinds[a.Kind] = true
	}
	require.True(t, kinds["REFUND_OVERDUE"], "%+v", r.Anomalies)
	require.True(t, kinds["TICKET_WITHOUT_SALE"], "%+v", r.Anomalies)
	require.True(t, kinds["PROVIDER_MISMATCH"], "%+v", r.Anomalies) // ours REFUND_PENDING, paysim pending
	require.NotEmpty(t, r.Units)

	_, err = audit.Run(e.ctx, e.st, "00000000-0000-0000-0000-000000000000", audit.Options{})
	require.True(t, errors.Is(err, audit.ErrNoEvent))
	_, err = audit.Run(e.ctx, e.st, "not-an-id", audit.Options{})
	require.True(t, errors.Is(err, audit.ErrBadEventID), "a malformed id is refused before any SQL: %v", err)
}

// A provider that does not answer leaves the audit incomplete, never clean;
// the summary adds up the money.
func TestAuditIsIncompleteWithoutTheProvidersAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	h := e.hold(u, []int{0, 1}, 0)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	pay(t, *e.lastPayment(o.ID).CheckoutURL, "succeed")
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	e.auditClean()

	dead := payments.NewSandbox("http://127.0.0.1:1", testSecret, nil) // nothing listens there
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{Provider: dead, ProviderTimeout: time.Second})
	require.NoError(t, err)
	require.Empty(t, r.Anomalies)
	require.Len(t, r.Unchecked, 1, "the one payment could not be checked")
	require.Equal(t, audit.Incomplete, r.Outcome())

	r, err = audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{})
	require.NoError(t, err)
	require.Equal(t, audit.Clean, r.Outcome(), "without a provider to ask, nothing is left unchecked")
	require.False(t, r.ProviderAsked)
	s := r.Summary()
	require.Equal(t, 2, s.Seats["SOLD"])
	require.Equal(t, len(r.Units)-2, s.Seats["AVAILABLE"])
	require.Equal(t, map[string]int{"SUCCEEDED": 1}, s.Payments)
	require.Len(t, s.Money, 1)
	m := s.Money[0]
	require.Equal(t, o.TotalAmount, m.Taken)
	require.Equal(t, o.TotalAmount, m.Kept)
	require.Zero(t, m.Refunded+m.RefundPending+m.Pending)
}

// TestConfirmationSellsAllOrNothing: a hold of two seats and a GA unit, one
// of whose rows is no longer held by it when the payment succeeds, confirms
// nothing: no row of the hold is sold, no ticket issued, the charge is
// refunded with the reason, and the hold's other rows stay as they were
// (the whole hold sells: TestHappyPathToConfirmedWithTickets).
func TestConfirmationSellsAllOrNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice := user("alice")
	h := e.hold(alice, []int{0, 1}, 1)
	o, err := e.svc.Create(e.ctx, alice, h.ID, "k1")
	require.NoError(t, err)
	p := e.lastPayment(o.ID)
	// The row of seat 1 is taken from under the hold (as an operator's
	// release would), the others stay HELD by it.
	_, err = e.pool.Exec(e.ctx, `UPDATE inventory SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, expires_at = NULL
		WHERE event_id = $1 AND seat_id = $2`, e.ev.ID, e.ev.Seats[1])
	require.NoError(t, err)

	pay(t, *p.CheckoutURL, "succeed")
	e.waitPayment(o.ID, 1, orders.PaymentRefundPending)
	require.NotEqual(t, orders.OrderConfirmed, e.order(alice, o.ID).Status)
	require.Equal(t, 0, e.count(`SELECT count(*) FROM inventory WHERE event_id = $1 AND status = 'SOLD'`, e.ev.ID))
	require.Equal(t, 2, e.count(`SELECT count(*) FROM inventory WHERE hold_id = $1 AND status = 'HELD'`, h.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND reason LIKE '%only 2 of 3 seats still held by the hold%'`, p.ID))

}
