package orders_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// dispute opens a chargeback on a paysim payment, as a cardholder's bank
// would.
func dispute(t *testing.T, providerRef string) {
	t.Helper()
	resp, err := http.Post(paysimURL+"/v1/payments/"+providerRef+"/dispute", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func (e *env) reversalGauges(want string) {
	e.t.Helper()
	_, err := e.svc.Reconcile(e.ctx)
	require.NoError(e.t, err)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.svc.Collectors()...)
	require.NoError(e.t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ticketing_payments_reversed_by_provider Payments the provider reversed on its own (a dashboard refund, a chargeback, a partial refund), by kind, as of the last reconciliation.
# TYPE ticketing_payments_reversed_by_provider gauge
`+want), "ticketing_payments_reversed_by_provider"))
}

// A refund made at the provider (paysim POST /v1/refunds, as a merchant's
// dashboard would) of the payment that confirmed an order: the
// notification makes the payment REFUNDED and, in the same transaction,
// the order REFUNDED, its ticket VOID and its seat AVAILABLE (outbox row
// for the live map); nothing is refunded twice; the gauge counts it; the
// seat sells again and the audit is clean. (Before: the order stayed
// CONFIRMED with a VALID ticket and a SOLD seat, no money behind them.)
func TestProviderRefundOfConfirmingPaymentRefundsTheOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true})
	alice, bob := user("alice"), user("bob")
	_, o, p := e.confirmed(alice, 0)
	e.reversalGauges(`ticketing_payments_reversed_by_provider{kind="dispute"} 0
ticketing_payments_reversed_by_provider{kind="partial_refund"} 0
ticketing_payments_reversed_by_provider{kind="refund"} 0
`)

	_, err := e.sb.Refund(e.ctx, *p.ProviderRef, "dashboard-1")
	require.NoError(t, err)
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	require.Equal(t, orders.OrderRefunded, e.storedOrderStatus(o.ID))
	require.Equal(t, []string{orders.TicketVoid}, e.ticketStatuses(o.ID))
	require.Equal(t, "AVAILABLE", e.seatStatus(0))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM outbox WHERE payload->>'kind' = 'refund' AND payload->>'orderId' = $1`, o.ID))
	require.Equal(t, []string{"UNKNOWN", "PENDING", "SUCCEEDED", "REFUNDED"}, e.statuses(p.ID))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM river_job WHERE kind = 'orders.refund'`))
	e.reversalGauges(`ticketing_payments_reversed_by_provider{kind="dispute"} 0
ticketing_payments_reversed_by_provider{kind="partial_refund"} 0
ticketing_payments_reversed_by_provider{kind="refund"} 1
`)

	_, ob, _ := e.confirmed(bob, 0)
	require.Equal(t, []string{orders.TicketValid}, e.ticketStatuses(ob.ID))
	e.auditClean()
}

// A chargeback of the confirming payment (paysim's dispute: refunded with
// failure_code disputed, payment.disputed) refunds the order the same way,
// counted as a dispute.
func TestDisputeOfConfirmingPaymentRefundsTheOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice := user("alice")
	_, o, p := e.confirmed(alice, 0)
	dispute(t, *p.ProviderRef)
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	require.Equal(t, orders.OrderRefunded, e.storedOrderStatus(o.ID))
	require.Equal(t, []string{orders.TicketVoid}, e.ticketStatuses(o.ID))
	require.Equal(t, "AVAILABLE", e.seatStatus(0))
	pp, err := e.sb.GetPayment(e.ctx, *p.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, payments.StatusRefunded, pp.Status)
	require.Equal(t, payments.FailureDisputed, pp.FailureCode)
	e.reversalGauges(`ticketing_payments_reversed_by_provider{kind="dispute"} 1
ticketing_payments_reversed_by_provider{kind="partial_refund"} 0
ticketing_payments_reversed_by_provider{kind="refund"} 0
`)
	e.auditClean()
}

// A partial refund the provider reports (Stripe's charge.refunded with
// amount_refunded < amount) is not a refund of the payment: the order stays
// CONFIRMED and the payment SUCCEEDED, the payment's history says so, the
// gauge counts it, and the audit reports PARTIAL_REFUND for a person to
// decide.
func TestPartialRefundKeepsTheOrderAndIsAnAnomaly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	alice := user("alice")
	_, o, p := e.confirmed(alice, 0)
	n := payments.Notification{ID: "evt_partial_" + p.ID, Type: payments.EventRefundPartial,
		Payment: payments.ProviderPayment{ID: *p.ProviderRef, Status: payments.StatusSucceeded, Amount: p.Amount,
			Currency: p.Currency, RefundedAmount: 1000}}
	require.NoError(t, e.svc.ApplyNotification(e.ctx, "sandbox", n, nil))
	require.Equal(t, orders.OrderConfirmed, e.storedOrderStatus(o.ID))
	require.Equal(t, orders.PaymentSucceeded, e.payments(o.ID)[0].Status)
	require.Equal(t, []string{orders.TicketValid}, e.ticketStatuses(o.ID))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND reason LIKE '%1000 EUR of 5000 refunded (partial%'`, p.ID))
	e.reversalGauges(`ticketing_payments_reversed_by_provider{kind="dispute"} 0
ticketing_payments_reversed_by_provider{kind="partial_refund"} 1
ticketing_payments_reversed_by_provider{kind="refund"} 0
`)
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{})
	require.NoError(t, err)
	require.Len(t, r.Anomalies, 1, "%+v", r.Anomalies)
	require.Equal(t, "PARTIAL_REFUND", r.Anomalies[0].Kind)
}

// A refund made at paysim whose notification is lost (drop_webhooks): the
// reconciler, asking again about recently SUCCEEDED payments, finds it and
// refunds the order as the notification would have (ticket VOID, seat
// AVAILABLE), counted as a provider refund. Without the recheck the order
// stays CONFIRMED with no money behind it.
func TestReconcilerFindsALostRefundNotification(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{simulate: map[string]any{"drop_webhooks": true}})
	alice := user("alice")
	_, o, p := e.checkout(alice, 0)
	pay(t, *p.CheckoutURL, "succeed")
	require.Eventually(t, func() bool {
		_, err := e.svc.Reconcile(e.ctx)
		return err == nil && e.storedOrderStatus(o.ID) == orders.OrderConfirmed
	}, 30*time.Second, 200*time.Millisecond, "confirmed by the reconciler (its notification dropped)")

	_, err := e.sb.Refund(e.ctx, *p.ProviderRef, "dashboard-lost-"+o.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := e.svc.Reconcile(e.ctx)
		return err == nil && e.storedOrderStatus(o.ID) == orders.OrderRefunded
	}, 30*time.Second, 200*time.Millisecond, "the lost refund found by the reconciler")
	require.Equal(t, orders.PaymentRefunded, e.payments(o.ID)[0].Status)
	require.Equal(t, []string{orders.TicketVoid}, e.ticketStatuses(o.ID))
	require.Equal(t, "AVAILABLE", e.seatStatus(0))
	e.reversalGauges(`ticketing_payments_reversed_by_provider{kind="dispute"} 0
ticketing_payments_reversed_by_provider{kind="partial_refund"} 0
ticketing_payments_reversed_by_provider{kind="refund"} 1
`)
	e.auditClean()
}
