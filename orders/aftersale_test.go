package orders_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/tickets"
)

var (
	admin = auth.User{ID: "admin", Roles: []string{"admin"}}
	staff = auth.User{ID: "door-1", Roles: []string{"staff"}}
)

// setRefundDeadline sets the event's refund deadline (nil: no refunds).
func (e *env) setRefundDeadline(at *time.Time) {
	e.t.Helper()
	_, err := e.pool.Exec(e.ctx, `UPDATE events SET refund_deadline = $2 WHERE id = $1`, e.ev.ID, at)
	require.NoError(e.t, err)
}

// confirmed checks seat out for u and pays it: a CONFIRMED order.
func (e *env) confirmed(u auth.User, seat int) (holds.Hold, orders.Order, orders.Payment) {
	e.t.Helper()
	h, o, p := e.checkout(u, seat)
	pay(e.t, *p.CheckoutURL, "succeed")
	o = e.waitOrder(u, o.ID, orders.OrderConfirmed)
	return h, o, e.payments(o.ID)[0]
}

func (e *env) seatStatus(seat int) string {
	e.t.Helper()
	var s string
	require.NoError(e.t, e.pool.QueryRow(e.ctx, `SELECT status FROM inventory WHERE event_id = $1 AND seat_id = $2`,
		e.ev.ID, e.ev.Seats[seat]).Scan(&s))
	return s
}

func (e *env) ticketStatuses(orderID string) []string {
	e.t.Helper()
	ts, err := e.svc.Tickets(e.ctx, orderID)
	require.NoError(e.t, err)
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Status)
	}
	return out
}

// requestRefund before the deadline: in the transaction that decides it,
// the order is REFUNDED, its ticket VOID, its seat AVAILABLE (with an
// outbox row for the live map) and its payment REFUND_PENDING; the refund
// job then gets the provider's confirmation (REFUNDED). The same key
// returns the first result; the seat can be bought again; the audit is
// clean. After the deadline, without one, on another's order or on an
// order that is not CONFIRMED: REFUND_NOT_ALLOWED / FORBIDDEN, nothing
// changed.
func TestRequestRefundBeforeAndAfterTheDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice, bob := user("alice"), user("bob")
	_, o, p := e.confirmed(alice, 0)
	_, o2, _ := e.confirmed(alice, 1)

	// No refunds on request without a deadline.
	_, err := e.svc.RequestRefund(e.ctx, alice, o.ID, "r0")
	require.ErrorIs(t, err, apperr.ErrRefundNotAllowed)
	past := time.Now().Add(-time.Minute)
	e.setRefundDeadline(&past)
	_, err = e.svc.RequestRefund(e.ctx, alice, o.ID, "r0")
	require.ErrorIs(t, err, apperr.ErrRefundNotAllowed)
	require.Equal(t, orders.OrderConfirmed, e.order(alice, o.ID).Status)
	require.Equal(t, "SOLD", e.seatStatus(0))

	future := time.Now().Add(time.Hour)
	e.setRefundDeadline(&future)
	_, err = e.svc.RequestRefund(e.ctx, bob, o.ID, "rb")
	require.ErrorIs(t, err, apperr.ErrForbidden)
	_, err = e.svc.RequestRefund(e.ctx, alice, uuid.NewString(), "rx")
	require.ErrorIs(t, err, apperr.ErrNotFound)

	got, err := e.svc.RequestRefund(e.ctx, alice, o.ID, "r1")
	require.NoError(t, err)
	require.Equal(t, orders.OrderRefunded, got.Status)
	require.Equal(t, []string{orders.TicketVoid}, e.ticketStatuses(o.ID))
	require.Equal(t, "AVAILABLE", e.seatStatus(0))
	require.Equal(t, orders.PaymentRefundPending, e.payments(o.ID)[0].Status)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox WHERE payload->>'kind' = 'refund' AND payload->>'orderId' = $1
		AND payload->'seats'->0->>'status' = 'AVAILABLE' AND payload->'seats'->0->>'seatId' = $2`, o.ID, e.ev.Seats[0]))
	// The other order is untouched.
	require.Equal(t, orders.OrderConfirmed, e.order(alice, o2.ID).Status)
	require.Equal(t, "SOLD", e.seatStatus(1))

	// The same key: the first result; another key: not CONFIRMED any more.
	again, err := e.svc.RequestRefund(e.ctx, alice, o.ID, "r1")
	require.NoError(t, err)
	require.Equal(t, orders.OrderRefunded, again.Status)
	_, err = e.svc.RequestRefund(e.ctx, alice, o2.ID, "r1")
	require.ErrorIs(t, err, apperr.ErrIdempotencyKeyReused)
	_, err = e.svc.RequestRefund(e.ctx, alice, o.ID, "r2")
	require.ErrorIs(t, err, apperr.ErrRefundNotAllowed)

	e.startWorkers()
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	pp, err := e.sb.GetPayment(e.ctx, *p.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, payments.StatusRefunded, pp.Status)
	require.Equal(t, []string{"UNKNOWN", "PENDING", "SUCCEEDED", "REFUND_PENDING", "REFUNDED"}, e.statuses(p.ID))

	// The seat is on sale again: bob buys it.
	_, ob, _ := e.confirmed(bob, 0)
	require.Equal(t, []string{orders.TicketValid}, e.ticketStatuses(ob.ID))
	e.auditClean()
}

// cancelEvent: an active hold without order ends, an order awaiting
// payment is CANCELLED with its attempt voided at the provider, a
// CONFIRMED order is REFUNDED (ticket VOID, seat back) and its money
// refunded; a new hold is refused (SALE_NOT_OPEN); a repeat changes
// nothing; only an admin may; the audit is clean once the refunds settle.
func TestCancelEventEndsHoldsOrdersAndRefunds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true})
	alice, bob, carol := user("alice"), user("bob"), user("carol")
	_, paid, paidPay := e.confirmed(alice, 0)
	_, waiting, waitingPay := e.checkout(bob, 1)
	lone := e.hold(carol, []int{2}, 1)

	require.ErrorIs(t, e.svc.CancelEvent(e.ctx, alice, e.ev.ID, "storm"), apperr.ErrForbidden)
	require.NoError(t, e.svc.CancelEvent(e.ctx, admin, e.ev.ID, "storm"))
	var at1 time.Time
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT cancelled_at FROM events WHERE id = $1`, e.ev.ID).Scan(&at1))

	h, err := e.holds.Get(e.ctx, carol, lone.ID)
	require.NoError(t, err)
	require.Equal(t, holds.StatusCancelled, h.Status)
	require.Equal(t, orders.OrderCancelled, e.storedOrderStatus(waiting.ID))
	require.Equal(t, orders.OrderRefunded, e.storedOrderStatus(paid.ID))
	require.Equal(t, []string{orders.TicketVoid}, e.ticketStatuses(paid.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM inventory WHERE event_id = $1 AND status <> 'AVAILABLE'
		AND NOT (status = 'HELD' AND expires_at <= now())`, e.ev.ID))

	_, err = e.holds.Create(e.ctx, carol, holds.CreateRequest{EventID: e.ev.ID, IdempotencyKey: "late", SeatIDs: []string{e.ev.Seats[5]}})
	require.ErrorIs(t, err, apperr.ErrSaleNotOpen)

	e.waitPayment(paid.ID, 1, orders.PaymentRefunded)
	e.waitPayment(waiting.ID, 1, orders.PaymentCancelled)
	require.Equal(t, payments.StatusRefunded, e.providerStatus(paidPay))
	require.Equal(t, payments.StatusCancelled, e.providerStatus(waitingPay))

	// A repeat changes nothing.
	require.NoError(t, e.svc.CancelEvent(e.ctx, admin, e.ev.ID, "again"))
	var at2 time.Time
	var reason string
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT cancelled_at, cancel_reason FROM events WHERE id = $1`, e.ev.ID).Scan(&at2, &reason))
	require.Equal(t, at1, at2)
	require.Equal(t, "storm", reason)
	require.Equal(t, []string{"UNKNOWN", "PENDING", "SUCCEEDED", "REFUND_PENDING", "REFUNDED"}, e.statuses(paidPay.ID))
	e.auditClean()
}

