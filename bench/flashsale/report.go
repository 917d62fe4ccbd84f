package main

import (
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// report writes the text report to w and to bench/out, and the HTML page.
func (r *Run) report(res *Result, saleTook time.Duration, w io.Writer) error {
	var b strings.Builder
	cfg := r.Cfg
	queue := "the server's defaults (adaptive)"
	if cfg.AdmitRate > 0 || cfg.Window > 0 {
		queue = fmt.Sprintf("%.0f/s window %d (0: the server's default)", cfg.AdmitRate, cfg.Window)
	}
	fmt.Fprintf(&b, "flash sale %s: %d buyers on event %s (%d seats in %d sections + %d GA = %d), hold %ds, queue %s, %d API instance(s)%s, scenario %q\n",
		r.id, cfg.Buyers, r.EventID, cfg.Seats, cfg.Sections, cfg.GA, r.Capacity, cfg.HoldSeconds, queue, cfg.APIs,
		map[bool]string{true: " + 1 worker instance", false: ""}[cfg.SplitWorkers], cfg.Scenario)
	fmt.Fprintf(&b, "sale: %s (ramp %s); paysim fault phases: %v\n\n", saleTook.Round(time.Second), cfg.Ramp, cfg.Faults)
	c := res.Outcomes
	var keys []string
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(&b, "counters:")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-45s %8d\n", k, c[k])
	}
	tickets, holdCalls := c["tickets sold"], 0
	for _, st := range r.S.Steps() {
		if st.Name == "createHold" {
			holdCalls = st.OK
			for _, n := range st.Errs {
				holdCalls += n
			}
		}
	}
	fmt.Fprintf(&b, "\nsold %d of %d units (%d seats, %d GA); %d conflicts (SEAT_UNAVAILABLE) over %d createHold calls\n\n",
		tickets, r.Capacity, c["seats sold"], tickets-c["seats sold"], c["conflicts"], holdCalls)
	res.Figures.write(&b, r)
	fmt.Fprintln(&b, "per step (latency of successful calls; time_in_queue and checkout_duration are per buyer):")
	WriteSteps(&b, r.S.Steps())
	fmt.Fprintln(&b, "\nsignals (max over the run):")
	for _, m := range []string{"ticketing_projection_lag_seconds", "outbox lag (database)", "ticketing_queue_length", "ticketing_pending_compensations",
		"ticketing_payments_without_order", "ticketing_redis_lease_fallback", "ticketing_reconciliation_actions_total",
		"ticketing_hold_conflicts_total"} {
		mx, last, at, back := 0.0, 0.0, -1.0, -1.0
		for _, p := range r.S.Series(m) {
			if p[1] > mx {
				mx, at, back = p[1], p[0], -1
			}
			if back < 0 && at >= 0 && p[1] < mx/10 {
				back = p[0]
			}
			last = p[1]
		}
		if mx == 0 {
			fmt.Fprintf(&b, "  %-40s max %8.1f\n", m, mx)
			continue
		}
		if strings.HasSuffix(m, "_total") {
			fmt.Fprintf(&b, "  %-40s %8.0f at the end\n", m, last)
			continue
		}
		again := "never"
		if back >= 0 {
			again = fmt.Sprintf("t+%.0fs", back)
		}
		fmt.Fprintf(&b, "  %-40s max %8.1f at t+%.0fs, under a tenth of it again at %s; last %8.1f\n", m, mx, at, again, last)
	}
	fmt.Fprintf(&b, "live map: %d frames, %d snapshots; after settling it differs from the inventory on %d seats\n",
		r.Map.Frames.Load(), r.Map.Resyncs.Load(), res.MapMismatches)
	fmt.Fprintln(&b, "\ntimeline:")
	r.notesMu.Lock()
	for _, n := range r.notes {
		fmt.Fprintln(&b, "  "+n)
	}
	r.notesMu.Unlock()
	fmt.Fprintf(&b, "\naudit (audit.Run, provider asked): settled=%v anomalies=%d\n", res.Settled, len(res.Anomalies))
	for i, a := range res.Anomalies {
		if i == 20 {
			fmt.Fprintf(&b, "  ... %d more\n", len(res.Anomalies)-20)
			break
		}
		fmt.Fprintf(&b, "  %s: %s\n", a.Kind, a.Detail)
	}
	fmt.Fprintf(&b, "ticketing audit --event %s: exit %d\n", r.EventID, res.AuditExit)
	fmt.Fprintf(&b, "linearizability (porcupine, one register per seat): %d seats, %d ops, illegal %d %v, undecided %d; strict-conflict model: %d seats unexplained\n",
		res.Check.Seats, res.Check.Ops, len(res.Check.Illegal), res.Check.Illegal, len(res.Check.Unknown), res.StrictIllegal)
	fmt.Fprintf(&b, "client-side anomalies: %d\n", res.ClientAnomalie)
	verdict := "CLEAN"
	if !res.Clean() {
		verdict = "NOT CLEAN"
	}
	fmt.Fprintf(&b, "verdict: %s\n", verdict)

	txt := b.String()
	fmt.Fprint(w, txt)
	stamp := time.Now().Format("20060102-150405")
	name := "flashsale-" + stamp
	if cfg.Scenario != "" {
		name += "-" + cfg.Scenario
	}
	res.Report = filepath.Join(r.outDir(), name+".txt")
	res.HTML = filepath.Join(r.outDir(), name+".html")
	if err := os.WriteFile(res.Report, []byte(txt), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "report: %s\n", res.HTML)
	return os.WriteFile(res.HTML, []byte(r.html(txt)), 0o644)
}

