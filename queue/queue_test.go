package queue

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// fakeEvents is an in-memory EventStore (the API test uses Postgres).
type fakeEvents map[string]store.Event

func (f fakeEvents) EventsByIDs(_ context.Context, ids []string) ([]store.Event, error) {
	var out []store.Event
	for _, id := range ids {
		if e, ok := f[id]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func redisClient(t testing.TB, url string) redis.UniversalClient {
	if url == testdb.RedisURL() {
		return testdb.NewRedis(t) // one Redis, or the cluster (testdb.RedisCluster)
	}
	opt, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// fixture is one queue-protected event, open since an hour, and one not.
type fixture struct {
	event, plain string
	events       fakeEvents
	prefix       string
	rdb          redis.UniversalClient
	clk          *clock
}

func newFixture(t testing.TB, saleStart time.Duration) *fixture {
	clk := &clock{t: time.Now().Truncate(time.Millisecond)}
	f := &fixture{
		event: uuid.NewString(), plain: uuid.NewString(), events: fakeEvents{},
		prefix: testdb.RedisPrefix(t), rdb: redisClient(t, testdb.RedisURL()), clk: clk,
	}
	f.events[f.event] = store.Event{ID: f.event, QueueRequired: true, SaleStartsAt: clk.Now().Add(saleStart)}
	f.events[f.plain] = store.Event{ID: f.plain, SaleStartsAt: clk.Now().Add(-time.Hour)}
	t.Cleanup(func() { cleanKeys(f.rdb, f.prefix) })
	return f
}

func cleanKeys(rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}

func (f *fixture) service(t testing.TB, cfg Config, rdb redis.UniversalClient) *Service {
	cfg.SigningKey = []byte("test-queue-signing-key-0123456789")
	cfg.KeyPrefix = f.prefix
	if cfg.JoinUserRate == 0 {
		cfg.JoinUserRate, cfg.JoinUserBurst = 1000, 1000
	}
	if rdb == nil {
		rdb = f.rdb
	}
	s, err := New(Deps{Redis: rdb, Events: f.events, Now: f.clk.Now}, cfg)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func users(n int) []string {
	u := make([]string, n)
	for i := range u {
		u[i] = fmt.Sprintf("user-%05d", i)
	}
	return u
}

// admitAll runs admission passes until nobody is waiting, returning the
// admitted users in order.
func admitAll(t *testing.T, s *Service, clk *clock, event string, want int) []string {
	t.Helper()
	var got []string
	for i := 0; len(got) < want && i < 10*want+100; i++ {
		clk.Add(time.Second)
		a, err := s.AdmitEvent(context.Background(), event)
		require.NoError(t, err)
		got = append(got, a...)
	}
	return got
}

func TestFiveThousandJoinConcurrently(t *testing.T) {
	// Not parallel: a burst of its own (it was flaky on a loaded machine).
	f := newFixture(t, -time.Hour)
	// The production settings: simultaneous calls wait their turn (they
	// used to need a larger pool and a 30 s timeout here, and the test was
	// still flaky on a loaded machine).
	s := f.service(t, Config{AdmitRate: 1e6, AdmitBurst: 1000, Window: 10000}, nil)
	ctx := context.Background()
	us := users(5000)
	pos := make([]int, len(us))
	var wg sync.WaitGroup
	errs := make(chan error, len(us))
	for i, u := range us {
		wg.Go(func() {
			tk, err := s.Join(ctx, f.event, u, "")
			if err != nil {
				errs <- err
				return
			}
			pos[i] = tk.Position
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := make([]bool, len(us)+1)
	for _, p := range pos {
		require.True(t, p >= 1 && p <= len(us) && !seen[p], "position %d", p)
		seen[p] = true
	}

	// Reconnecting keeps the place.
	for _, i := range []int{0, 1234, 4999} {
		tk, err := s.Join(ctx, f.event, us[i], "")
		require.NoError(t, err)
		require.Equal(t, pos[i], tk.Position)
		got, err := s.Ticket(ctx, f.event, us[i])
		require.NoError(t, err)
		require.Equal(t, Waiting, got.Status)
		require.Equal(t, pos[i], got.Position)
	}

	// Admission follows the order.
	byPos := make([]string, len(us))
	for i, p := range pos {
		byPos[p-1] = us[i]
	}
	first, err := s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, byPos[:1000], first)
	tk, err := s.Ticket(ctx, f.event, byPos[1500])
	require.NoError(t, err)
	require.Equal(t, 501, tk.Position)
	rest := admitAll(t, s, f.clk, f.event, len(us)-1000)
	require.Equal(t, byPos[1000:], rest)

	adm, err := s.Ticket(ctx, f.event, byPos[42])
	require.NoError(t, err)
	require.Equal(t, Admitted, adm.Status)
	require.NoError(t, s.Verify(adm.Token, byPos[42], f.event))
	n, err := s.ActiveAdmissions(ctx, f.event)
	require.NoError(t, err)
	require.EqualValues(t, len(us), n)
}

func TestPreOpeningCrowdIsShuffled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	s := f.service(t, Config{AdmitRate: 1e6, AdmitBurst: 1000, Window: 10000}, nil)
	ctx := context.Background()
	crowd := users(300)
	for _, u := range crowd {
		tk, err := s.Join(ctx, f.event, u, "")
		require.NoError(t, err)
		require.Equal(t, Waiting, tk.Status)
		require.NotNil(t, tk.EstimatedWait)
		require.Greater(t, *tk.EstimatedWait, 59*time.Minute)
	}
	// Nobody is admitted before the opening, and rejoining cannot reroll.
	a, err := s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Empty(t, a)
	before, err := s.Ticket(ctx, f.event, crowd[7])
	require.NoError(t, err)
	again, err := s.Join(ctx, f.event, crowd[7], "")
	require.NoError(t, err)
	require.Equal(t, before.Position, again.Position)
	// Nor can leaving and joining again: the draw is the user's own.
	for range 5 {
		_, err = s.Leave(ctx, f.event, crowd[7])
		require.NoError(t, err)
		f.clk.Add(2 * time.Second) // past the join rate limit
		again, err = s.Join(ctx, f.event, crowd[7], "")
		require.NoError(t, err)
		require.Equal(t, before.Position, again.Position, "a leave and a join re-drew the place")
	}

	f.clk.Add(time.Hour)
	late, err := s.Join(ctx, f.event, "late-user", "")
	require.NoError(t, err)
	require.Equal(t, len(crowd)+1, late.Position, "after opening: behind the whole crowd")

	got := admitAll(t, s, f.clk, f.event, len(crowd)+1)
	require.Len(t, got, len(crowd)+1)
	require.Equal(t, "late-user", got[len(crowd)])
	admitted := got[:len(crowd)]
	require.NotEqual(t, crowd, admitted, "the crowd must not keep its join order")
	sorted := slices.Clone(admitted)
	slices.Sort(sorted)
	require.Equal(t, crowd, sorted, "everyone admitted exactly once")
	// Admitted users rejoining keep their admission.
	tk, err := s.Join(ctx, f.event, admitted[0], "")
	require.NoError(t, err)
	require.Equal(t, Admitted, tk.Status)
}

// Release on a confirmed order frees the admission the order's hold was
// made under, not a newer one: when the first admission expired (the hold
// outlived it) and the buyer queued and was admitted again, the newer
// admission still counts against the window.
func TestReleaseFreesOnlyTheHoldsAdmission(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	s := f.service(t, Config{Window: 1, AdmitRate: 1000, AdmitBurst: 10, AdmissionTTL: time.Minute}, nil)
	ctx := context.Background()
	admitted := func(user string) bool {
		tk, err := s.Ticket(ctx, f.event, user)
		require.NoError(t, err)
		return tk != nil && tk.Status == Admitted
	}
	_, err := s.Join(ctx, f.event, "u1", "")
	require.NoError(t, err)
	got, err := s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, []string{"u1"}, got)
	heldAt := f.clk.Now() // u1 holds seats under this admission

	f.clk.Add(time.Minute + time.Second) // the admission runs out; the hold lives on
	_, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	f.clk.Add(2 * time.Second)
	_, err = s.Join(ctx, f.event, "u1", "")
	require.NoError(t, err)
	got, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, []string{"u1"}, got, "admitted again")

	require.NoError(t, s.Release(ctx, f.event, "u1", heldAt)) // the first order confirms
	require.True(t, admitted("u1"), "the newer admission is not the order's")
	require.NoError(t, s.Release(ctx, f.event, "u1", f.clk.Now()))
	require.False(t, admitted("u1"))
}

func TestTwoControllersNeverOverAdmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	const window = 10
	cfg := Config{AdmitRate: 2000, AdmitBurst: 50, Window: window, AdmissionTTL: 300 * time.Millisecond}
	f.events[f.event] = store.Event{ID: f.event, QueueRequired: true, SaleStartsAt: time.Now().Add(-time.Hour)}
	mk := func() *Service {
		cfg := cfg
		cfg.SigningKey = []byte("test-queue-signing-key-0123456789")
		cfg.KeyPrefix = f.prefix
		cfg.JoinUserRate = 0
		s, err := New(Deps{Redis: redisClient(t, testdb.RedisURL()), Events: f.events}, cfg)
		require.NoError(t, err)
		return s
	}
	a, b := mk(), mk()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	us := users(400)
	for _, u := range us {
		_, err := a.Join(ctx, f.event, u, "")
		require.NoError(t, err)
	}
	admKey := f.prefix + "queue:{" + f.event + "}:adm"

	var mu sync.Mutex
	count := map[string]int{}
	total := 0
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range []*Service{a, b} {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.AdmitEvent(ctx, f.event)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, u := range got {
					count[u]++
				}
				total += len(got)
				mu.Unlock()
			}
		})
	}
	// Buyers finish quickly (release), or let the admission expire.
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			members, _ := f.rdb.ZRange(ctx, admKey, 0, -1).Result()
			for j, u := range members {
				if (i+j)%3 != 0 { // a third let their admission expire
					_ = b.Release(ctx, f.event, u, f.clk.Now())
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	maxSeen := int64(0)
	for {
		n, err := f.rdb.ZCard(ctx, admKey).Result()
		require.NoError(t, err)
		maxSeen = max(maxSeen, n)
		require.LessOrEqual(t, n, int64(window), "window exceeded")
		mu.Lock()
		t2 := total
		mu.Unlock()
		if t2 >= len(us) || ctx.Err() != nil {
			break
		}
	}
	close(done)
	wg.Wait()
	require.Len(t, count, len(us))
	for u, c := range count {
		require.Equal(t, 1, c, "user %s admitted %d times", u, c)
	}
	require.GreaterOrEqual(t, maxSeen, int64(window-1), "the window should have been (nearly) full at times")
}

func TestTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	s := f.service(t, Config{AdmissionTTL: time.Minute}, nil)
	ctx := context.Background()
	_, err := s.Join(ctx, f.event, "alice", "")
	require.NoError(t, err)
	_, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	tk, err := s.Ticket(ctx, f.event, "alice")
	require.NoError(t, err)
	require.Equal(t, Admitted, tk.Status)
	require.WithinDuration(t, f.clk.Now().Add(time.Minute), tk.ExpiresAt, time.Second)
	tok := tk.Token
	require.NoError(t, s.Verify(tok, "alice", f.event))

	refused := func(name, token, user, event string) {
		t.Helper()
		err := s.Verify(token, user, event)
		require.ErrorIs(t, err, apperr.ErrQueueAdmissionRequired, name)
		d, _ := apperr.Describe(err)
		require.Equal(t, "QUEUE_ADMISSION_REQUIRED", d.Code)
		require.Equal(t, 428, d.HTTPStatus)
	}
	refused("empty", "", "alice", f.event)
	refused("other user", tok, "bob", f.event)
	refused("other event", tok, "alice", uuid.NewString())
	tampered := []byte(tok)
	tampered[len(tampered)/2] ^= 1
	refused("tampered", string(tampered), "alice", f.event)

	other := f.service(t, Config{}, nil)
	other.cfg.SigningKey = []byte("another-key-another-key-another!")
	forged, _ := other.mint("alice", f.event, f.clk.Now().Add(time.Minute))
	refused("forged (other key)", forged, "alice", f.event)
	noneAlg := "eyJhbGciOiJub25lIiwidHlwIjoicXVldWUtYWRtaXNzaW9uK2p3dCJ9." +
		"eyJldnQiOiIiLCJzdWIiOiJhbGljZSJ9."
	refused("alg none", noneAlg, "alice", f.event)
	userJWT := signPlain(t, s.cfg.SigningKey, "alice")
	refused("user JWT signed with the same key", userJWT, "alice", f.event)

	f.clk.Add(time.Minute)
	refused("expired", tok, "alice", f.event)
	// The slot is gone too: the ticket says EXPIRED, then rejoining goes to the back.
	_, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	exp, err := s.Ticket(ctx, f.event, "alice")
	require.NoError(t, err)
	require.Equal(t, Expired, exp.Status)
	back, err := s.Join(ctx, f.event, "alice", "")
	require.NoError(t, err)
	require.Equal(t, Waiting, back.Status)
}

func TestJoinRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	s := f.service(t, Config{JoinUserRate: 1, JoinUserBurst: 3, JoinAddrRate: 1, JoinAddrBurst: 5, Window: 1}, nil)
	ctx := context.Background()
	for range 3 {
		_, err := s.Join(ctx, f.event, "u1", "10.0.0.1")
		require.NoError(t, err)
	}
	_, err := s.Join(ctx, f.event, "u1", "10.0.0.1")
	var rl *apperr.RateLimitedError
	require.ErrorAs(t, err, &rl)
	require.Positive(t, rl.RetryAfter)
	d, _ := apperr.Describe(err)
	require.Equal(t, "RATE_LIMITED", d.Code)
	// Per address: two more users from the same address pass, the next is refused.
	_, err = s.Join(ctx, f.event, "u2", "10.0.0.1")
	require.NoError(t, err)
	_, err = s.Join(ctx, f.event, "u3", "10.0.0.1")
	require.NoError(t, err)
	_, err = s.Join(ctx, f.event, "u4", "10.0.0.1")
	require.ErrorAs(t, err, &rl)
	_, err = s.Join(ctx, f.event, "u4", "10.0.0.2")
	require.NoError(t, err)
	f.clk.Add(2 * time.Second)
	_, err = s.Join(ctx, f.event, "u1", "10.0.0.1")
	require.NoError(t, err)

	// Events without a queue, unknown events, bad ids.
	_, err = s.Join(ctx, f.plain, "u1", "")
	var inv *apperr.InvalidInputError
	require.ErrorAs(t, err, &inv)
	_, err = s.Join(ctx, uuid.NewString(), "u1", "")
	require.ErrorIs(t, err, apperr.ErrNotFound)
	_, err = s.Join(ctx, "nope", "u1", "")
	require.ErrorAs(t, err, &inv)
	tk, err := s.Ticket(ctx, f.plain, "u1")
	require.NoError(t, err)
	require.Nil(t, tk)

	// Leave and Release free the slot at once (window 1).
	got, err := s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, []string{"u1"}, got)
	got, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Empty(t, got, "window full")
	left, err := s.Leave(ctx, f.event, "u1")
	require.NoError(t, err)
	require.True(t, left)
	got, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, []string{"u2"}, got)
	require.NoError(t, s.Release(ctx, f.event, "u2", f.clk.Now()))
	got, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, []string{"u3"}, got)
	tk, err = s.Ticket(ctx, f.event, "u1")
	require.NoError(t, err)
	require.Nil(t, tk, "left")
	left, err = s.Leave(ctx, f.event, "u1")
	require.NoError(t, err)
	require.False(t, left)
}

