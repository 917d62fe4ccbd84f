package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Step is the record of one kind of request or phase.
type Step struct {
	Name        string
	Lat         []time.Duration
	OK          int
	Errs        map[string]int
	First, Last time.Time
}

// Quantile returns the q-quantile of the successful latencies.
func (s *Step) Quantile(q float64) time.Duration {
	if len(s.Lat) == 0 {
		return 0
	}
	return s.Lat[min(len(s.Lat)-1, int(q*float64(len(s.Lat))))]
}

// Stats collects per-step latencies, outcome counters and a per-second
// timeline, safe for concurrent use.
type Stats struct {
	mu       sync.Mutex
	start    time.Time
	steps    map[string]*Step
	counts   map[string]int
	timeline map[string]map[int]float64 // series -> second -> value
	notes    map[string]map[int]string  // series -> second -> text
}

// NewStats starts the clock.
func NewStats() *Stats {
	return &Stats{start: time.Now(), steps: map[string]*Step{}, counts: map[string]int{}, timeline: map[string]map[int]float64{}, notes: map[string]map[int]string{}}
}

// Observe records one request of a step that started at start.
func (s *Stats) Observe(step string, start time.Time, err error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.steps[step]
	if st == nil {
		st = &Step{Name: step, Errs: map[string]int{}, First: start}
		s.steps[step] = st
	}
	if err == nil {
		st.OK++
		st.Lat = append(st.Lat, now.Sub(start))
	} else {
		st.Errs[codeOf(err)]++
	}
	st.Last = now
	s.tick(step, now, 1)
	if err != nil {
		s.tick(step+" error", now, 1)
	}
}

// Count adds n to a named counter (and its timeline).
func (s *Stats) Count(name string, n int) {
	s.mu.Lock()
	s.counts[name] += n
	s.tick(name, time.Now(), float64(n))
	s.mu.Unlock()
}

// Gauge records a sampled value on the timeline (the last one per second).
func (s *Stats) Gauge(name string, v float64) {
	s.mu.Lock()
	sec := int(time.Since(s.start).Seconds())
	if s.timeline[name] == nil {
		s.timeline[name] = map[int]float64{}
	}
	s.timeline[name][sec] = v
	s.mu.Unlock()
}

// Note records a sampled text on the timeline (the last one per second).
func (s *Stats) Note(name, v string) {
	s.mu.Lock()
	sec := int(time.Since(s.start).Seconds())
	if s.notes[name] == nil {
		s.notes[name] = map[int]string{}
	}
	s.notes[name][sec] = v
	s.mu.Unlock()
}

// NoteAt is the text of series name at second sec ("" if none).
func (s *Stats) NoteAt(name string, sec int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notes[name][sec]
}

func (s *Stats) tick(name string, at time.Time, n float64) {
	sec := int(at.Sub(s.start).Seconds())
	if s.timeline[name] == nil {
		s.timeline[name] = map[int]float64{}
	}
	s.timeline[name][sec] += n
}

// Get returns a counter.
func (s *Stats) Get(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[name]
}

// Series returns a timeline as (second, value) points, seconds in order.
func (s *Stats) Series(name string) [][2]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][2]float64
	for sec, v := range s.timeline[name] {
		out = append(out, [2]float64{float64(sec), v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Steps returns the steps with sorted latencies, in a stable order.
func (s *Stats) Steps() []*Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Step
	for _, st := range s.steps {
		c := *st
		c.Lat = slices.Clone(st.Lat)
		slices.Sort(c.Lat)
		c.Errs = map[string]int{}
		for k, v := range st.Errs {
			c.Errs[k] = v
		}
		out = append(out, &c)
	}
	order := strings.Fields(stepOrder)
	pos := func(n string) int {
		if i := slices.Index(order, n); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.Slice(out, func(i, j int) bool {
		if pos(out[i].Name) != pos(out[j].Name) {
			return pos(out[i].Name) < pos(out[j].Name)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

const stepOrder = `joinQueue queueTicket time_in_queue seatMap_snapshot createHold cancelHold createOrder checkout_post
retryPayment order_poll checkout_duration leaveQueue`

// Counters returns a copy of the counters.
func (s *Stats) Counters() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// WriteSteps prints the per-step table.
func WriteSteps(w io.Writer, steps []*Step) {
	fmt.Fprintf(w, "%-18s %8s %8s %9s %9s %9s %9s %9s  %s\n", "step", "ok", "err", "ok/s", "p50", "p95", "p99", "max", "errors by code")
	for _, st := range steps {
		errs := 0
		var codes []string
		for c, n := range st.Errs {
			errs += n
			codes = append(codes, fmt.Sprintf("%s=%d", c, n))
		}
		sort.Strings(codes)
		rate := 0.0
		if d := st.Last.Sub(st.First).Seconds(); d > 0 {
			rate = float64(st.OK) / d
		}
		fmt.Fprintf(w, "%-18s %8d %8d %9.1f %9s %9s %9s %9s  %s\n", st.Name, st.OK, errs, rate,
			round(st.Quantile(.5)), round(st.Quantile(.95)), round(st.Quantile(.99)), round(st.Quantile(1)), strings.Join(codes, " "))
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d > 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	case d > time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d
}

// progress draws a text progress bar on w until done is closed.
func progress(w io.Writer, tty bool, total int, status func() (done int, line string), stop <-chan struct{}) {
	every := 500 * time.Millisecond
	if !tty {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	start := time.Now()
	draw := func() {
		d, line := status()
		const width = 30
		n := width * d / max(total, 1)
		bar := strings.Repeat("#", n) + strings.Repeat(".", width-n)
		el := time.Since(start).Round(time.Second)
		if tty {
			fmt.Fprintf(w, "\r[%s] %3d%% %s %s\033[K", bar, 100*d/max(total, 1), el, line)
		} else {
			fmt.Fprintf(w, "[%s] %3d%% %s %s\n", bar, 100*d/max(total, 1), el, line)
		}
	}
	for {
		select {
		case <-stop:
			draw()
			fmt.Fprintln(w)
			return
		case <-t.C:
			draw()
		}
	}
}
