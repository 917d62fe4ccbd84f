package orders_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/orders"
)

// A create the provider never answered, older than the provider's
// idempotency window, is not repeated (a repeat could open a second
// charge): it stays UNKNOWN, the audit and the gauge report it for a
// person to resolve, and a late notification still settles it.
func TestUnknownCreatePastKeyWindowIsNotRepeated(t *testing.T) {
	t.Parallel()
	u := user("alice")
	e, o, p := newUnansweredEnv(t, u)

	_, err := e.pool.Exec(e.ctx, `UPDATE payments SET created_at = now() - interval '24 hours', updated_at = now() - interval '24 hours' WHERE id = $1`, p.ID)
	require.NoError(t, err)
	_, err = e.svc.Reconcile(e.ctx)
	require.NoError(t, err)
	p = e.payments(o.ID)[0]
	require.Equal(t, orders.PaymentUnknown, p.Status, "not repeated: a repeat would have learnt the payment (PENDING)")
	require.Nil(t, p.ProviderRef)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.svc.Collectors()...)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ticketing_payments_unknown_stuck Payment attempts whose create was never answered within the provider's idempotency window (not repeated: resolve at the provider), as of the last reconciliation.
# TYPE ticketing_payments_unknown_stuck gauge
ticketing_payments_unknown_stuck 1
`), "ticketing_payments_unknown_stuck"))
	r, err := audit.Run(e.ctx, e.st, e.ev.ID, audit.Options{Provider: e.sb})
	require.NoError(t, err)
	require.Len(t, r.Anomalies, 1)
	require.Equal(t, "PAYMENT_OUTCOME_UNKNOWN", r.Anomalies[0].Kind)
	require.Contains(t, r.Anomalies[0].Detail, "reference "+p.ID)

	// The buyer had paid it at the provider: its notification settles it.
	pay(t, paysimURL+"/checkout/"+paysimPaymentID(t, p.ID), "succeed")
	e.waitOrder(u, o.ID, orders.OrderConfirmed)
	require.Equal(t, 1, providerCharges(t, p.ID))
	e.auditClean()
}
