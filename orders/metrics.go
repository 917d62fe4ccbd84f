package orders

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	checkout      prometheus.Histogram
	notification  *prometheus.HistogramVec
	withoutOrder  prometheus.Gauge
	compensations prometheus.Gauge
	unknownStuck  prometheus.Gauge
	reversals     *prometheus.GaugeVec
	actions       *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		checkout: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ticketing_checkout_duration_seconds",
			Help:    "Time from order created to order confirmed.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200},
		}),
		notification: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketing_notification_phase_seconds",
			Help:    "Where an applied provider notification's time goes, by phase: connection (a connection of the notification pool and BEGIN), transaction (to the commit), after (a confirmation's effects on Redis, queue admission and address cap, run in the background once committed).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"phase"}),
		withoutOrder: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketing_payments_without_order",
			Help: "Succeeded payments whose order is not confirmed (compensation due), as of the last reconciliation.",
		}),
		compensations: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketing_pending_compensations",
			Help: "Payments REFUND_PENDING, as of the last reconciliation.",
		}),
		unknownStuck: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketing_payments_unknown_stuck",
			Help: "Payment attempts whose create was never answered within the provider's idempotency window (not repeated: resolve at the provider), as of the last reconciliation.",
		}),
		reversals: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketing_payments_reversed_by_provider",
			Help: "Payments the provider reversed on its own (a dashboard refund, a chargeback, a partial refund), by kind, as of the last reconciliation.",
		}, []string{"kind"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_reconciliation_actions_total",
			Help: "Actions taken by the payment reconciler, by action.",
		}, []string{"action"}),
	}
}

// Collectors returns the service's Prometheus collectors, to register on
// the App's registry.
func (s *Service) Collectors() []prometheus.Collector {
	m := s.metrics
	return []prometheus.Collector{m.checkout, m.notification, m.withoutOrder, m.compensations, m.unknownStuck, m.reversals, m.actions}
}