// checkIn: 50 concurrent scans of one code admit exactly one; the others
// read ALREADY_USED. Another event's door says OTHER_EVENT, a forged or
// foreign-key code INVALID_CODE (no ticket), a refunded order's ticket
// VOID; a buyer without the staff role is refused.
func TestCheckInAdmitsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice := user("alice")
	_, o, _ := e.confirmed(alice, 0)
	_, o2, _ := e.confirmed(alice, 1)
	ts, err := e.svc.Tickets(e.ctx, o.ID)
	require.NoError(t, err)
	code := ts[0].Code

	_, err = e.svc.CheckIn(e.ctx, alice, e.ev.ID, code)
	require.ErrorIs(t, err, apperr.ErrForbidden)

	r, err := e.svc.CheckIn(e.ctx, staff, uuid.NewString(), code)
	require.NoError(t, err)
	require.False(t, r.Admitted)
	require.Equal(t, orders.ReasonOtherEvent, r.Reason)
	require.Equal(t, ts[0].ID, r.Ticket.ID)

	const n = 50
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted int
		reasons  = map[string]int{}
	)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := e.svc.CheckIn(e.ctx, staff, e.ev.ID, code)
			if !assertNoError(t, err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if r.Admitted {
				admitted++
			} else {
				reasons[r.Reason]++
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Equal(t, 1, admitted)
	require.Equal(t, map[string]int{orders.ReasonAlreadyUsed: n - 1}, reasons)
	require.Equal(t, []string{orders.TicketUsed}, e.ticketStatuses(o.ID))

	// Forged: signed with another key, or tampered.
	other, err := tickets.ParseKeys("not-our-ticket-key-0123456789")
	require.NoError(t, err)
	forged, err := other.Sign(tickets.Claims{TicketID: ts[0].ID, EventID: e.ev.ID})
	require.NoError(t, err)
	for _, c := range []string{forged, code + "x", "garbage"} {
		r, err := e.svc.CheckIn(e.ctx, staff, e.ev.ID, c)
		require.NoError(t, err)
		require.Equal(t, orders.CheckInResult{Reason: orders.ReasonInvalidCode}, r)
	}

	// A refunded order's ticket is VOID at the door.
	future := time.Now().Add(time.Hour)
	e.setRefundDeadline(&future)
	_, err = e.svc.RequestRefund(e.ctx, alice, o2.ID, "r1")
	require.NoError(t, err)
	ts2, err := e.svc.Tickets(e.ctx, o2.ID)
	require.NoError(t, err)
	r, err = e.svc.CheckIn(e.ctx, admin, e.ev.ID, ts2[0].Code)
	require.NoError(t, err)
	require.False(t, r.Admitted)
	require.Equal(t, orders.ReasonVoid, r.Reason)
}

// assertNoError reports err on t from any goroutine.
func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
