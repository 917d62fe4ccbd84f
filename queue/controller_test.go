package queue

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/redisstore"
)

// sim is a checkout backend of a given capacity (admissions per second it
// sustains): its hold latency is that of a queue, 20 ms / (1 - load /
// capacity), and 2 s once the load reaches the capacity. The load is what
// the controllers admitted during the last second.
type sim struct {
	mu       sync.Mutex
	capacity float64
	recent   []int // admissions per 100 ms step, last 10
}

func (m *sim) pressure() Pressure {
	m.mu.Lock()
	defer m.mu.Unlock()
	load := 0
	for _, n := range m.recent {
		load += n
	}
	rho := float64(load) / m.capacity
	if rho >= 1 {
		return Pressure{Latency: 2 * time.Second}
	}
	return Pressure{Latency: time.Duration(float64(20*time.Millisecond) / (1 - rho))}
}

func (m *sim) step(admitted int) {
	m.mu.Lock()
	m.recent = append(m.recent, admitted)
	if len(m.recent) > 10 {
		m.recent = m.recent[1:]
	}
	m.mu.Unlock()
}

// TestAdaptiveAdmissionFollowsCapacity: two instances (two Services on one
// Redis) admit from one queue against a simulated backend of capacity 60/s
// under a ceiling of 100/s: the shared rate climbs from a quarter of the
// ceiling, settles near the capacity, never exceeds the ceiling, changes at
// most once a second whatever the number of instances, and backs off below
// the new capacity within a few seconds when it halves.
func TestAdaptiveAdmissionFollowsCapacity(t *testing.T) {
	// Not parallel: it measures admission rates against the wall clock.
	f := newFixture(t, -time.Hour)
	m := &sim{capacity: 60}
	cfg := Config{AdmitRate: 100, AdmitBurst: 100, Window: 1000000}
	mk := func() *Service {
		cfg := cfg
		cfg.SigningKey = []byte("test-queue-signing-key-0123456789")
		cfg.KeyPrefix = f.prefix
		cfg.JoinUserRate, cfg.JoinUserBurst = 1000, 1000
		s, err := New(Deps{Redis: f.rdb, Events: f.events, Now: f.clk.Now, Pressure: m.pressure}, cfg)
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return s
	}
	a, b := mk(), mk()
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, u := range users(6000) {
		wg.Go(func() {
			_, err := a.Join(ctx, f.event, u, "")
			require.NoError(t, err)
		})
	}
	wg.Wait()

	rate := func() float64 {
		r, _, err := a.store.AdjustRate(ctx, f.event, redisstore.RateParams{Now: f.clk.Now(), Ceiling: 1e9, Decision: redisstore.RateHold})
		require.NoError(t, err)
		return r
	}
	var rates []float64 // one per simulated second
	changes := 0
	last := -1.0
	run := func(seconds int) {
		for i := range seconds * 10 {
			f.clk.Add(100 * time.Millisecond)
			s := a
			if i%2 == 1 {
				s = b
			}
			got, err := s.AdmitEvent(ctx, f.event)
			require.NoError(t, err)
			m.step(len(got))
			r := rate()
			require.LessOrEqual(t, r, 100.0, "above the ceiling")
			if r != last {
				changes++
				last = r
			}
			if i%10 == 9 {
				rates = append(rates, r)
			}
		}
	}
	run(60)
	require.InDelta(t, 25, rates[0], 6, "starts near a quarter of the ceiling")
	require.LessOrEqual(t, changes, 61, "at most one change per second with two instances")
	settled := rates[30:]
	var sum float64
	for _, r := range settled {
		sum += r
	}
	avg := sum / float64(len(settled))
	t.Logf("capacity 60/s: rate over the last 30 s averages %.1f/s (per second: %v)", avg, rates)
	require.Greater(t, avg, 0.6*60, "near the capacity")
	require.Less(t, avg, 1.1*60, "not beyond it")

	m.mu.Lock()
	m.capacity = 30
	m.mu.Unlock()
	before := len(rates)
	run(20)
	after := rates[before:]
	t.Logf("capacity halved to 30/s: per second %v", after)
	require.Less(t, after[4], 30.0, "below the new capacity within 5 s")
	sum = 0
	for _, r := range after[10:] {
		sum += r
	}
	require.Less(t, sum/10, 1.1*30)
	require.Greater(t, sum/10, 0.5*30)
}
