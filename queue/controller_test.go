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
	recent          []int // admissions per 100 ms step, last 10 (+ delay)
	// external is a hold latency caused by something admission does not
	// control (waiting fans taking the CPU, browsing).
	external time.Duration
	// delay is how many 100 ms steps after their admission buyers load
	// checkout (they choose seats, hold, pay): the latencies answer a
	// change of rate that much later, as a real sale's do.
	delay int
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
	for _, n := range m.recent[:max(0, len(m.recent)-m.delay)] {
		load += n
	}
	p := Pressure{Latency: max(m.external, queueLatency(20*time.Millisecond, float64(load), m.capacity))}
	if m.confirmCapacity > 0 {
		p.Confirm = queueLatency(50*time.Millisecond, float64(load), m.confirmCapacity)
	}
	return p
}

func (m *sim) step(admitted int) {
	m.mu.Lock()
	m.recent = append(m.recent, admitted)
	if len(m.recent) > 10+m.delay {
		m.recent = m.recent[1:]
	}
	m.mu.Unlock()
}

// controlled is a queue of 6,000 waiting users admitted by instances
// (Services on one Redis, taking turns) against the simulated backend m
// under a ceiling of 100/s, on a simulated clock.
type controlled struct {
	t         *testing.T
	f         *fixture
	m         *sim
	instances []*Service
	rates     []float64 // the shared rate, one per simulated second
	changes   int
	last      float64
	// inCheckout: admitted buyers not yet done, oldest first.
	inCheckout []admittedAt
}

type admittedAt struct {
	user string
	at   time.Time
}

func newControlled(t *testing.T, m *sim, instances int, opts ...func(*Config)) *controlled {
	c := &controlled{t: t, f: newFixture(t, -time.Hour), m: m, last: -1}
	for range instances {
		cfg := Config{AdmitRate: 100, AdmitBurst: 100, Window: 1000000,
			SigningKey: []byte("test-queue-signing-key-0123456789"), KeyPrefix: c.f.prefix,
			JoinUserRate: 1000, JoinUserBurst: 1000}
		for _, o := range opts {
			o(&cfg)
		}
		s, err := New(Deps{Redis: c.f.rdb, Events: c.f.events, Now: c.f.clk.Now, Pressure: m.pressure}, cfg)
		require.NoError(t, err)
		t.Cleanup(s.Close)
		c.instances = append(c.instances, s)
	}
	var wg sync.WaitGroup
	for _, u := range users(6000) {
		wg.Go(func() {
			_, err := c.instances[0].Join(context.Background(), c.f.event, u, "")
			require.NoError(t, err)
		})
	}
	wg.Wait()
	return c
}

// run admits for seconds of simulated time, in 100 ms passes.
func (c *controlled) run(seconds int) { c.runCompleting(seconds, 0) }

