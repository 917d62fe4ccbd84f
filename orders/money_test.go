package orders_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// otherInstance is a second API instance on the same database whose
// PUBLIC_BASE_URL differs (the flash-sale PROVIDER_MISMATCH setup).
func (e *env) otherInstance(p payments.Provider) *orders.Service {
	e.t.Helper()
	svc, err := orders.New(e.st, orders.Config{
		Provider:       p,
		PublicBaseURL:  "http://instance-b.test",
		ReconcileAfter: time.Millisecond,
		TicketKeys:     ticketKeys,
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(e.t, err)
	return svc
}

func (e *env) statuses(paymentID string) []string {
	e.t.Helper()
	evs, err := e.st.PaymentEvents(e.ctx, paymentID)
	require.NoError(e.t, err)
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ToStatus)
	}
	return out
}

// (a) A create repeated by another instance sends the persisted request:
// the provider replays the same payment. A 422 on a repeat (a body that
// differs) leaves the attempt UNKNOWN, never FAILED; it settles once the
// original request is repeated, and the buyer's payment confirms.
func TestRepeatedCreateFromOtherInstanceNeverFails(t *testing.T) {
	t.Parallel()
	u := user("alice")
	e, o, p := newUnansweredEnv(t, u)
	require.NotNil(t, p.Request)
	require.Equal(t, e.srv.URL+"/webhooks/payments", p.Request.WebhookURL)
	require.JSONEq(t, `{"create_timeout": true}`, p.Request.Simulate)

	// Instance B rebuilt from its own base URL would be refused (422).
	_, err := e.sb.CreatePayment(e.ctx, payments.CreateRequest{Amount: p.Amount, Currency: p.Currency, Reference: p.ID,
		WebhookURL: "http://instance-b.test/webhooks/payments", ReturnURL: "http://instance-b.test/orders/" + o.ID,
		IdempotencyKey: p.IdempotencyKey, Simulate: map[string]any{"create_timeout": true}})
	require.ErrorIs(t, err, payments.ErrIdempotencyKeyReused)

	// The 422 path in the engine: a repeat whose body differs (as rows
	// created before the request was persisted, repeated elsewhere).
	_, err = e.pool.Exec(e.ctx, `UPDATE payments SET request_return_url = 'http://instance-b.test/x' WHERE id = $1`, p.ID)
	require.NoError(t, err)
	b := e.otherInstance(e.sb)
	_, err = b.RetryPayment(e.ctx, u, o.ID, "r1")
	require.ErrorIs(t, err, apperr.ErrPaymentInProgress)
	_, err = b.Reconcile(e.ctx)
	require.ErrorIs(t, err, payments.ErrIdempotencyKeyReused)
	require.Equal(t, orders.PaymentUnknown, e.payments(o.ID)[0].Status)
	require.Equal(t, orders.OrderAwaitingPayment, e.order(u, o.ID).Status)

	// Instance B with the persisted request: the same payment, PENDING.
	_, err = e.pool.Exec(e.ctx, `UPDATE payments SET request_return_url = $2 WHERE id = $1`, p.ID, e.srv.URL+"/orders/"+o.ID)
	require.NoError(t, err)
	_, err = b.RetryPayment(e.ctx, u, o.ID, "r2")
	require.ErrorIs(t, err, apperr.ErrPaymentInProgress)
	p = e.lastPayment(o.ID)
	require.Equal(t, orders.PaymentPending, p.Status)
	require.Equal(t, 1, providerCharges(t, p.ID))

	pay(t, *p.CheckoutURL, "succeed")
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	require.NotContains(t, e.statuses(p.ID), orders.PaymentFailed)
	require.Equal(t, 1, providerCharges(t, p.ID))
	e.auditClean()
}

// staleRefusal answers a create with a definite refusal after letting
// another instance record the provider's answer first (the refusal is
// decided on a stale read of the payment).
type staleRefusal struct {
	payments.Provider
	before func()
}

func (s staleRefusal) CreatePayment(ctx context.Context, r payments.CreateRequest) (payments.ProviderPayment, error) {
	s.before()
	return payments.ProviderPayment{}, fmt.Errorf("create payment: %w", payments.ErrRejected)
}

