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
// the controllers admitted during the last second. With confirmCapacity,
// the confirmation of payments is a second queue of its own capacity
// (50 ms / (1 - load / confirmCapacity)), the bottleneck when smaller.
type sim struct {
	mu              sync.Mutex
	capacity        float64
	confirmCapacity float64
	recent          []int // admissions per 100 ms step, last 10
}

// queueLatency is the latency of a queue of base service time at load
// over capacity (2 s when saturated).
func queueLatency(base time.Duration, load, capacity float64) time.Duration {
	rho := load / capacity
	if rho >= 1 {
		return 2 * time.Second
	}
	return time.Duration(float64(base) / (1 - rho))
}

func (m *sim) pressure() Pressure {
	m.mu.Lock()
	defer m.mu.Unlock()
	load := 0
	for _, n := range m.recent {
		load += n
	}
	p := Pressure{Latency: queueLatency(20*time.Millisecond, float64(load), m.capacity)}
	if m.confirmCapacity > 0 {
		p.Confirm = queueLatency(50*time.Millisecond, float64(load), m.confirmCapacity)
	}
	return p
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

// TestAdaptiveAdmissionFollowsConfirmations: the hold path has room to
// spare (1,000/s) but payments confirm at 40/s: the rate follows the
// confirmations, not the holds, and backs off when they slow to 20/s.
func TestAdaptiveAdmissionFollowsConfirmations(t *testing.T) {
	f := newFixture(t, -time.Hour)
	m := &sim{capacity: 1000, confirmCapacity: 40}
	cfg := Config{AdmitRate: 100, AdmitBurst: 100, Window: 1000000,
		SigningKey: []byte("test-queue-signing-key-0123456789"), KeyPrefix: f.prefix,
		JoinUserRate: 1000, JoinUserBurst: 1000}
	s, err := New(Deps{Redis: f.rdb, Events: f.events, Now: f.clk.Now, Pressure: m.pressure}, cfg)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, u := range users(6000) {
		wg.Go(func() {
			_, err := s.Join(ctx, f.event, u, "")
			require.NoError(t, err)
		})
	}
	wg.Wait()
	var rates []float64
	run := func(seconds int) {
		for i := range seconds * 10 {
			f.clk.Add(100 * time.Millisecond)
			got, err := s.AdmitEvent(ctx, f.event)
			require.NoError(t, err)
			m.step(len(got))
			if i%10 == 9 {
				r, _, err := s.store.AdjustRate(ctx, f.event, redisstore.RateParams{Now: f.clk.Now(), Ceiling: 1e9, Decision: redisstore.RateHold})
				require.NoError(t, err)
				rates = append(rates, r)
			}
		}
	}
	avg := func(xs []float64) float64 {
		var sum float64
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	run(60)
	t.Logf("confirmations at 40/s: per second %v", rates)
	require.Greater(t, avg(rates[30:]), 0.6*40, "near the confirmation capacity")
	require.Less(t, avg(rates[30:]), 1.1*40, "held to the confirmations, though holds have room")

	m.mu.Lock()
	m.confirmCapacity = 20
	m.mu.Unlock()
	before := len(rates)
	run(20)
	after := rates[before:]
	t.Logf("confirmations slowed to 20/s: per second %v", after)
	require.Less(t, after[4], 20.0, "below the new capacity within 5 s")
	require.Less(t, avg(after[10:]), 1.1*20)
}

// TestJudgeNamesEachSignal: each signal backs the rate off with its own
// reason, a running count backs off only when it grew (and not at the
// first decision), and the rate climbs only with room on holds and
// confirmations and people waiting.
func TestJudgeNamesEachSignal(t *testing.T) {
	c := DefaultConfig()
	calm := Pressure{Latency: 10 * time.Millisecond, Confirm: 10 * time.Millisecond, Provider: 100 * time.Millisecond, Shed: 3, ProviderFailed: 2}
	for _, tc := range []struct {
		name          string
		p             Pressure
		first, demand bool
		dec           redisstore.RateDecision
		why           string
	}{
		{"room", calm, false, true, redisstore.RateIncrease, "room"},
		{"no one waiting", calm, false, false, redisstore.RateHold, ""},
		{"shed", Pressure{Shed: 4}, false, true, redisstore.RateDecrease, "shed"},
		{"shed count at the first decision", Pressure{Shed: 4}, true, true, redisstore.RateIncrease, "room"},
		{"hold latency", Pressure{Latency: time.Second}, false, true, redisstore.RateDecrease, "latency"},
		{"confirmations", Pressure{Confirm: time.Second}, false, true, redisstore.RateDecrease, "confirm"},
		{"provider failures", Pressure{ProviderFailed: 3, Shed: 3}, false, true, redisstore.RateDecrease, "provider"},
		{"slow provider", Pressure{Provider: 3 * time.Second, Shed: 3, ProviderFailed: 2}, false, true, redisstore.RateDecrease, "provider"},
		{"pool wait", Pressure{PoolWait: time.Second, Shed: 3, ProviderFailed: 2}, false, true, redisstore.RateDecrease, "pool"},
		{"confirmations between half and the target", Pressure{Confirm: 300 * time.Millisecond, Shed: 3, ProviderFailed: 2}, false, true, redisstore.RateHold, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, why := c.judge(tc.p, Pressure{Shed: 3, ProviderFailed: 2}, tc.first, tc.demand)
			require.Equal(t, tc.dec, dec)
			require.Equal(t, tc.why, why)
		})
	}
}
