package app

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newMetrics builds the process registry: Go runtime and process collectors
// plus the HTTP request histogram. Other packages register their own
// collectors on App.Metrics, named ticketing_*.
func newMetrics() (*prometheus.Registry, *prometheus.HistogramVec) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	d := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ticketing_http_request_duration_seconds",
		Help:    "HTTP request duration by method, route (mux pattern) and status code; WebSocket and SSE streams count until they end.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route", "code"})
	reg.MustRegister(d)
	return reg, d
}

func (a *App) metricsHandler() http.Handler {
	return promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{Registry: a.Metrics})
}