// (a') A refusal decided on the status read (UNKNOWN) does not overwrite
// the PENDING another instance recorded meanwhile.
func TestStaleRefusalDoesNotFailPendingPayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{httpTimeout: 300 * time.Millisecond, simulate: map[string]any{"create_timeout": true}})
	u := user("alice")
	h := e.hold(u, []int{0}, 0)
	o, err := e.svc.Create(e.ctx, u, h.ID, "k1")
	require.NoError(t, err)
	require.Equal(t, orders.PaymentUnknown, e.payments(o.ID)[0].Status)
	b := e.otherInstance(staleRefusal{Provider: e.sb, before: func() {
		_, err := e.svc.RetryPayment(e.ctx, u, o.ID, "ra") // instance A resolves: PENDING
		require.ErrorIs(t, err, apperr.ErrPaymentInProgress)
	}})
	_, err = b.RetryPayment(e.ctx, u, o.ID, "rb")
	require.ErrorIs(t, err, apperr.ErrPaymentInProgress)
	p := e.lastPayment(o.ID)
	require.Equal(t, orders.PaymentPending, p.Status)
	require.Equal(t, []string{"UNKNOWN", "PENDING", "PENDING"}, e.statuses(p.ID)) // the last one: the ignored refusal
	pay(t, *p.CheckoutURL, "succeed")
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	e.auditClean()
}

// markFailed records a payment FAILED (and its order PAYMENT_FAILED) as the
// bug did, while the provider still has it pending.
func (e *env) markFailed(p orders.Payment) {
	e.t.Helper()
	ok, err := e.st.TransitionPayment(e.ctx, p.ID, orders.PaymentPending, orders.PaymentFailed, "test: wrongly failed")
	require.NoError(e.t, err)
	require.True(e.t, ok)
	require.NoError(e.t, e.st.SetOrderStatus(e.ctx, p.OrderID, orders.OrderPaymentFailed))
}

// (b) A verified success for a payment we recorded FAILED confirms the
// order while it is confirmable, and is refunded when it is not: never a
// charge without order or refund.
func TestSuccessForFailedPaymentConfirmsOrRefunds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true})
	alice, bob := user("alice"), user("bob")

	// Still confirmable: CONFIRMED.
	h := e.hold(alice, []int{0}, 0)
	o, err := e.svc.Create(e.ctx, alice, h.ID, "k1")
	require.NoError(t, err)
	p := e.lastPayment(o.ID)
	e.markFailed(p)
	pay(t, *p.CheckoutURL, "succeed")
	e.waitOrder(alice, o.ID, orders.OrderConfirmed)
	require.Equal(t, orders.PaymentSucceeded, e.payments(o.ID)[0].Status)
	require.Equal(t, []string{"UNKNOWN", "PENDING", "FAILED", "SUCCEEDED"}, e.statuses(p.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1 AND status = 'VALID'`, o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND to_status = 'SUCCEEDED' AND reason LIKE '%overrides our FAILED%'`, p.ID))

	// Hold expired and seat re-taken: REFUNDED, the seat stays with bob.
	h2 := e.hold(alice, []int{1}, 0)
	o2, err := e.svc.Create(e.ctx, alice, h2.ID, "k2")
	require.NoError(t, err)
	p2 := e.lastPayment(o2.ID)
	e.markFailed(p2)
	e.expireHold(h2.ID)
	hb := e.hold(bob, []int{1}, 0)
	pay(t, *p2.CheckoutURL, "succeed")
	e.waitPayment(o2.ID, 1, orders.PaymentRefunded)
	require.NotEqual(t, orders.OrderConfirmed, e.order(alice, o2.ID).Status)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM inventory WHERE hold_id = $1 AND status = 'HELD'`, hb.ID))
	pp, err := e.sb.GetPayment(e.ctx, *p2.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, payments.StatusRefunded, pp.Status)
	e.auditClean()
}

// A late success of an old attempt, after the buyer retried (a second
// attempt is open) and the hold ran out: the charge is refunded and the
// open retry is voided too, or the provider could still take money on it.
func TestLateSuccessOfOldAttemptVoidsTheRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice := user("alice")
	h, o, p1 := e.checkout(alice, 0)
	e.markFailed(p1)
	_, err := e.svc.RetryPayment(e.ctx, alice, o.ID, "r1")
	require.NoError(t, err)
	p2 := e.waitPayment(o.ID, 2, orders.PaymentPending)
	e.expireHold(h.ID)
	pay(t, *p1.CheckoutURL, "succeed") // the buyer pays the first attempt from an old tab

	// Applied before any reconciler pass could expire the order (no
	// workers yet): the late charge itself must void the retry.
	e.waitPayment(o.ID, 1, orders.PaymentRefundPending)
	require.Equal(t, orders.OrderExpired, e.order(alice, o.ID).Status)
	e.startWorkers()
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	e.waitPayment(o.ID, 2, orders.PaymentCancelled)
	pp, err := e.sb.GetPayment(e.ctx, *p2.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, payments.StatusCancelled, pp.Status)
	require.Equal(t, orders.OrderExpired, e.order(alice, o.ID).Status)
	e.auditClean()
}

// (c) Concurrent transitions of one payment: the compare-and-set keeps
// exactly one winner, and concurrent notifications leave one consistent
// story.
func TestConcurrentTransitionsOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	_, o, p := e.checkout(u, 0)

	targets := []string{orders.PaymentFailed, orders.PaymentCancelled, orders.PaymentSucceeded, orders.PaymentRefunded}
	var wg sync.WaitGroup
	wins := make(chan string, 4*len(targets))
	for i := range 4 * len(targets) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := targets[i%len(targets)]
			ok, err := e.st.TransitionPayment(e.ctx, p.ID, orders.PaymentPending, to, "race")
			require.NoError(t, err)
			if ok {
				wins <- to
			}
		}()
	}
	wg.Wait()
	close(wins)
	var won []string
	for w := range wins {
		won = append(won, w)
	}
	require.Len(t, won, 1)
	require.Equal(t, won[0], e.payments(o.ID)[0].Status)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND from_status = 'PENDING' AND to_status <> 'PENDING'`, p.ID))

	// Through the engine: failed, cancelled and succeeded notifications at
	// once, with copies. Success wins (the provider's word about money),
	// the order is confirmed once, each transition recorded once.
	h2 := e.hold(u, []int{1}, 0)
	o2, err := e.svc.Create(e.ctx, u, h2.ID, "k2")
	require.NoError(t, err)
	p2 := e.lastPayment(o2.ID)
	types := []string{payments.EventPaymentFailed, payments.EventPaymentCancelled, payments.EventPaymentSucceeded}
	for i := range 3 * len(types) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			typ := types[i%len(types)]
			body, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("evt_race_%s_%d", p2.ID, i%len(types)), "type": typ,
				"created": time.Now().Unix(), "data": map[string]any{"id": *p2.ProviderRef, "reference": p2.ID,
					"amount": p2.Amount, "currency": p2.Currency}})
			require.Equal(t, http.StatusOK, e.post(body, payments.Sign(testSecret, time.Now(), body)))
		}()
	}
	wg.Wait()
	require.Equal(t, orders.PaymentSucceeded, e.payments(o2.ID)[0].Status)
	require.Equal(t, orders.OrderConfirmed, e.order(u, o2.ID).Status)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND to_status = 'SUCCEEDED'`, p2.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM tickets WHERE order_id = $1`, o2.ID))
}

