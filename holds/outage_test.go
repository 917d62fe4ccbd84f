package holds_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/redisstore"
	"github.com/ticketing/ticketing/store"
)

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			return m.Counter.GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// Redis is killed in the middle of a run and restarted: holds keep working
// and stay correct, and the degraded state is reported.
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	rs := testdb.StartOwnRedis(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), DialTimeout: 100 * time.Millisecond,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	pool := testdb.NewPool(t)
	svc := holds.New(store.New(pool), holds.Config{
		Leases:              redisstore.NewLeases(rdb, testdb.RedisPrefix(t)),
		ProbeInterval:       100 * time.Millisecond,
		FallbackConcurrency: 4,
		FallbackWait:        10 * time.Second,
	})
	t.Cleanup(svc.Wait)
	reg := prometheus.NewRegistry()
	reg.MustRegister(svc.Collectors()...)
	ev := createEvent(t, pool, eventSpec{rows: 4, perRow: 25, maxPerUser: 100})
	ctx := ctxT(t, 120*time.Second)

	var ok, conflicts atomic.Int32
	var wg sync.WaitGroup
	var phase atomic.Int32 // 0 up, 1 down, 2 up again
	done := make(chan struct{})
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			// Each worker keeps at most three holds and cancels the oldest
			// beyond that, so the 100 seats never run out however fast the
			// machine is, and cancels run through the outage too.
			var mine []holds.Hold
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				seats := []string{ev.AllSeat[rng.IntN(len(ev.AllSeat))], ev.AllSeat[rng.IntN(len(ev.AllSeat))]}
				if seats[0] == seats[1] {
					seats = seats[:1]
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				u := user(w)
				h, err := svc.Create(rctx, u, seatsReq(ev, seats...))
				if err == nil {
					mine = append(mine, h)
					if len(mine) > 3 {
						if _, cerr := svc.Cancel(rctx, u, mine[0].ID); cerr != nil {
							t.Errorf("phase %d: cancel: %v", phase.Load(), cerr)
							cancel()
							return
						}
						mine = mine[1:]
					}
				}
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
				case isUnavailable(err):
					conflicts.Add(1)
				default:
					t.Errorf("phase %d: %v", phase.Load(), err)
					return
				}
			}
		}()
	}
	waitOK := func(n int32) {
		target := ok.Load() + n
		require.Eventually(t, func() bool { return ok.Load() >= target }, 30*time.Second, 10*time.Millisecond)
	}
	waitOK(5)
	assert.False(t, svc.Degraded())

	rs.Stop() // Redis dies mid-run
	phase.Store(1)
	require.Eventually(t, svc.Degraded, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1.0, gauge(t, reg, "ticketing_redis_lease_fallback"))
	waitOK(5) // sales go on, on Postgres alone

	testdb.StartOwnRedis(t, rs.Port) // back
	phase.Store(2)
	require.Eventually(t, func() bool { return !svc.Degraded() }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, 0.0, gauge(t, reg, "ticketing_redis_lease_fallback"))
	waitOK(5)
	close(done)
	wg.Wait()
	assert.Positive(t, gauge(t, reg, "ticketing_hold_lease_fallback_total"))

	// Correct throughout: every active hold has all its seats, cancelled ones
	// none, and nothing else is held.
	assert.Equal(t, int(ok.Load()), count(t, pool, `SELECT count(*) FROM holds WHERE event_id = $1`, ev.ID))
	assert.Positive(t, count(t, pool, `SELECT count(*) FROM holds WHERE event_id = $1 AND status = 'ACTIVE'`, ev.ID))
	assert.Zero(t, count(t, pool, `
		SELECT count(*) FROM hold_items hi
		JOIN holds h ON h.id = hi.hold_id
		JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
		WHERE hi.event_id = $1 AND h.status = 'ACTIVE' AND i.hold_id IS DISTINCT FROM hi.hold_id`, ev.ID), "an item not held by its active hold")
	assert.Zero(t, count(t, pool, `
		SELECT count(*) FROM hold_items hi
		JOIN holds h ON h.id = hi.hold_id
		JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
		WHERE hi.event_id = $1 AND h.status = 'CANCELLED' AND i.hold_id = hi.hold_id`, ev.ID), "a cancelled hold still holds a seat")
	assert.Zero(t, count(t, pool, `
		SELECT count(*) FROM inventory i WHERE event_id = $1 AND status = 'HELD'
		AND NOT EXISTS (SELECT 1 FROM hold_items hi WHERE hi.hold_id = i.hold_id AND hi.inventory_id = i.id)`, ev.ID))
	t.Logf("ok=%d conflicts=%d", ok.Load(), conflicts.Load())
}

// TestGAHoldsSkipTheFallback: while Redis is down, explicit seats go
// through the bounded fallback (their leases are missing); GA holds,
// which never take leases, do not wait for it.
func TestGAHoldsSkipTheFallback(t *testing.T) {
	t.Parallel()
	rs := testdb.StartOwnRedis(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), DialTimeout: 100 * time.Millisecond,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	pool := testdb.NewPool(t)
	svc := holds.New(store.New(pool), holds.Config{
		Leases:        redisstore.NewLeases(rdb, testdb.RedisPrefix(t)),
		ProbeInterval: time.Hour,
	})
	t.Cleanup(svc.Wait)
	reg := prometheus.NewRegistry()
	reg.MustRegister(svc.Collectors()...)
	ev := createEvent(t, pool, eventSpec{rows: 1, perRow: 5, gaCapacity: 5})
	ctx := ctxT(t, 30*time.Second)
	rs.Stop()
	_, err := svc.Create(ctx, user(1), seatsReq(ev, ev.AllSeat[0]))
	require.NoError(t, err)
	require.True(t, svc.Degraded())
	seats := gauge(t, reg, "ticketing_hold_lease_fallback_total")
	require.Positive(t, seats, "an explicit seat went through the fallback")
	_, err = svc.Create(ctx, user(2), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
		GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: 2}}})
	require.NoError(t, err)
	assert.Equal(t, seats, gauge(t, reg, "ticketing_hold_lease_fallback_total"), "a GA hold did not")
}
