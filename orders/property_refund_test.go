package orders_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// requestRefundStep is the buyer's requestRefund, drawn among the
// notifications.
const requestRefundStep = "buyer.requestRefund"

// TestStateMachineWithRefundsAndDisputes extends the random notification
// sequences with the after-sale paths: provider refunds and disputes of
// the payment (also of the one that confirmed the order) and the buyer's
// requestRefund, in any order and with duplicates, the hold sometimes
// expired. A model of the payment and order states predicts the outcome;
// the seats and tickets must agree with the order (CONFIRMED: sold with
// valid tickets; REFUNDED: seats back on sale, tickets VOID; otherwise
// nothing sold), and the audit finds nothing wrong.
func TestStateMachineWithRefundsAndDisputes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	deadline := time.Now().Add(24 * time.Hour)
	e.setRefundDeadline(&deadline)
	seat := 0
	rapid.Check(t, func(rt *rapid.T) {
		u, o, p, expired := e.propertyOrder(rt, &seat, func() { e.setRefundDeadline(&deadline) })
		steps := []string{payments.EventPaymentSucceeded, payments.EventPaymentFailed, payments.EventPaymentCancelled,
			payments.EventRefundSucceeded, payments.EventPaymentDisputed, requestRefundStep}
		distinct := rapid.SliceOfNDistinct(rapid.SampledFrom(steps), 1, len(steps), func(s string) string { return s }).Draw(rt, "steps")
		var seq []int
		for i := range distinct {
			for range rapid.IntRange(1, 2).Draw(rt, fmt.Sprintf("copies%d", i)) {
				seq = append(seq, i)
			}
		}
		seq = rapid.Permutation(seq).Draw(rt, "order")

		// The model, and the real thing step by step.
		pay, ord := orders.PaymentPending, orders.OrderAwaitingPayment
		for n, i := range seq {
			step := distinct[i]
			if step == requestRefundStep {
				_, err := e.svc.RequestRefund(e.ctx, u, o.ID, fmt.Sprintf("r%d", n))
				if ord == orders.OrderConfirmed {
					require.NoError(rt, err)
					ord, pay = orders.OrderRefunded, orders.PaymentRefundPending
				} else {
					require.True(rt, errors.Is(err, apperr.ErrRefundNotAllowed), "refund of a %s order: %v", ord, err)
				}
				continue
			}
			note := payments.Notification{ID: fmt.Sprintf("evt_%s_%d", p.ID, i), Type: step,
				Payment: payments.ProviderPayment{ID: *p.ProviderRef, Reference: p.ID, Amount: p.Amount, Currency: p.Currency}}
			if step == payments.EventPaymentDisputed {
				note.Payment.Status, note.Payment.FailureCode = payments.StatusRefunded, payments.FailureDisputed
			}
			require.NoError(rt, e.svc.ApplyNotification(e.ctx, "sandbox", note, []byte(`{}`)))
			to := map[string]string{
				payments.EventPaymentSucceeded: orders.PaymentSucceeded,
				payments.EventPaymentFailed:    orders.PaymentFailed,
				payments.EventPaymentCancelled: orders.PaymentCancelled,
				payments.EventRefundSucceeded:  orders.PaymentRefunded,
				payments.EventPaymentDisputed:  orders.PaymentRefunded,
			}[step]
			if !orders.CanTransition(pay, to) {
				continue
			}
			from := pay
			pay = to
			switch {
			case to == orders.PaymentSucceeded && (ord == orders.OrderAwaitingPayment || ord == orders.OrderPaymentFailed) && !expired:
				ord = orders.OrderConfirmed
			case to == orders.PaymentSucceeded:
				pay = orders.PaymentRefundPending
				if ord == orders.OrderAwaitingPayment || ord == orders.OrderPaymentFailed {
					ord = orders.OrderExpired
				}
			case to == orders.PaymentRefunded && from == orders.PaymentSucceeded && ord == orders.OrderConfirmed:
				ord = orders.OrderRefunded
			case orders.Open(from) && ord == orders.OrderAwaitingPayment:
				ord = orders.OrderPaymentFailed
			}
		}

		got := e.payments(o.ID)[0]
		require.Equal(rt, pay, got.Status, "payment after %v of %v", seq, distinct)
		gotOrder, err := e.st.GetOrder(e.ctx, o.ID)
		require.NoError(rt, err)
		require.Equal(rt, ord, gotOrder.Status, "order after %v of %v", seq, distinct)
		sold := e.count(`SELECT count(*) FROM inventory WHERE order_id = $1 AND status = 'SOLD'`, o.ID)
		valid := e.count(`SELECT count(*) FROM tickets WHERE order_id = $1 AND status = 'VALID'`, o.ID)
		void := e.count(`SELECT count(*) FROM tickets WHERE order_id = $1 AND status = 'VOID'`, o.ID)
		switch ord {
		case orders.OrderConfirmed:
			require.Equal(rt, []int{2, 2, 0}, []int{sold, valid, void})
			require.Equal(rt, orders.PaymentSucceeded, got.Status, "a confirmed order keeps its money")
		case orders.OrderRefunded:
			require.Equal(rt, []int{0, 0, 2}, []int{sold, valid, void})
			require.Contains(rt, []string{orders.PaymentRefundPending, orders.PaymentRefunded}, got.Status)
		default:
			require.Equal(rt, []int{0, 0, 0}, []int{sold, valid, void})
		}
	})
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{})
	require.NoError(t, err)
	require.Empty(t, r.Anomalies)
}
