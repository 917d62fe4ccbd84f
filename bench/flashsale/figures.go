package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// saleFigures are issue #17's measures of a sale, read from the database
// once it has settled (the server's orders and paysim's own record of
// when it notified each success).
type saleFigures struct {
	Confirmed      int
	FirstConfirmed time.Time
	LastConfirmed  time.Time
	PeakPerSecond  int
	SoldOut        bool          // every unit sold
	SoldOutAfter   time.Duration // from the sale's start to the last confirmation, when SoldOut
	// NothingLeftAfter is when the live map first showed no unit
	// available (every unit held or sold: the event's SOLD_OUT, what a fan
	// sees); 0 if it never did. Units of holds that then expire come back
	// (a fifth of the buyers never pay), so "every unit sold" comes one or
	// more hold durations later.
	NothingLeftAfter                time.Duration
	NotifyP50, NotifyP99, NotifyMax time.Duration
	Notified                        int // confirmations with a provider notification to time
	// Legs splits each confirming notification's time (p50, p99): in
	// paysim's own delivery queue (payment.succeeded to the POST's start),
	// on its way in (the POST's start to the confirmation's transaction
	// start, webhook_inbox.received_at: HTTP, signature, a connection),
	// and the transaction with the answer's way back (to paysim's
	// delivered_at). sent -> answered bounds the provider's send to the
	// committed CONFIRMED from above.
	Legs []leg
	// PaidNotConfirmed: payments the provider reported succeeded before
	// the hold expired whose order never confirmed. Without injected
	// faults the server alone is to blame for each: it must be 0.
	PaidNotConfirmed int
}

const sqlSaleFigures = `
WITH c AS (
  SELECT o.confirmed_at FROM orders o WHERE o.event_id = $1 AND o.confirmed_at IS NOT NULL
), n AS (
  SELECT extract(epoch FROM o.confirmed_at - min(e.created_at)) AS d
  FROM orders o
  JOIN payments p ON p.order_id = o.id AND p.status IN ('SUCCEEDED', 'REFUND_PENDING', 'REFUNDED')
  JOIN paysim.events e ON e.payment_id = p.provider_ref AND e.type = 'payment.succeeded'
  WHERE o.event_id = $1 AND o.confirmed_at IS NOT NULL
  GROUP BY o.id, o.confirmed_at
)
SELECT (SELECT count(*) FROM c),
       (SELECT min(confirmed_at) FROM c), (SELECT max(confirmed_at) FROM c),
       coalesce((SELECT max(k) FROM (SELECT count(*) AS k FROM c GROUP BY date_trunc('second', confirmed_at)) s), 0),
       (SELECT count(*) FROM inventory WHERE event_id = $1 AND status <> 'SOLD') = 0,
       (SELECT count(*) FROM n),
       coalesce((SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY d) FROM n), 0),
       coalesce((SELECT percentile_disc(0.99) WITHIN GROUP (ORDER BY d) FROM n), 0),
       coalesce((SELECT max(d) FROM n), 0),
       (SELECT count(DISTINCT o.id)
        FROM orders o JOIN holds h ON h.id = o.hold_id
        JOIN payments p ON p.order_id = o.id
        JOIN paysim.events e ON e.payment_id = p.provider_ref AND e.type = 'payment.succeeded'
        WHERE o.event_id = $1 AND e.created_at < h.expires_at AND o.confirmed_at IS NULL)`

// leg is one part of a notification's time.
type leg struct {
	Name     string
	P50, P99 time.Duration
}

const sqlNotificationLegs = `
WITH n AS (
  SELECT DISTINCT ON (o.id) e.created_at AS made, d.sent_at AS sent, i.received_at AS began, d.delivered_at AS answered
  FROM orders o
  JOIN payments p ON p.order_id = o.id AND p.status IN ('SUCCEEDED', 'REFUND_PENDING', 'REFUNDED')
  JOIN paysim.events e ON e.payment_id = p.provider_ref AND e.type = 'payment.succeeded'
  JOIN paysim.deliveries d ON d.event_id = e.id AND d.delivered_at IS NOT NULL AND d.sent_at IS NOT NULL
  JOIN webhook_inbox i ON i.id = e.id
  WHERE o.event_id = $1 AND o.confirmed_at IS NOT NULL
  ORDER BY o.id, d.delivered_at
), l AS (
  SELECT 'paysim queue (succeeded -> sent)' AS name, 1 AS k, extract(epoch FROM sent - made) AS d FROM n
  UNION ALL SELECT 'way in (sent -> transaction start)', 2, extract(epoch FROM began - sent) FROM n
  UNION ALL SELECT 'transaction + answer (-> delivered)', 3, extract(epoch FROM answered - began) FROM n
  UNION ALL SELECT 'sent -> answered (bounds send -> CONFIRMED)', 4, extract(epoch FROM answered - sent) FROM n
)
SELECT name, percentile_disc(0.5) WITHIN GROUP (ORDER BY d), percentile_disc(0.99) WITHIN GROUP (ORDER BY d)
FROM l GROUP BY name, k ORDER BY k`

