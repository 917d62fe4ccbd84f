package seatmap

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	subscribers prometheus.Gauge
	dropped     prometheus.Counter
	frames      prometheus.Counter
	coalesced   prometheus.Counter
	published   prometheus.Counter
	loads       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketing_seatmap_subscribers",
			Help: "Seat map subscribers connected to this instance.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_seatmap_dropped_subscribers_total",
			Help: "Subscribers cut off because they did not keep up (they must resync).",
		}),
		frames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_seatmap_frames_total",
			Help: "Coalesced frames broadcast by this instance's hubs.",
		}),
		coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_seatmap_coalesced_entries_total",
			Help: "Stream entries merged into another entry's frame instead of sent alone.",
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_seatmap_published_entries_total",
			Help: "Seat map stream entries written by the outbox relay.",
		}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_seatmap_snapshot_loads_total",
			Help: "Seat map projections loaded from Postgres, by reason (first, age, lost, redis, relay); otherwise they advance from the stream.",
		}, []string{"reason"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.subscribers, m.dropped, m.frames, m.coalesced, m.published, m.loads} {
			var are prometheus.AlreadyRegisteredError
			if err := reg.Register(c); err != nil && !errors.As(err, &are) {
				panic(err)
			}
		}
	}
	return m
}
