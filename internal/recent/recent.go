// Package recent measures how a path has behaved lately, for the adaptive
// admission controller (queue.Pressure): the recent latency of its calls
// (an exponentially weighted moving average that forgets after a quiet
// spell) and a running count of its failures.
package recent

import (
	"sync"
	"time"
)

// Stale is how long a latency stands without a new observation: after it
// the path is idle and its latency reads zero (an old slow call does not
// hold the rate down), and the next observation starts the average anew.
const Stale = 2 * time.Second

// Latency is the moving average of a path's latency and its failures. The
// zero value is ready; it is safe for concurrent use.
type Latency struct {
	mu     sync.Mutex
	avg    float64 // seconds
	at     time.Time
	failed uint64
}

// Observe records one call of duration d.
func (l *Latency) Observe(d time.Duration) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() || now.Sub(l.at) > Stale {
		l.avg = d.Seconds()
	} else {
		l.avg += 0.1 * (d.Seconds() - l.avg)
	}
	l.at = now
}

// Fail counts one failure.
func (l *Latency) Fail() {
	l.mu.Lock()
	l.failed++
	l.mu.Unlock()
}

// Read returns the recent latency (zero when nothing was observed within
// Stale) and the failures counted so far.
func (l *Latency) Read() (latency time.Duration, failed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.at.IsZero() && time.Since(l.at) <= Stale {
		latency = time.Duration(l.avg * float64(time.Second))
	}
	return latency, l.failed
}