func TestUpdatesAndEstimate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	s := f.service(t, Config{AdmitRate: 10, AdmitBurst: 1, Window: 100, Refresh: time.Hour}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, u := range users(5) {
		_, err := s.Join(ctx, f.event, u, "")
		require.NoError(t, err)
	}
	_, err := s.Updates(ctx, f.plain, "user-00002")
	require.ErrorIs(t, err, apperr.ErrNotFound, "an event without a queue")
	ch, err := s.Updates(ctx, f.event, "user-00002")
	require.NoError(t, err)
	first := <-ch
	require.Equal(t, 3, first.Position)
	require.Nil(t, first.EstimatedWait, "nothing measured yet")

	// One admission per 100 ms of (fake) time: the measured rate makes the estimate.
	next := func() Ticket {
		t.Helper()
		select {
		case tk := <-ch:
			return tk
		case <-time.After(10 * time.Second):
			t.Fatal("no update")
			return Ticket{}
		}
	}
	for range 2 {
		f.clk.Add(100 * time.Millisecond)
		_, err := s.AdmitEvent(ctx, f.event)
		require.NoError(t, err)
	}
	tk := next()
	for tk.Position != 1 {
		tk = next()
	}
	require.Equal(t, Waiting, tk.Status)
	require.NotNil(t, tk.EstimatedWait)
	require.InDelta(t, 100*time.Millisecond, *tk.EstimatedWait, float64(50*time.Millisecond))
	f.clk.Add(100 * time.Millisecond)
	_, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	tk = next()
	require.Equal(t, Admitted, tk.Status)
	require.NoError(t, s.Verify(tk.Token, "user-00002", f.event))
	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	}, 5*time.Second, 10*time.Millisecond, "closed when ctx ends")
}

