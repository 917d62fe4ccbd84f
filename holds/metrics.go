package holds

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	attempts      *prometheus.CounterVec
	conflicts     *prometheus.CounterVec
	txDuration    prometheus.Histogram
	fallback      prometheus.Gauge
	fallbackTotal prometheus.Counter
	shed          prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_hold_attempts_total",
			Help: "createHold attempts by result (ok, replay, conflict, limit, sale_not_open, not_admitted, invalid, refused, unavailable, shed, error).",
		}, []string{"result"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_hold_conflicts_total",
			Help: "Holds refused because a seat was taken, by where it was detected (lease: fast Redis rejection; postgres: the transaction).",
		}, []string{"by"}),
		txDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ticketing_hold_tx_duration_seconds",
			Help:    "Duration of the createHold Postgres transaction.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		fallback: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketing_redis_lease_fallback",
			Help: "1 while Redis leases are unavailable and holds run on Postgres alone (bounded concurrency).",
		}),
		fallbackTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_hold_lease_fallback_total",
			Help: "createHold attempts served without Redis leases because Redis failed.",
		}),
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_hold_shed_total",
			Help: "createHold attempts refused (RATE_LIMITED) because the hold lane stayed full for its wait.",
		}),
	}
}

// Collectors returns the service's prometheus collectors, to register on the
// application's registry.
func (s *Service) Collectors() []prometheus.Collector {
	m := s.metrics
	return []prometheus.Collector{m.attempts, m.conflicts, m.txDuration, m.fallback, m.fallbackTotal, m.shed}
}
