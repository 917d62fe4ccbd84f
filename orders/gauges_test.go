package orders_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/orders"
)

// The money gauges the README tells operators to alert on follow the
// payments: a compensation under way, and a charge whose order is not
// confirmed and has no refund under way.
func TestMoneyGauges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	u := user("alice")
	gauges := func(want string) {
		t.Helper()
		_, err := e.svc.Reconcile(e.ctx)
		require.NoError(t, err)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(e.svc.Collectors()...)
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ticketing_payments_without_order Succeeded payments whose order is not confirmed (compensation due), as of the last reconciliation.
# TYPE ticketing_payments_without_order gauge
# HELP ticketing_pending_compensations Payments REFUND_PENDING, as of the last reconciliation.
# TYPE ticketing_pending_compensations gauge
`+want), "ticketing_payments_without_order", "ticketing_pending_compensations"))
	}
	gauges("ticketing_payments_without_order 0\nticketing_pending_compensations 0\n")

	// A late charge: compensated, its refund not yet run (no workers).
	h, o, p := e.checkout(u, 0)
	e.expireHold(h.ID)
	pay(t, *p.CheckoutURL, "succeed")
	e.waitPayment(o.ID, 1, orders.PaymentRefundPending)
	gauges("ticketing_payments_without_order 0\nticketing_pending_compensations 1\n")

	// A charge left SUCCEEDED on an order that is not confirmed (planted).
	_, _, p2 := e.checkout(u, 1)
	_, err := e.pool.Exec(e.ctx, `UPDATE payments SET status = 'SUCCEEDED' WHERE id = $1`, p2.ID)
	require.NoError(t, err)
	gauges("ticketing_payments_without_order 1\nticketing_pending_compensations 1\n")
}