// Payments the provider keeps reporting unchanged (buyers sitting on the
// checkout page) never starve the reconciler: each pass looks at the least
// recently looked-at ones first, so a paid attempt whose notification was
// lost is found on the next pass even when the pending ones fill a batch.
func TestReconcilerIsNotStarvedByPendingPayments(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{simulate: map[string]any{"drop_webhooks": true}})
	svc, err := orders.New(e.st, orders.Config{Provider: e.sb, PublicBaseURL: e.srv.URL, TicketKeys: ticketKeys,
		ReconcileAfter: time.Second, ReconcileBatch: 3, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	var paid orders.Order
	for i := range 4 {
		u := user(fmt.Sprintf("fan-%d", i))
		o, err := e.svc.Create(e.ctx, u, e.hold(u, []int{i}, 0).ID, "k")
		require.NoError(t, err)
		p := e.lastPayment(o.ID)
		age := "3 minutes" // pending at the provider, and older
		if i == 3 {
			pay(t, *p.CheckoutURL, "succeed") // its notification is dropped
			paid, age = o, "1 minute"
		}
		_, err = e.pool.Exec(e.ctx, `UPDATE payments SET updated_at = now() - $2::interval WHERE id = $1`, p.ID, age)
		require.NoError(t, err)
	}
	_, err = svc.Reconcile(e.ctx) // the three older, still pending
	require.NoError(t, err)
	require.Equal(t, orders.OrderAwaitingPayment, e.order(user("fan-3"), paid.ID).Status)
	_, err = svc.Reconcile(e.ctx) // then the paid one
	require.NoError(t, err)
	require.Equal(t, orders.OrderConfirmed, e.order(user("fan-3"), paid.ID).Status)
	e.auditClean()
}