// html is a self-contained page: inline SVG charts and the text report.
func (r *Run) html(txt string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset="utf-8"><title>Flash sale ` + r.id + `</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}svg{background:#fafafa;border:1px solid #ddd;margin:.5em 0}
pre{background:#f4f4f4;padding:1em;overflow:auto;font-size:12px}</style><h1>Flash sale ` + r.id + `</h1>`)
	b.WriteString(chart("Throughput per second", r.S, []string{"createHold", "conflicts", "createOrder", "outcome confirmed", "outcome expired", "checkout_post"}))
	b.WriteString(chart("Queue and checkout", r.S, []string{"ticketing_queue_length", "ticketing_queue_active_admitted", "buyers in checkout"}))
	b.WriteString(chart("Admission rate set by the controller (per second)", r.S, []string{"ticketing_queue_admit_rate"}))
	b.WriteString(chart("Inventory left in the live map", r.S, []string{"map: seats available", "map: GA available"}))
	b.WriteString(chart("Projection lag (s) and compensations", r.S, []string{"ticketing_projection_lag_seconds", "outbox lag (database)",
		"ticketing_pending_compensations", "ticketing_payments_without_order"}))
	b.WriteString(chart("Errors per second", r.S, []string{"createHold error", "createOrder error", "queueTicket error", "joinQueue error", "order_poll error"}))
	b.WriteString(latencyBars(r.S.Steps()))
	b.WriteString("<h2>Report</h2><pre>" + html.EscapeString(txt) + "</pre>")
	return b.String()
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// chart draws the named timeline series as lines.
func chart(title string, s *Stats, names []string) string {
	const W, H, L, B = 1000.0, 260.0, 50.0, 30.0
	var maxX, maxY float64
	series := map[string][][2]float64{}
	for _, n := range names {
		series[n] = s.Series(n)
		for _, p := range series[n] {
			maxX, maxY = max(maxX, p[0]), max(maxY, p[1])
		}
	}
	if maxX == 0 {
		maxX = 1
	}
	if maxY == 0 {
		maxY = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<h2>%s</h2><svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, html.EscapeString(title), W, H+40, W, H+40)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/><line x1="%.0f" y1="10" x2="%.0f" y2="%.0f" stroke="#999"/>`, L, H-B, W-10, H-B, L, L, H-B)
	fmt.Fprintf(&b, `<text x="5" y="20" font-size="11">%.0f</text><text x="5" y="%.0f" font-size="11">0</text><text x="%.0f" y="%.0f" font-size="11">%.0f s</text>`,
		maxY, H-B, W-60, H-B+15, maxX)
	for i, n := range names {
		pts := series[n]
		col := palette[i%len(palette)]
		var pl []string
		for _, p := range pts {
			x := L + p[0]/maxX*(W-L-10)
			y := (H - B) - p[1]/maxY*(H-B-10)
			pl = append(pl, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		if len(pl) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, col, strings.Join(pl, " "))
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f" font-size="12">%s</text>`,
			L+float64(i)*160, H+5, col, L+float64(i)*160+14, H+14, html.EscapeString(n))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// latencyBars draws p50/p95/p99 per step on a log scale.
func latencyBars(steps []*Step) string {
	var b strings.Builder
	rowH := 22.0
	H := rowH*float64(len(steps)) + 40
	fmt.Fprintf(&b, `<h2>Latency per step (p50 / p95 / p99, log scale 1 ms – 100 s)</h2><svg width="1000" height="%.0f">`, H)
	scale := func(d time.Duration) float64 {
		ms := max(float64(d)/float64(time.Millisecond), 1)
		return 180 + 800*min(logScale(ms)/5, 1) // log10(1 ms .. 100 s)
	}
	for i, st := range steps {
		y := 20 + float64(i)*rowH
		fmt.Fprintf(&b, `<text x="0" y="%.0f" font-size="12">%s</text>`, y+12, html.EscapeString(st.Name))
		for j, q := range []float64{.99, .95, .5} {
			d := st.Quantile(q)
			fmt.Fprintf(&b, `<rect x="180" y="%.0f" width="%.1f" height="14" fill="%s"><title>p%.0f %s</title></rect>`,
				y, scale(d)-180, []string{"#c6dbef", "#6baed6", "#2171b5"}[j], q*100, round(d))
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11">%s / %s / %s</text>`, min(scale(st.Quantile(.99))+5, 880), y+12,
			round(st.Quantile(.5)), round(st.Quantile(.95)), round(st.Quantile(.99)))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func logScale(ms float64) float64 {
	n := 0.0
	for ms >= 10 {
		ms /= 10
		n++
	}
	return n + (ms-1)/9
}