// notificationLegs reads Legs (none if paysim's schema predates sent_at).
func (r *Run) notificationLegs(ctx context.Context) ([]leg, error) {
	rows, err := r.pool.Query(ctx, sqlNotificationLegs, r.EventID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []leg
	for rows.Next() {
		var l leg
		var p50, p99 float64
		if err := rows.Scan(&l.Name, &p50, &p99); err != nil {
			return nil, err
		}
		l.P50, l.P99 = time.Duration(p50*float64(time.Second)), time.Duration(p99*float64(time.Second))
		out = append(out, l)
	}
	return out, rows.Err()
}

func (r *Run) saleFigures(ctx context.Context) (saleFigures, error) {
	var f saleFigures
	var first, last *time.Time
	var p50, p99, mx float64
	err := r.pool.QueryRow(ctx, sqlSaleFigures, r.EventID).Scan(&f.Confirmed, &first, &last, &f.PeakPerSecond, &f.SoldOut,
		&f.Notified, &p50, &p99, &mx, &f.PaidNotConfirmed)
	if err != nil {
		return f, err
	}
	if first != nil {
		f.FirstConfirmed, f.LastConfirmed = *first, *last
	}
	ga := map[int]float64{}
	for _, p := range r.S.Series("map: GA available") {
		ga[int(p[0])] = p[1]
	}
	for _, p := range r.S.Series("map: seats available") {
		if v, ok := ga[int(p[0])]; ok && p[1] == 0 && v == 0 {
			f.NothingLeftAfter = time.Duration(p[0]) * time.Second
			break
		}
	}
	if f.SoldOut && last != nil {
		f.SoldOutAfter = last.Sub(r.S.start)
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	f.NotifyP50, f.NotifyP99, f.NotifyMax = sec(p50), sec(p99), sec(mx)
	if f.Legs, err = r.notificationLegs(ctx); err != nil {
		return f, err
	}
	r.pagesMu.Lock()
	pages := r.lastPages
	r.pagesMu.Unlock()
	for _, phase := range []string{"connection", "transaction", "after"} {
		if q50, q99, ok := histogramQuantiles(pages, "ticketing_notification_phase_seconds", `phase="`+phase+`"`); ok {
			f.Legs = append(f.Legs, leg{Name: "API: " + phase + " (histogram)", P50: q50, P99: q99})
		}
	}
	return f, nil
}

// write prints the figures with the requests per buyer and the queue's
// admission rate over the sale (the controller's, scraped every second).
func (f saleFigures) write(w io.Writer, r *Run) {
	fmt.Fprintln(w, "sale figures (issue #17):")
	span := f.LastConfirmed.Sub(f.FirstConfirmed).Seconds()
	avg := 0.0
	if span > 0 {
		avg = float64(f.Confirmed) / span
	}
	fmt.Fprintf(w, "  confirmed orders            %d: %.1f/s on average between the first and the last, %d/s at peak\n", f.Confirmed, avg, f.PeakPerSecond)
	if f.NothingLeftAfter > 0 {
		fmt.Fprintf(w, "  sold out (SOLD_OUT)         %s after the sale opened: the live map showed every unit held or sold\n", f.NothingLeftAfter)
	} else {
		fmt.Fprintln(w, "  sold out (SOLD_OUT)         never: the live map always showed units available")
	}
	if f.SoldOut {
		fmt.Fprintf(w, "  every unit SOLD             %s after the sale opened (the last confirmation)\n", f.SoldOutAfter.Round(time.Second))
	} else {
		fmt.Fprintln(w, "  every unit SOLD             no (units left unsold when the sale was bounded)")
	}
	fmt.Fprintf(w, "  notification -> CONFIRMED   p50 %s  p99 %s  max %s (%d confirmations; from paysim's payment.succeeded to orders.confirmed_at)\n",
		round(f.NotifyP50), round(f.NotifyP99), round(f.NotifyMax), f.Notified)
	for _, l := range f.Legs {
		fmt.Fprintf(w, "    %-46s p50 %s  p99 %s\n", l.Name, round(l.P50), round(l.P99))
	}
	fmt.Fprintf(w, "  paid before the hold expired but not confirmed: %d\n", f.PaidNotConfirmed)
	calls := 0
	for _, st := range r.S.Steps() {
		if st.Name == "time_in_queue" || st.Name == "checkout_duration" {
			continue
		}
		calls += st.OK
		for _, n := range st.Errs {
			calls += n
		}
	}
	fmt.Fprintf(w, "  requests per buyer          %.1f (%d API calls and subscriptions, %d buyers)\n", float64(calls)/float64(max(1, r.Cfg.Buyers)), calls, r.Cfg.Buyers)
	var rates []string
	for i, p := range r.S.Series("ticketing_queue_admit_rate") {
		if i%10 == 0 {
			rates = append(rates, fmt.Sprintf("t+%.0fs %.1f %s", p[0], p[1], r.S.NoteAt("admission reason", int(p[0]))))
		}
	}
	fmt.Fprintf(w, "  admission rate and the reason of its last change (every 10 s) %s\n", strings.Join(rates, ", "))
	// What the controller read, every 10 s: hold, confirm, provider latency
	// and pool wait (ms), completions per second.
	sig := func(name string) map[int]float64 {
		m := map[int]float64{}
		for _, p := range r.S.Series(name) {
			m[int(p[0])] = p[1]
		}
		return m
	}
	hold, confirm := sig(`ticketing_queue_pressure_seconds{signal="hold"}`), sig(`ticketing_queue_pressure_seconds{signal="confirm"}`)
	prov, pool := sig(`ticketing_queue_pressure_seconds{signal="provider"}`), sig(`ticketing_queue_pressure_seconds{signal="pool_wait"}`)
	done := sig("ticketing_queue_completions_per_second")
	var sigs []string
	for i, p := range r.S.Series("ticketing_queue_admit_rate") {
		if s := int(p[0]); i%10 == 0 {
			sigs = append(sigs, fmt.Sprintf("t+%ds %.0f/%.0f/%.0f/%.0f ms %.1f/s", s, hold[s]*1000, confirm[s]*1000, prov[s]*1000, pool[s]*1000, done[s]))
		}
	}
	fmt.Fprintf(w, "  controller's signals (hold/confirm/provider/pool wait, completions; every 10 s) %s\n\n", strings.Join(sigs, ", "))
}

// takeProfile records api0's CPU for -profile, from the end of the ramp
// (the whole crowd is there), into the report directory.
func (r *Run) takeProfile(ctx context.Context) {
	if !sleep(ctx, r.Cfg.Ramp) {
		return
	}
	secs := int(r.Cfg.Profile.Seconds())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", r.debugURL, secs), nil)
	resp, err := (&http.Client{Timeout: r.Cfg.Profile + 30*time.Second}).Do(req)
	if err != nil {
		r.Note("profile: %v", err)
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		r.Note("profile: HTTP %d %v", resp.StatusCode, err)
		return
	}
	file := filepath.Join(r.outDir(), "flashsale-"+r.id+"-api0.pprof")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		r.Note("profile: %v", err)
		return
	}
	r.profile = file
	r.Note("CPU profile of api0 for %s from t+%s: %s (go tool pprof -top %s %s)", r.Cfg.Profile, r.Cfg.Ramp, file, r.bin, file)
}

// histogramQuantiles estimates p50 and p99 of a Prometheus histogram
// (summed over the pages, the series carrying label) as histogram_quantile
// does: linearly within the bucket the rank falls in.
func histogramQuantiles(pages []metricsPage, name, label string) (p50, p99 time.Duration, ok bool) {
	counts := map[float64]float64{}
	for _, pg := range pages {
		for _, l := range pg {
			if !strings.HasPrefix(l, name+"_bucket{") || !strings.Contains(l, label) {
				continue
			}
			_, rest, _ := strings.Cut(l, `le="`)
			le, _, _ := strings.Cut(rest, `"`)
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			b, err := strconv.ParseFloat(le, 64)
			if le == "+Inf" {
				b, err = math.Inf(1), nil
			}
			if err == nil {
				counts[b] += v
			}
		}
	}
	les := make([]float64, 0, len(counts))
	for b := range counts {
		les = append(les, b)
	}
	sort.Float64s(les)
	if len(les) == 0 || counts[les[len(les)-1]] == 0 {
		return 0, 0, false
	}
	total := counts[les[len(les)-1]]
	q := func(phi float64) time.Duration {
		rank := phi * total
		lower, below := 0.0, 0.0
		for _, b := range les {
			if counts[b] >= rank {
				if math.IsInf(b, 1) {
					return time.Duration(lower * float64(time.Second))
				}
				frac := (rank - below) / max(counts[b]-below, 1)
				return time.Duration((lower + (b-lower)*frac) * float64(time.Second))
			}
			lower, below = b, counts[b]
		}
		return time.Duration(lower * float64(time.Second))
	}
	return q(0.5), q(0.99), true
}
