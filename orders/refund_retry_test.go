package orders_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// failRefunds drops the first n refund requests to the provider on the
// network path (the provider never sees them).
type failRefunds struct {
	n, failed atomic.Int32
}

func (f *failRefunds) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/refunds" && f.failed.Load() < f.n.Load() {
		f.failed.Add(1)
		return nil, errors.New("connection reset by peer")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A compensation whose refund call fails is retried by its job (river,
// with backoff) until the provider confirms it: the money ends refunded
// once, and the payment's history shows a single REFUND_PENDING ->
// REFUNDED.
func TestRefundRetriedUntilConfirmed(t *testing.T) {
	t.Parallel()
	ft := &failRefunds{}
	ft.n.Store(2)
	e := newEnv(t, envOpts{transport: ft})
	h, o, p := e.checkout(user("alice"), 0)
	e.expireHold(h.ID)
	pay(t, *p.CheckoutURL, "succeed") // a late charge
	e.waitPayment(o.ID, 1, orders.PaymentRefundPending)

	e.startWorkers()
	e.waitPayment(o.ID, 1, orders.PaymentRefunded)
	require.Equal(t, int32(2), ft.failed.Load(), "the first two refund calls failed")
	pp, err := e.sb.GetPayment(e.ctx, *p.ProviderRef)
	require.NoError(t, err)
	require.Equal(t, payments.StatusRefunded, pp.Status)
	require.Equal(t, []string{"UNKNOWN", "PENDING", "SUCCEEDED", "REFUND_PENDING", "REFUNDED"}, e.statuses(p.ID))
	e.auditClean()
}
