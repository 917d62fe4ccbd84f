package paysim

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are paysim's Prometheus signals, served on GET /metrics. The
// payment and delivery gauges are read from its database at scrape time, so
// every instance sharing one database reports the same figures.
type metrics struct {
	reg      *prometheus.Registry
	attempts *prometheus.CounterVec // webhook delivery attempts by result
	requests *prometheus.CounterVec // HTTP requests by route and code
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_paysim_webhook_attempts_total",
			Help: "Webhook delivery attempts by this instance, by result (delivered, failed).",
		}, []string{"result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_paysim_http_requests_total",
			Help: "HTTP requests served, by route and status code.",
		}, []string{"route", "code"}),
	}
	m.reg.MustRegister(m.attempts, m.requests, dbCollector{s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

var (
	payDesc = prometheus.NewDesc("ticketing_paysim_payments", "Payments in paysim's database, by status.", []string{"status"}, nil)
	dueDesc = prometheus.NewDesc("ticketing_paysim_webhook_deliveries_pending",
		"Notification copies neither delivered nor given up (retried with backoff).", nil, nil)
	gaveUpDesc = prometheus.NewDesc("ticketing_paysim_webhook_deliveries_given_up",
		"Notification copies given up after the most attempts or the longest age.", nil, nil)
	scrapeErrDesc = prometheus.NewDesc("ticketing_paysim_scrape_error", "1 if the database could not be read for this scrape.", nil, nil)
)

// dbCollector reads the payment and delivery gauges from the database.
type dbCollector struct{ s *Server }

func (dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- payDesc
	ch <- dueDesc
	ch <- gaveUpDesc
	ch <- scrapeErrDesc
}

func (c dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	failed := 0.0
	counts := map[string]float64{"pending": 0, "succeeded": 0, "failed": 0, "cancelled": 0, "refunded": 0}
	rows, err := c.s.pool.Query(ctx, `SELECT status, count(*) FROM paysim.payments GROUP BY status`)
	if err == nil {
		for rows.Next() {
			var st string
			var n int64
			if rows.Scan(&st, &n) == nil {
				counts[st] = float64(n)
			}
		}
		rows.Close()
		err = rows.Err()
	}
	var due, gaveUp int64
	if err == nil {
		err = c.s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE delivered_at IS NULL AND gave_up_at IS NULL),
			count(*) FILTER (WHERE gave_up_at IS NOT NULL) FROM paysim.deliveries`).Scan(&due, &gaveUp)
	}
	if err != nil {
		c.s.log.Warn("paysim: metrics: database", "err", err)
		failed = 1
	} else {
		for st, n := range counts {
			ch <- prometheus.MustNewConstMetric(payDesc, prometheus.GaugeValue, n, st)
		}
		ch <- prometheus.MustNewConstMetric(dueDesc, prometheus.GaugeValue, float64(due))
		ch <- prometheus.MustNewConstMetric(gaveUpDesc, prometheus.GaugeValue, float64(gaveUp))
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, failed)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// count records each request by the mux pattern that served it.
func (m *metrics) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			m.requests.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
		}()
		next.ServeHTTP(sw, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
