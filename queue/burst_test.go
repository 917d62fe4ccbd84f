package queue

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// TestBurstOfTenThousandJoins: 10,000 buyers join at the same instant with
// the production settings (default timeouts, default go-redis pool) while
// position reads and update streams of earlier joiners run: nobody is
// turned away, everyone gets a distinct place, and every stream keeps
// streaming. With a 500 ms deadline per call (the code before) about three
// quarters of the burst got SERVICE_UNAVAILABLE from a healthy Redis.
func TestBurstOfTenThousandJoins(t *testing.T) {
	// Not parallel: a burst of its own (it was flaky on a loaded machine).
	f := newFixture(t, -time.Hour)
	s := f.service(t, Config{AdmitRate: 1e6, AdmitBurst: 1000, Window: 100000, Refresh: 200 * time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	early := make([]string, 100)
	for i := range early {
		early[i] = fmt.Sprintf("early-%03d", i)
		_, err := s.Join(ctx, f.event, early[i], "")
		require.NoError(t, err)
	}
	streams := make([]<-chan Ticket, len(early))
	for i, u := range early {
		ch, err := s.Updates(ctx, f.event, u)
		require.NoError(t, err)
		<-ch // the current state comes first
		streams[i] = ch
	}

	us := users(10000)
	pos := make([]int, len(us))
	var failed, readFailed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, u := range us {
		wg.Go(func() {
			<-start
			tk, err := s.Join(ctx, f.event, u, "")
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			pos[i] = tk.Position
		})
	}
	burstDone := make(chan struct{})
	var readers sync.WaitGroup
	for _, u := range early[:50] {
		readers.Go(func() {
			<-start
			for {
				select {
				case <-burstDone:
					return
				default:
				}
				if tk, err := s.Ticket(ctx, f.event, u); err != nil || tk == nil || tk.Status != Waiting {
					readFailed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("read: %v %v", tk, err))
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(burstDone)
	readers.Wait()
	require.Zero(t, failed.Load(), "joins refused: %v", firstErr.Load())
	require.Zero(t, readFailed.Load(), "position reads failed: %v", firstErr.Load())
	seen := make([]bool, len(early)+len(us)+1)
	for _, p := range pos {
		require.True(t, p > len(early) && p < len(seen) && !seen[p], "position %d", p)
		seen[p] = true
	}
	// Every stream still delivers (the periodic refresh at least).
	for i, ch := range streams {
		select {
		case tk, ok := <-ch:
			require.True(t, ok, "stream %d closed", i)
			require.Equal(t, Waiting, tk.Status)
			require.Equal(t, i+1, tk.Position)
		case <-ctx.Done():
		}
	}
}

// TestHungRedisFailsWaitingJoins: a Redis that accepts connections but
// answers nothing (SIGSTOP) turns the waiting joins and reads away with
// SERVICE_UNAVAILABLE after the stall timeout, although their own wait
// budget (an hour here) is far from spent; once it runs again, joins
// succeed.
func TestHungRedisFailsWaitingJoins(t *testing.T) {
	// Not parallel: it times joins against a hung Redis.
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	own := testdb.StartOwnRedis(t, 0)
	f := newFixture(t, -time.Hour)
	rdb := redis.NewClient(&redis.Options{Addr: own.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	s := f.service(t, Config{StallTimeout: 300 * time.Millisecond, WaitTimeout: time.Hour}, rdb)
	ctx := context.Background()
	_, err := s.Join(ctx, f.event, "before", "")
	require.NoError(t, err)

	own.Pause()
	defer own.Resume()
	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Go(func() {
			if i%2 == 0 {
				_, errs[i] = s.Join(ctx, f.event, fmt.Sprintf("hung-%03d", i), "")
			} else {
				_, errs[i] = s.Ticket(ctx, f.event, "before")
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, apperr.ErrServiceUnavailable)
		d, _ := apperr.Describe(err)
		require.Equal(t, "SERVICE_UNAVAILABLE", d.Code)
	}
	own.Resume()
	require.Eventually(t, func() bool {
		_, err := s.Join(ctx, f.event, "after", "")
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
}

// countingEvents counts its reads and takes its time, like Postgres under a
// burst.
type countingEvents struct {
	fakeEvents
	reads atomic.Int64
}

func (c *countingEvents) EventsByIDs(ctx context.Context, ids []string) ([]store.Event, error) {
	c.reads.Add(1)
	time.Sleep(20 * time.Millisecond)
	return c.fakeEvents.EventsByIDs(ctx, ids)
}

// TestBurstReadsTheEventOnce: a burst of joins for an event not in the
// cache shares one read of it instead of sending every joiner to Postgres.
func TestBurstReadsTheEventOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	ev := &countingEvents{fakeEvents: f.events}
	s, err := New(Deps{Redis: f.rdb, Events: ev, Now: f.clk.Now}, Config{
		SigningKey: []byte("test-queue-signing-key-0123456789"), KeyPrefix: f.prefix,
		JoinUserRate: 1000, JoinUserBurst: 1000,
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, u := range users(500) {
		wg.Go(func() {
			<-start
			_, err := s.Join(context.Background(), f.event, u, "")
			require.NoError(t, err)
		})
	}
	close(start)
	wg.Wait()
	require.LessOrEqual(t, ev.reads.Load(), int64(3), "one read per burst (a straggler may start a second)")
}

// TestUpdatesBeforeJoin: a stream opened before the user joined waits for
// the join, starts with the ticket the join gave, then streams the changes;
// a join on another instance (another Service on the same Redis) is seen
// too.
func TestUpdatesBeforeJoin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	cfg := Config{AdmitRate: 1000, AdmitBurst: 1, Window: 100, Refresh: time.Hour}
	s := f.service(t, cfg, nil)
	other := f.service(t, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recv := func(ch <-chan Ticket) Ticket {
		t.Helper()
		select {
		case tk, ok := <-ch:
			require.True(t, ok, "stream closed")
			return tk
		case <-time.After(30 * time.Second):
			t.Fatal("no message")
			return Ticket{}
		}
	}

	_, err := s.Join(ctx, f.event, "ahead", "")
	require.NoError(t, err)
	here, err := s.Updates(ctx, f.event, "me")
	require.NoError(t, err, "no NOT_FOUND before the join")
	there, err := s.Updates(ctx, f.event, "you")
	require.NoError(t, err)
	select {
	case tk := <-here:
		t.Fatalf("a message before the join: %+v", tk)
	default:
	}
	joined, err := s.Join(ctx, f.event, "me", "")
	require.NoError(t, err)
	first := recv(here)
	require.Equal(t, Waiting, first.Status)
	require.Equal(t, joined.Position, first.Position)
	require.Equal(t, 2, first.Position)

	_, err = other.Join(ctx, f.event, "you", "")
	require.NoError(t, err)
	require.Equal(t, 3, recv(there).Position, "a join on another instance")

	f.clk.Add(time.Second)
	_, err = s.AdmitEvent(ctx, f.event) // admits "ahead" (burst 1)
	require.NoError(t, err)
	require.Equal(t, 1, recv(here).Position)
}