func TestRedisRestartMidSale(t *testing.T) {
	// Not parallel: it times a join against a stopped Redis (under 2 s).
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	own := testdb.StartOwnRedis(t, 0)
	f := newFixture(t, -time.Hour)
	rdb := redis.NewClient(&redis.Options{Addr: own.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	s := f.service(t, Config{Window: 2, AdmitRate: 100, AdmissionTTL: time.Minute}, rdb)
	ctx := context.Background()
	for _, u := range users(5) {
		_, err := s.Join(ctx, f.event, u, "")
		require.NoError(t, err)
	}
	got, err := s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Len(t, got, 2)
	tk, err := s.Ticket(ctx, f.event, got[0])
	require.NoError(t, err)
	token := tk.Token

	own.Stop()
	// Redis down: no new buyers, quickly; issued tokens keep working.
	start := time.Now()
	_, err = s.Join(ctx, f.event, "newcomer", "")
	require.ErrorIs(t, err, apperr.ErrServiceUnavailable)
	d, _ := apperr.Describe(err)
	require.Equal(t, "SERVICE_UNAVAILABLE", d.Code)
	require.Less(t, time.Since(start), 2*time.Second)
	_, err = s.Ticket(ctx, f.event, "user-00003")
	require.ErrorIs(t, err, apperr.ErrServiceUnavailable)
	_, err = s.AdmitEvent(ctx, f.event)
	require.ErrorIs(t, err, apperr.ErrServiceUnavailable)
	require.NoError(t, s.Verify(token, got[0], f.event), "offline verification")
	_, err = s.Join(ctx, f.plain, "u", "") // an event without a queue never needs Redis
	var inv *apperr.InvalidInputError
	require.ErrorAs(t, err, &inv)

	// Restart (nothing persisted): users rejoin and get new places; the old
	// permits still count, so nobody is admitted until they expire.
	restart := func() *testdb.OwnRedis {
		r := testdb.StartOwnRedis(t, own.Port)
		require.Eventually(t, func() bool {
			_, err := s.Join(ctx, f.event, "user-00004", "")
			return err == nil
		}, 10*time.Second, 50*time.Millisecond)
		tk2, err := s.Join(ctx, f.event, "user-00003", "")
		require.NoError(t, err)
		require.Equal(t, 2, tk2.Position)
		return r
	}
	second := restart()
	got2, err := s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Empty(t, got2, "permits issued before the restart are still valid")
	require.NoError(t, s.Verify(token, got[0], f.event))
	// A second restart within the permits' lifetime must not forget them.
	second.Stop()
	restart()
	got2, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Empty(t, got2, "permits issued before the first restart are still valid")

	f.clk.Add(time.Minute)
	require.Error(t, s.Verify(token, got[0], f.event))
	got2, err = s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, []string{"user-00004", "user-00003"}, got2)
}

// signPlain signs a user-style JWT (no permit typ) with key.
func signPlain(t *testing.T, key []byte, sub string) string {
	c := admissionClaims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: tokenIssuer, Subject: sub, Audience: jwt.ClaimStrings{tokenAudience},
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour)),
	}}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
	require.NoError(t, err)
	return s
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"QUEUE_ADMIT_RATE": "5", "QUEUE_WINDOW": "7", "QUEUE_ADMISSION_TTL": "90s", "TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"}
	c, err := ConfigFromEnv(func(k string) string { return env[k] }, "0123456789abcdef")
	require.NoError(t, err)
	require.Equal(t, 5.0, c.AdmitRate)
	require.Equal(t, 7, c.Window)
	require.Equal(t, 90*time.Second, c.AdmissionTTL)
	require.Len(t, c.TrustedProxies, 2)
	env["QUEUE_WINDOW"] = "x"
	_, err = ConfigFromEnv(func(k string) string { return env[k] }, "0123456789abcdef")
	require.ErrorContains(t, err, "QUEUE_WINDOW")
	require.False(t, errors.Is(err, apperr.ErrNotFound))

	// Unset, the rate and window are the adaptive controller's ceilings,
	// or the fixed pace without it.
	c, err = ConfigFromEnv(func(string) string { return "" }, "0123456789abcdef")
	require.NoError(t, err)
	require.True(t, c.Adaptive)
	require.Equal(t, float64(AdaptiveCeilingRate), c.AdmitRate)
	require.Equal(t, AdaptiveCeilingWindow, c.Window)
	require.Equal(t, AdaptiveCeilingRate, c.AdmitBurst)
	c, err = ConfigFromEnv(func(k string) string { return map[string]string{"QUEUE_ADAPTIVE": "false"}[k] }, "0123456789abcdef")
	require.NoError(t, err)
	require.False(t, c.Adaptive)
	require.Equal(t, DefaultConfig().AdmitRate, c.AdmitRate)
	require.Equal(t, DefaultConfig().Window, c.Window)
}

