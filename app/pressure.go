package app

import (
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/internal/recent"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/queue"
)

// checkoutGauges measure the parts of checkout the hold path does not
// report itself: the payment provider's calls, the application of its
// notifications (a verified webhook up to the order's CONFIRMED: the
// orders engine applies it before answering), and the wait for Postgres
// connections.
type checkoutGauges struct {
	provider *payments.Gauge
	confirm  recent.Latency
	pools    poolWait
}

// CheckoutPressure is the adaptive admission controller's view of checkout
// (queue.Deps.Pressure). The services are built after the queue, before
// any controller pass runs; until then their parts read zero.
func (a *App) CheckoutPressure() queue.Pressure {
	var p queue.Pressure
	if a.Holds != nil {
		p.Latency, p.Shed = a.Holds.Pressure()
	}
	if g := a.checkout.provider; g != nil {
		p.Provider, p.ProviderFailed = g.Pressure()
	}
	p.Confirm, _ = a.checkout.confirm.Read()
	p.PoolWait = a.checkout.pools.read(a.Pool, a.ordersPool)
	return p
}

// timeConfirmations measures each notification the webhook handler
// accepted (2xx): the time to apply it durably, confirmation included.
func (g *checkoutGauges) timeConfirmations(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if rec.status < 300 {
			g.confirm.Observe(time.Since(start))
		}
	})
}

// poolWait is the mean wait for a connection of the pools over the last
// sampling period (at least poolSample): pgxpool counts acquisitions and
// their total duration; the difference between two samples is the recent
// mean.
type poolWait struct {
	mu    sync.Mutex
	at    time.Time
	count int64
	total time.Duration
	mean  time.Duration
}

const poolSample = 500 * time.Millisecond

func (w *poolWait) read(pools ...*pgxpool.Pool) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if now.Sub(w.at) < poolSample {
		return w.mean
	}
	var count int64
	var total time.Duration
	for _, p := range pools {
		if p != nil {
			st := p.Stat()
			count += st.AcquireCount()
			total += st.AcquireDuration()
		}
	}
	if dn := count - w.count; !w.at.IsZero() && dn > 0 {
		w.mean = (total - w.total) / time.Duration(dn)
	} else {
		w.mean = 0
	}
	w.at, w.count, w.total = now, count, total
	return w.mean
}