// runCompleting is run where every admitted buyer completes checkout (the
// order confirmed: Release) after checkout (0: never).
func (c *controlled) runCompleting(seconds int, checkout time.Duration) {
	ctx := context.Background()
	for i := range seconds * 10 {
		c.f.clk.Add(100 * time.Millisecond)
		got, err := c.instances[i%len(c.instances)].AdmitEvent(ctx, c.f.event)
		require.NoError(c.t, err)
		c.m.step(len(got))
		if checkout > 0 {
			now := c.f.clk.Now()
			for _, u := range got {
				c.inCheckout = append(c.inCheckout, admittedAt{u, now})
			}
			for len(c.inCheckout) > 0 && now.Sub(c.inCheckout[0].at) >= checkout {
				require.NoError(c.t, c.instances[0].Release(ctx, c.f.event, c.inCheckout[0].user, now))
				c.inCheckout = c.inCheckout[1:]
			}
		}
		st, err := c.instances[0].store.AdjustRate(ctx, c.f.event, redisstore.RateParams{Now: c.f.clk.Now(), Ceiling: 1e9, Decision: redisstore.RateHold})
		require.NoError(c.t, err)
		r := st.Rate
		require.LessOrEqual(c.t, r, 100.0, "above the ceiling")
		if r != c.last {
			c.changes++
			c.last = r
		}
		if i%10 == 9 {
			c.rates = append(c.rates, r)
		}
	}
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// setCapacity changes the simulated backend's capacities.
func (m *sim) setCapacity(holds, confirm float64) {
	m.mu.Lock()
	m.capacity, m.confirmCapacity = holds, confirm
	m.mu.Unlock()
}

// TestAdaptiveAdmissionFollowsCapacity: two instances (two Services on one
// Redis) admit from one queue against a simulated backend of capacity 60/s
// under a ceiling of 100/s: the shared rate climbs from a quarter of the
// ceiling, settles near the capacity, never exceeds the ceiling, changes at
// most once a second whatever the number of instances, and backs off below
// the new capacity within a few seconds when it halves.
func TestAdaptiveAdmissionFollowsCapacity(t *testing.T) {
	// Not parallel: two instances' controllers share one event's rate.
	m := &sim{capacity: 60}
	c := newControlled(t, m, 2)
	c.run(60)
	require.InDelta(t, 25, c.rates[0], 6, "starts near a quarter of the ceiling")
	require.LessOrEqual(t, c.changes, 61, "at most one change per second with two instances")
	avg := mean(c.rates[30:])
	t.Logf("capacity 60/s: rate over the last 30 s averages %.1f/s (per second: %v)", avg, c.rates)
	require.Greater(t, avg, 0.6*60, "near the capacity")
	require.Less(t, avg, 1.1*60, "not beyond it")

	m.setCapacity(30, 0)
	before := len(c.rates)
	c.run(20)
	after := c.rates[before:]
	t.Logf("capacity halved to 30/s: per second %v", after)
	require.Less(t, after[4], 30.0, "below the new capacity within 5 s")
	require.Less(t, mean(after[10:]), 1.1*30)
	require.Greater(t, mean(after[10:]), 0.5*30)
}

// TestAdaptiveAdmissionFollowsConfirmations: the hold path has room to
// spare (1,000/s) but payments confirm at 40/s: the rate follows the
// confirmations, not the holds, and backs off when they slow to 20/s.
func TestAdaptiveAdmissionFollowsConfirmations(t *testing.T) {
	m := &sim{capacity: 1000, confirmCapacity: 40}
	c := newControlled(t, m, 1)
	c.run(60)
	t.Logf("confirmations at 40/s: per second %v", c.rates)
	require.Greater(t, mean(c.rates[30:]), 0.6*40, "near the confirmation capacity")
	require.Less(t, mean(c.rates[30:]), 1.1*40, "held to the confirmations, though holds have room")

	m.setCapacity(1000, 20)
	before := len(c.rates)
	c.run(20)
	after := c.rates[before:]
	t.Logf("confirmations slowed to 20/s: per second %v", after)
	require.Less(t, after[4], 20.0, "below the new capacity within 5 s")
	require.Less(t, mean(after[10:]), 1.1*20)
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

// TestBackOffStopsAtCompletions: after 20 s of a sale where every admitted
// buyer completes checkout 3 s later, the hold latency rises above its
// target and stays there for a cause admission does not control (waiting
// fans taking the CPU). Without the completion floor the rate falls to its
// floor of 1/s within 35 s and checkout starves; with it, backing off
// stops near what checkout completes, and the reason says so.
func TestBackOffStopsAtCompletions(t *testing.T) {
	run := func(floor float64) []float64 {
		m := &sim{capacity: 1000}
		c := newControlled(t, m, 1, func(cfg *Config) { cfg.CompletedFloor = floor })
		c.runCompleting(20, 3*time.Second)
		m.mu.Lock()
		m.external = time.Second
		m.mu.Unlock()
		before := len(c.rates)
		c.runCompleting(45, 3*time.Second)
		return c.rates[before:]
	}
	without := run(-1)
	t.Logf("without the floor: per second %v", without)
	require.Less(t, mean(without[35:]), 5.0, "the plain back-off falls to the floor (one back-off per RateDecreaseGap)")
	with := run(0) // the default
	t.Logf("with the completion floor: per second %v", with)
	require.Greater(t, mean(with[35:]), 30.0, "held near the completions")
	require.Less(t, with[len(with)-1], with[0], "still backs off, gently")
}

// TestOneBackOffPerOverload: buyers load checkout 3 s after their
// admission, as in a real sale (they choose, hold and pay): the latencies
// answer a back-off 3 s late. Backing off once a second until they do
// (RateDecreaseGap of a second) cuts the rate far below the capacity at
// every overload, a sawtooth whose mean stays well under it; one back-off
// per 3 s (the default) keeps the mean rate nearer the capacity, and
// still below the ceiling.
func TestOneBackOffPerOverload(t *testing.T) {
	run := func(gap time.Duration) []float64 {
		m := &sim{capacity: 60, delay: 30}
		c := newControlled(t, m, 1, func(cfg *Config) { cfg.RateDecreaseGap = gap; cfg.CompletedFloor = -1 })
		c.run(90)
		return c.rates[30:]
	}
	everySecond := run(time.Second)
	t.Logf("a back-off a second: per second %v (mean %.1f)", everySecond, mean(everySecond))
	gapped := run(0) // the default
	t.Logf("one per 3 s: per second %v (mean %.1f)", gapped, mean(gapped))
	require.Greater(t, mean(gapped), mean(everySecond)*1.15, "fewer, not deeper, back-offs")
	require.Greater(t, mean(gapped), 0.5*60)
	require.Less(t, mean(gapped), 1.2*60)
}
