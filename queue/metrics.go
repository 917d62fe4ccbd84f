package queue

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	length     *prometheus.GaugeVec
	active     *prometheus.GaugeVec
	admissions *prometheus.CounterVec
	wait       prometheus.Histogram
	joins      *prometheus.CounterVec
	rate       *prometheus.GaugeVec
	reason     *prometheus.GaugeVec
	pressure   *prometheus.GaugeVec
	// completions: checkouts completed per second (the controller's floor).
	completions *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		length: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketing_queue_length",
			Help: "Users waiting in the virtual queue (pre-queue included), per event.",
		}, []string{"event_id"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketing_queue_active_admitted",
			Help: "Admitted buyers whose admission has not expired nor been released, per event.",
		}, []string{"event_id"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_queue_admissions_total",
			Help: "Admissions made by this instance's controller, per event (rate()*60 = per minute).",
		}, []string{"event_id"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ticketing_queue_wait_seconds",
			Help:    "Time from joining the queue to admission.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 s .. ~2.3 h
		}),
		joins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_queue_joins_total",
			Help: "joinQueue calls by result (ok, rate_limited, unavailable, error).",
		}, []string{"result"}),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketing_queue_admit_rate",
			Help: "The admission rate (per second) the adaptive controller set for the event (QUEUE_ADMIT_RATE is its ceiling).",
		}, []string{"event_id"}),
		reason: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketing_queue_admit_rate_reason",
			Help: "1 for the reason of the last change of the event's admission rate (start, room, latency, shed, confirm, provider, pool; queue.Config.judge; completions: a back-off stopped at the completion floor).",
		}, []string{"event_id", "reason"}),
		pressure: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketing_queue_pressure_seconds",
			Help: "The latencies the adaptive controller last read (hold, confirm, provider, pool_wait; queue.Pressure).",
		}, []string{"signal"}),
		completions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketing_queue_completions_per_second",
			Help: "Checkouts completed per second (admissions released by confirmed orders, all instances), per event: the adaptive controller does not back off below QUEUE's completion floor of it.",
		}, []string{"event_id"}),
	}
	if reg != nil {
		reg.MustRegister(m.length, m.active, m.admissions, m.wait, m.joins, m.rate, m.reason, m.pressure, m.completions)
	}
	return m
}
