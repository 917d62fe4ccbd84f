package orders_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// TestStateMachineUnderRandomWebhooks delivers random sequences of
// notifications (with duplicates and in any order) about one payment, with
// the hold sometimes expired first, and checks the outcome against a model
// of the state machine (success and refund override FAILED and CANCELLED):
// the payment ends where the model says, a delivered success is never left
// FAILED or CANCELLED, the order
// is confirmed exactly when a success came while the hold was active, the
// seats and tickets agree, every transition is recorded once, and the
// audit finds nothing wrong.
func TestStateMachineUnderRandomWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	seat := 0
	rapid.Check(t, func(rt *rapid.T) {
		_, o, p, expired := e.propertyOrder(rt, &seat, nil)
		types := []string{payments.EventPaymentSucceeded, payments.EventPaymentFailed, payments.EventPaymentCancelled}
		if expired {
			types = append(types, payments.EventRefundSucceeded) // only a late charge is refunded
		}
		distinct := rapid.SliceOfNDistinct(rapid.SampledFrom(types), 1, len(types), func(s string) string { return s }).Draw(rt, "events")
		// Deliveries: each distinct notification at least once, some
		// duplicated, in a random order.
		var seq []int
		for i := range distinct {
			for range rapid.IntRange(1, 3).Draw(rt, fmt.Sprintf("copies%d", i)) {
				seq = append(seq, i)
			}
		}
		seq = rapid.Permutation(seq).Draw(rt, "order")

		// The model.
		status, confirmed, late, transitions := orders.PaymentPending, false, false, 0
		seen := map[int]bool{}
		for _, i := range seq {
			if seen[i] {
				continue
			}
			seen[i] = true
			to := map[string]string{
				payments.EventPaymentSucceeded: orders.PaymentSucceeded,
				payments.EventPaymentFailed:    orders.PaymentFailed,
				payments.EventPaymentCancelled: orders.PaymentCancelled,
				payments.EventRefundSucceeded:  orders.PaymentRefunded,
			}[distinct[i]]
			if !orders.CanTransition(status, to) {
				continue
			}
			status = to
			transitions++
			if to == orders.PaymentSucceeded {
				if expired {
					status, late = orders.PaymentRefundPending, true
					transitions++
				} else {
					confirmed = true
				}
			}
		}

		for _, i := range seq {
			note := payments.Notification{ID: fmt.Sprintf("evt_%s_%d", p.ID, i), Type: distinct[i],
				Payment: payments.ProviderPayment{ID: *p.ProviderRef, Reference: p.ID, Amount: p.Amount, Currency: p.Currency}}
			require.NoError(rt, e.svc.ApplyNotification(e.ctx, "sandbox", note, []byte(`{}`)))
		}

		got := e.payments(o.ID)[0]
		require.Equal(rt, status, got.Status, "sequence %v of %v", seq, distinct)
		// The provider's word about money wins: once a success was
		// delivered, the payment is never left FAILED or CANCELLED (it
		// confirmed the order, or is being or was refunded).
		if slices.Contains(distinct, payments.EventPaymentSucceeded) {
			require.Contains(rt, []string{orders.PaymentSucceeded, orders.PaymentRefundPending, orders.PaymentRefunded}, got.Status)
			if !expired {
				require.True(rt, confirmed, "a success while the hold is active confirms")
			}
		}
		ord, err := e.st.GetOrder(e.ctx, o.ID)
		require.NoError(rt, err)
		sold := e.count(`SELECT count(*) FROM inventory WHERE order_id = $1 AND status = 'SOLD'`, o.ID)
		tks := e.count(`SELECT count(*) FROM tickets WHERE order_id = $1 AND status = 'VALID'`, o.ID)
		if confirmed {
			require.Equal(rt, orders.OrderConfirmed, ord.Status)
			require.Equal(rt, 2, sold)
			require.Equal(rt, 2, tks)
		} else {
			require.NotEqual(rt, orders.OrderConfirmed, ord.Status)
			require.Zero(rt, sold)
			require.Zero(rt, tks)
		}
		if late {
			require.Equal(rt, orders.OrderExpired, ord.Status)
		}
		// Every transition recorded once (plus the opening UNKNOWN and PENDING).
		require.Equal(rt, transitions+2, e.count(`SELECT count(*) FROM payment_events WHERE payment_id = $1 AND from_status IS DISTINCT FROM to_status`, p.ID))
		require.Equal(rt, len(distinct), e.count(`SELECT count(*) FROM webhook_inbox WHERE id LIKE $1`, "evt_"+p.ID+"_%"))
	})
	// REFUND_PENDING is fine within the grace; nothing else may be wrong.
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{})
	require.NoError(t, err)
	require.Empty(t, r.Anomalies)
}