// scriptCounter counts the script runs a client sends (alone or pipelined).
type scriptCounter struct{ n atomic.Int64 }

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}
func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}
func (c *scriptCounter) count(cmd redis.Cmder) {
	if n := cmd.Name(); n == "evalsha" || n == "eval" {
		c.n.Add(1)
	}
}

// The streams an admission wakes are read by their event's room, one
// script run per redisstore.StatesChunk users, not one call each; each
// still gets its own place.
func TestStreamsShareOneRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -time.Hour)
	rdb := testdb.NewRedis(t)
	var calls scriptCounter
	rdb.AddHook(&calls)
	s := f.service(t, Config{AdmitRate: 1000, AdmitBurst: 1, Window: 1000, Refresh: time.Hour}, rdb)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 600
	us := users(n)
	for _, u := range us {
		_, err := s.Join(ctx, f.event, u, "")
		require.NoError(t, err)
	}
	streams := make([]<-chan Ticket, n)
	var wg sync.WaitGroup
	for i, u := range us {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, err := s.Updates(ctx, f.event, u)
			require.NoError(t, err)
			require.Equal(t, i+1, (<-ch).Position)
			streams[i] = ch
		}()
	}
	wg.Wait()
	time.Sleep(1100 * time.Millisecond) // past updateGap and positionGap of the first frames
	before := calls.n.Load()
	f.clk.Add(time.Second)
	admitted, err := s.AdmitEvent(ctx, f.event)
	require.NoError(t, err)
	require.Equal(t, []string{us[0]}, admitted)
	for i, ch := range streams {
		select {
		case tk := <-ch:
			if i == 0 {
				require.Equal(t, Admitted, tk.Status)
			} else {
				require.Equal(t, Waiting, tk.Status)
				require.Equal(t, i, tk.Position, "stream %d", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d: no update", i)
		}
	}
	// One admission run, and the room's round: 600 streams in two chunks
	// (and a round or two more for the streams whose move was held back),
	// where one call per stream was 600.
	runs := calls.n.Load() - before - 1
	require.LessOrEqual(t, runs, int64(10), "script runs for %d woken streams", n)
	t.Logf("%d streams woken by one admission: %d script runs to read their places", n, runs)
}
