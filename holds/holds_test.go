package holds_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/fixtures"
)

func TestCreateGetCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{})
	ctx := ctxT(t, 30*time.Second)

	h, err := e.svc.Create(ctx, user(1), holds.CreateRequest{
		EventID:          ev.ID,
		SeatIDs:          []string{ev.Seats[1][3], ev.Seats[1][2]},
		GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: 2}},
		IdempotencyKey:   key(),
	})
	require.NoError(t, err)
	assert.Equal(t, holds.StatusActive, h.Status)
	assert.Equal(t, int64(2*5000+2*2500), h.TotalAmount)
	assert.Equal(t, "EUR", h.Currency)
	assert.InDelta(t, 600, h.ExpiresAt.Sub(h.CreatedAt).Seconds(), 0.001)

	items, err := e.svc.Items(ctx, h.ID)
	require.NoError(t, err)
	require.Len(t, items, 4)
	var seats []string
	for _, it := range items {
		if it.SeatID != nil {
			seats = append(seats, *it.SeatID)
			assert.Equal(t, int64(5000), it.PriceAmount)
		} else {
			assert.Equal(t, ev.GA, it.SectionID)
		}
	}
	assert.ElementsMatch(t, []string{ev.Seats[1][3], ev.Seats[1][2]}, seats)

	// Leases were published with the committed expiry.
	ttl, err := e.rdb.PTTL(ctx, e.leases.Key(ev.ID, ev.Seats[1][3])).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Until(h.ExpiresAt).Seconds(), ttl.Seconds(), 1)

	got, err := e.svc.Get(ctx, user(1), h.ID)
	require.NoError(t, err)
	assert.Equal(t, h.ID, got.ID)
	_, err = e.svc.Get(ctx, user(2), h.ID)
	assert.ErrorIs(t, err, apperr.ErrForbidden)
	_, err = e.svc.Get(ctx, user(1), "01900000-0000-7000-8000-000000000000")
	assert.ErrorIs(t, err, apperr.ErrNotFound)

	// Another user cannot take those seats, nor cancel the hold.
	_, err = e.svc.Create(ctx, user(2), seatsReq(ev, ev.Seats[1][2]))
	var su *apperr.SeatUnavailableError
	require.ErrorAs(t, err, &su)
	assert.Equal(t, []string{ev.Seats[1][2]}, su.SeatIDs)
	_, err = e.svc.Cancel(ctx, user(2), h.ID)
	assert.ErrorIs(t, err, apperr.ErrForbidden)

	c, err := e.svc.Cancel(ctx, user(1), h.ID)
	require.NoError(t, err)
	assert.Equal(t, holds.StatusCancelled, c.Status)
	_, err = e.svc.Cancel(ctx, user(1), h.ID)
	assert.ErrorIs(t, err, apperr.ErrHoldExpired)
	n, err := e.rdb.Exists(ctx, e.leases.Key(ev.ID, ev.Seats[1][3])).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "cancel releases the leases")
	// Freed at once, for anyone.
	_, err = e.svc.Create(ctx, user(2), seatsReq(ev, ev.Seats[1][2], ev.Seats[1][3]))
	require.NoError(t, err)
	assert.Equal(t, 3, count(t, e.pool, `SELECT count(*) FROM outbox WHERE topic = 'inventory'`))
}

func TestValidationAndSaleConditions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{})
	closed := createEvent(t, e.pool, eventSpec{saleNotOpen: true})
	queued := createEvent(t, e.pool, eventSpec{queueRequired: true})
	other := createEvent(t, e.pool, eventSpec{})
	ctx := ctxT(t, 30*time.Second)

	field := func(err error) string {
		var inv *apperr.InvalidInputError
		if errors.As(err, &inv) {
			return inv.Field
		}
		return ""
	}
	_, err := e.svc.Create(ctx, user(1), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key()})
	assert.Equal(t, "input.seatIds", field(err))
	_, err = e.svc.Create(ctx, user(1), holds.CreateRequest{EventID: ev.ID, SeatIDs: []string{ev.AllSeat[0]}})
	assert.Equal(t, "input.idempotencyKey", field(err))
	_, err = e.svc.Create(ctx, user(1), seatsReq(ev, other.AllSeat[0]))
	assert.Equal(t, "input.seatIds", field(err), "a seat of another venue")
	_, err = e.svc.Create(ctx, user(1), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
		GeneralAdmission: []holds.GARequest{{SectionID: ev.Seated, Quantity: 1}}})
	assert.Equal(t, "input.generalAdmission.sectionId", field(err), "GA from a seated section")
	_, err = e.svc.Create(ctx, user(1), seatsReq(closed, closed.AllSeat[0]))
	assert.ErrorIs(t, err, apperr.ErrSaleNotOpen)
	_, err = e.svc.Create(ctx, user(1), seatsReq(queued, queued.AllSeat[0]))
	assert.ErrorIs(t, err, apperr.ErrQueueAdmissionRequired)
	_, err = e.svc.Create(ctx, user(1), seatsReq(event{ID: "01900000-0000-7000-8000-000000000000"}, ev.AllSeat[0]))
	assert.ErrorIs(t, err, apperr.ErrNotFound)

	// The queue verifier admits a valid token.
	e2 := holds.New(e.st, holds.Config{Admission: verifierFunc(func(token, u, evID string) error {
		if token == "ok" && evID == queued.ID {
			return nil
		}
		return errors.New("bad token")
	})})
	r := seatsReq(queued, queued.AllSeat[0])
	r.AdmissionToken = "nope"
	_, err = e2.Create(ctx, user(1), r)
	assert.ErrorIs(t, err, apperr.ErrQueueAdmissionRequired)
	r.AdmissionToken = "ok"
	_, err = e2.Create(ctx, user(1), r)
	assert.NoError(t, err)
}

type verifierFunc func(token, userID, eventID string) error

func (f verifierFunc) Verify(token, userID, eventID string) error { return f(token, userID, eventID) }

func TestBestAvailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{rows: 3, perRow: 10, maxPerUser: 30})
	ctx := ctxT(t, 30*time.Second)
	seatsOf := func(h holds.Hold) []string {
		items, err := e.svc.Items(ctx, h.ID)
		require.NoError(t, err)
		var out []string
		for _, it := range items {
			out = append(out, *it.SeatID)
		}
		return out
	}
	best := func(u, q int, adjacent bool) (holds.Hold, error) {
		return e.svc.Create(ctx, user(u), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
			BestAvailable: &holds.BestAvailable{Quantity: q, Adjacent: adjacent}})
	}
	// Front row, centre: seats 4..7 of 1..10 (0-based 3..6).
	h, err := best(1, 4, true)
	require.NoError(t, err)
	assert.ElementsMatch(t, ev.Seats[0][3:7], seatsOf(h))
	// Row 0 has runs 1-3 and 8-10 left: 3 adjacent fit there.
	h, err = best(2, 3, true)
	require.NoError(t, err)
	got := seatsOf(h)
	assert.True(t, slices.Equal(sorted(got), sorted(ev.Seats[0][0:3])) || slices.Equal(sorted(got), sorted(ev.Seats[0][7:10])), got)
	// 5 adjacent no longer fit in row 0: row 1, centre.
	h, err = best(3, 5, true)
	require.NoError(t, err)
	assert.ElementsMatch(t, ev.Seats[1][2:7], seatsOf(h))
	// Not adjacent: the 3 remaining front-row seats first.
	h, err = best(4, 3, false)
	require.NoError(t, err)
	for _, s := range seatsOf(h) {
		assert.Contains(t, ev.Seats[0], s)
	}
	// Too many adjacent: none.
	_, err = best(5, 11, true)
	assert.True(t, isUnavailable(err), err)
	// Restricted to a section, mixed with explicit seats and GA.
	h, err = e.svc.Create(ctx, user(6), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
		SeatIDs:          []string{ev.Seats[2][0]},
		BestAvailable:    &holds.BestAvailable{Quantity: 2, SectionID: ev.Seated, Adjacent: true},
		GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: 1}}})
	require.NoError(t, err)
	items, err := e.svc.Items(ctx, h.ID)
	require.NoError(t, err)
	assert.Len(t, items, 4)
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// 200 users race for one seat, through the service: exactly one hold.
func TestRace200OneSeat(t *testing.T) {
	t.Parallel()
	for _, noRedis := range []bool{false, true} {
		e := newEnv(t, noRedis, holds.Config{})
		ev := createEvent(t, e.pool, eventSpec{})
		ctx := ctxT(t, 60*time.Second)
		var ok, conflicts atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.svc.Create(ctx, user(i), seatsReq(ev, ev.Seats[0][0]))
				switch {
				case err == nil:
					ok.Add(1)
				case isUnavailable(err):
					conflicts.Add(1)
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		assert.Equal(t, int32(1), ok.Load(), "redis=%v", !noRedis)
		assert.Equal(t, int32(199), conflicts.Load())
		assert.Equal(t, 1, count(t, e.pool, `SELECT count(*) FROM holds WHERE event_id = $1`, ev.ID))
		assert.Equal(t, 1, count(t, e.pool, `SELECT count(*) FROM inventory WHERE event_id = $1 AND status = 'HELD'`, ev.ID))
	}
}

// 50 users race for overlapping seat sets listed in random orders.
func TestRaceOverlappingSets(t *testing.T) {
	t.Parallel()
	for _, noRedis := range []bool{false, true} {
		e := newEnv(t, noRedis, holds.Config{})
		ev := createEvent(t, e.pool, eventSpec{rows: 1, perRow: 16, maxPerUser: 8})
		ctx := ctxT(t, 60*time.Second)
		type result struct {
			seats []string
			hold  holds.Hold
			err   error
		}
		results := make([]result, 50)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 50 {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			perm := rng.Perm(len(ev.AllSeat))[:2+rng.IntN(4)]
			var seats []string
			for _, p := range perm {
				seats = append(seats, ev.AllSeat[p])
			}
			results[i].seats = seats
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				results[i].hold, results[i].err = e.svc.Create(rctx, user(i), seatsReq(ev, seats...))
			}()
		}
		close(start)
		wg.Wait()
		holder := map[string]string{} // seat -> hold id, from the successes
		wins := 0
		for _, r := range results {
			if r.err != nil {
				require.True(t, isUnavailable(r.err), "no deadlock or timeout: %v", r.err)
				continue
			}
			wins++
			for _, s := range r.seats {
				require.Empty(t, holder[s], "seat %s held twice", s)
				holder[s] = r.hold.ID
			}
		}
		require.Positive(t, wins)
		// The database agrees: all-or-nothing, and nothing else is held.
		rows, err := e.pool.Query(ctx, `SELECT seat_id::text, coalesce(hold_id::text, '') FROM inventory WHERE event_id = $1 AND seat_id IS NOT NULL`, ev.ID)
		require.NoError(t, err)
		for rows.Next() {
			var seat, hold string
			require.NoError(t, rows.Scan(&seat, &hold))
			assert.Equal(t, holder[seat], hold, "seat %s", seat)
		}
		require.NoError(t, rows.Err())
		assert.Equal(t, wins, count(t, e.pool, `SELECT count(*) FROM holds WHERE event_id = $1`, ev.ID))
	}
}

// The same user fires 10 holds at once against a limit of 4.
func TestUserLimitConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{maxPerUser: 4})
	ctx := ctxT(t, 60*time.Second)
	var ok, limited atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.Create(ctx, user(1), seatsReq(ev, ev.AllSeat[i]))
			var le *apperr.HoldLimitError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &le):
				assert.Equal(t, 4, le.Limit)
				limited.Add(1)
			default:
				t.Errorf("unexpected: %v", err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(4), ok.Load())
	assert.Equal(t, int32(6), limited.Load())
	// Another user is not affected; a cancel frees quota.
	_, err := e.svc.Create(ctx, user(2), seatsReq(ev, ev.AllSeat[20]))
	require.NoError(t, err)
	_, err = e.svc.Create(ctx, user(1), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
		GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: 1}}})
	var le *apperr.HoldLimitError
	require.ErrorAs(t, err, &le)
}

// GA capacity 10, 30 racing buyers: exactly 10.
func TestGACapacity(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{gaCapacity: 10})
	ctx := ctxT(t, 60*time.Second)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.Create(ctx, user(i), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
				GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: 1}}})
			if err == nil {
				ok.Add(1)
				return
			}
			var su *apperr.SeatUnavailableError
			if assert.ErrorAs(t, err, &su) {
				assert.Equal(t, []string{ev.GA}, su.SeatIDs)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(10), ok.Load())
	assert.Equal(t, 10, count(t, e.pool, `SELECT count(*) FROM inventory WHERE event_id = $1 AND unit_no IS NOT NULL AND status = 'HELD'`, ev.ID))
}

// TestGAPicksExpiredUnits: a GA pick takes AVAILABLE units first, then
// units whose hold has expired (hold_create's third pass, by ga_until),
// within one request if need be, and never a live hold's.
func TestGAPicksExpiredUnits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{gaCapacity: 10, maxPerUser: 10})
	ctx := ctxT(t, 30*time.Second)
	ga := func(u, q int) (holds.Hold, error) {
		return e.svc.Create(ctx, user(u), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
			GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: q}}})
	}
	first, err := ga(1, 4)
	require.NoError(t, err)
	_, err = ga(2, 4)
	require.NoError(t, err)
	fixtures.ExpireHold(t, e.pool, first.ID)
	h, err := ga(3, 6) // the 2 AVAILABLE units and 4 of the expired hold
	require.NoError(t, err)
	items, err := e.svc.Items(ctx, h.ID)
	require.NoError(t, err)
	assert.Len(t, items, 6)
	_, err = ga(4, 1)
	assert.True(t, isUnavailable(err), "the other 8 units are held: %v", err)
	assert.Equal(t, 10, count(t, e.pool, `SELECT count(*) FROM inventory WHERE event_id = $1 AND unit_no IS NOT NULL AND status = 'HELD' AND expires_at > now()`, ev.ID))
}

// A 1 s hold expires by the database clock: the seat is reclaimable, the old
// hold reads EXPIRED, and a stale lease left in Redis does not block.
func TestExpiryAndStaleLease(t *testing.T) {
	t.Parallel()
	// A Redis call that misses the default 100 ms (the whole suite runs at
	// once, on the cluster too) makes the hold fall back to Postgres alone
	// and leave the stale lease in place: what this test is about is the
	// lease's replacement, so it gives Redis time.
	e := newEnv(t, false, holds.Config{InFlightWindow: 500 * time.Millisecond, RedisTimeout: 2 * time.Second})
	ev := createEvent(t, e.pool, eventSpec{holdSeconds: 1})
	ctx := ctxT(t, 30*time.Second)
	seat := ev.AllSeat[0]

	old, err := e.svc.Create(ctx, user(1), seatsReq(ev, seat))
	require.NoError(t, err)
	// A young lease of another attempt is a fast conflict, without Postgres.
	_, err = e.svc.Create(ctx, user(2), seatsReq(ev, seat))
	require.True(t, isUnavailable(err), err)

	require.Eventually(t, func() bool {
		h, err := e.svc.Get(ctx, user(1), old.ID)
		return err == nil && h.Status == holds.StatusExpired
	}, 10*time.Second, 50*time.Millisecond)
	// A stale lease of some other instance's attempt, old and long-lived.
	stale := "01900000-0000-7000-8000-000000000001:ghost:" + "1000"
	require.NoError(t, e.rdb.Set(ctx, e.leases.Key(ev.ID, seat), stale, time.Hour).Err())

	h, err := e.svc.Create(ctx, user(2), seatsReq(ev, seat))
	require.NoError(t, err, "a stale lease never blocks a buyer")
	v, err := e.rdb.Get(ctx, e.leases.Key(ev.ID, seat)).Result()
	require.NoError(t, err)
	assert.Contains(t, v, h.ID+":user-2:", "our lease replaced the stale one")
	pttl, err := e.rdb.PTTL(ctx, e.leases.Key(ev.ID, seat)).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, pttl, time.Second, "TTL from the committed expires_at")

	old, err = e.svc.Get(ctx, user(1), old.ID)
	require.NoError(t, err)
	assert.Equal(t, holds.StatusExpired, old.Status)
	_, err = e.svc.Cancel(ctx, user(1), old.ID)
	assert.ErrorIs(t, err, apperr.ErrHoldExpired)

	// The sweeper writes it down and never touches the new hold.
	require.Eventually(t, func() bool {
		n, err := e.svc.Sweep(ctx)
		return err == nil && n >= 1
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, "EXPIRED", stored(t, e, old.ID))
	var holdID string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT coalesce(hold_id::text, '') FROM inventory WHERE seat_id = $1`, seat).Scan(&holdID))
	assert.True(t, holdID == h.ID || holdID == "", holdID)
}

func stored(t testing.TB, e *env, holdID string) string {
	var s string
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT status FROM holds WHERE id = $1`, holdID).Scan(&s))
	return s
}

func TestSweeper(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{holdSeconds: 1})
	ctx := ctxT(t, 30*time.Second)
	h, err := e.svc.Create(ctx, user(1), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(), SeatIDs: ev.AllSeat[:2],
		GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: 3}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := e.svc.Sweep(ctx)
		return err == nil && n == 1
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, "EXPIRED", stored(t, e, h.ID))
	assert.Zero(t, count(t, e.pool, `SELECT count(*) FROM inventory WHERE event_id = $1 AND status <> 'AVAILABLE'`, ev.ID))
	assert.Zero(t, count(t, e.pool, `SELECT count(*) FROM hold_items WHERE hold_id = $1 AND upper(period) > now()`, h.ID))
	assert.Equal(t, 2, count(t, e.pool, `SELECT count(*) FROM outbox WHERE payload->>'holdId' = $1::text`, h.ID))
	n, err := e.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// A row of an expired hold that another transaction has locked (a buyer
// reclaiming the seat, who may still roll back) is skipped, and the hold
// stays ACTIVE until a later sweep frees that row too; marked EXPIRED at
// once, it would never be swept again and the seat would stay HELD.
func TestSweeperComesBackForALockedRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{holdSeconds: 1})
	ctx := ctxT(t, 30*time.Second)
	h, err := e.svc.Create(ctx, user(1), seatsReq(ev, ev.AllSeat[0], ev.AllSeat[1]))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return count(t, e.pool, `SELECT count(*) FROM holds WHERE id = $1 AND expires_at <= now()`, h.ID) == 1
	}, 10*time.Second, 20*time.Millisecond)

	buyer, err := e.pool.Begin(ctx) // locks seat 0, then gives up
	require.NoError(t, err)
	defer buyer.Rollback(ctx)
	_, err = buyer.Exec(ctx, `SELECT 1 FROM inventory WHERE event_id = $1 AND seat_id = $2 FOR UPDATE`, ev.ID, ev.AllSeat[0])
	require.NoError(t, err)
	n, err := e.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "not ended while a row is skipped")
	assert.Equal(t, "AVAILABLE", seatStatus(t, e, ev, ev.AllSeat[1]), "the free row is released now")
	assert.Equal(t, 1, count(t, e.pool, `SELECT count(*) FROM outbox WHERE payload->>'holdId' = $1::text AND payload->>'kind' = 'expire'`, h.ID))
	require.NoError(t, buyer.Rollback(ctx))

	n, err = e.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, "EXPIRED", stored(t, e, h.ID))
	assert.Equal(t, "AVAILABLE", seatStatus(t, e, ev, ev.AllSeat[0]))
	assert.Zero(t, count(t, e.pool, `SELECT count(*) FROM inventory WHERE event_id = $1 AND status <> 'AVAILABLE'`, ev.ID))
}

func seatStatus(t *testing.T, e *env, ev event, seatID string) string {
	t.Helper()
	var s string
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT status FROM inventory WHERE event_id = $1 AND seat_id = $2`, ev.ID, seatID).Scan(&s))
	return s
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{holdSeconds: 1})
	ctx := ctxT(t, 30*time.Second)

	r := seatsReq(ev, ev.AllSeat[0], ev.AllSeat[1])
	h1, err := e.svc.Create(ctx, user(1), r)
	require.NoError(t, err)
	// Same key, same arguments (another order): the same hold.
	r2 := r
	r2.SeatIDs = []string{ev.AllSeat[1], ev.AllSeat[0]}
	h2, err := e.svc.Create(ctx, user(1), r2)
	require.NoError(t, err)
	assert.Equal(t, h1.ID, h2.ID)
	// Same key, other arguments.
	r3 := r
	r3.SeatIDs = []string{ev.AllSeat[2]}
	_, err = e.svc.Create(ctx, user(1), r3)
	assert.ErrorIs(t, err, apperr.ErrIdempotencyKeyReused)
	// The key is per user.
	_, err = e.svc.Create(ctx, user(2), r3)
	assert.NoError(t, err)
	// After expiry: the same hold, with its current status.
	require.Eventually(t, func() bool {
		h, err := e.svc.Create(ctx, user(1), r)
		return err == nil && h.ID == h1.ID && h.Status == holds.StatusExpired
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, 2, count(t, e.pool, `SELECT count(*) FROM holds`))

	// A failed attempt leaves the key free.
	ev = createEvent(t, e.pool, eventSpec{})
	_, err = e.svc.Create(ctx, user(2), seatsReq(ev, ev.AllSeat[2]))
	require.NoError(t, err)
	blocked := seatsReq(ev, ev.AllSeat[2])
	_, err = e.svc.Create(ctx, user(3), blocked)
	require.True(t, isUnavailable(err), err)
	blocked.SeatIDs = []string{ev.AllSeat[3]}
	_, err = e.svc.Create(ctx, user(3), blocked)
	require.NoError(t, err)

	// Concurrent requests with one key execute once.
	cr := seatsReq(ev, ev.AllSeat[5])
	ids := make([]string, 20)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := e.svc.Create(ctx, user(4), cr)
			if assert.NoError(t, err) {
				ids[i] = h.ID
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		assert.Equal(t, ids[0], id)
	}
	assert.Equal(t, 1, count(t, e.pool, `SELECT count(*) FROM holds WHERE owner = 'user-4'`))

	// One key, concurrently, for two events (which do not share the
	// per-(user, event) lock): one hold; every other request reads it back
	// (replay) or is refused as a reuse, never a second hold or an error.
	ev2 := createEvent(t, e.pool, eventSpec{})
	for round := range 5 {
		key := fmt.Sprintf("cross-event-%d", round)
		var created, reused atomic.Int32
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				target := ev
				if i%2 == 1 {
					target = ev2
				}
				r := seatsReq(target, target.AllSeat[10+round])
				r.IdempotencyKey = key
				_, err := e.svc.Create(ctx, user(5), r)
				switch {
				case err == nil:
					created.Add(1)
				case errors.Is(err, apperr.ErrIdempotencyKeyReused):
					reused.Add(1)
				default:
					t.Errorf("round %d: %v", round, err)
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, 1, count(t, e.pool, `SELECT count(*) FROM holds WHERE owner = 'user-5' AND idempotency_key = $1`, key))
		assert.Equal(t, int32(5), reused.Load(), "round %d: the other event's requests are reuses", round)
		assert.Equal(t, int32(5), created.Load(), "round %d: the winning event's requests are the hold or its replays", round)
	}
}

// The schema itself refuses a double active hold and a double sale.
func TestConstraintsRefuseViolations(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{})
	ctx := ctxT(t, 30*time.Second)
	h, err := e.svc.Create(ctx, user(1), seatsReq(ev, ev.AllSeat[0]))
	require.NoError(t, err)
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return ""
	}
	// A second live hold item of the same inventory row (overlapping period).
	_, err = e.pool.Exec(ctx, `INSERT INTO holds (id, event_id, owner, expires_at, total_amount, currency)
		VALUES ('01900000-0000-7000-8000-0000000000aa', $1, 'intruder', now() + interval '10 minutes', 0, 'EUR')`, ev.ID)
	require.NoError(t, err)
	_, err = e.pool.Exec(ctx, `INSERT INTO hold_items (hold_id, event_id, inventory_id, section_id, seat_id, price_amount, currency, period)
		SELECT '01900000-0000-7000-8000-0000000000aa', event_id, inventory_id, section_id, seat_id, 0, 'EUR', tstzrange(now(), now() + interval '10 minutes')
		FROM hold_items WHERE hold_id = $1`, h.ID)
	assert.Equal(t, "23P01", code(err), "exclusion constraint: %v", err)
	// A second inventory row for the same seat.
	_, err = e.pool.Exec(ctx, `INSERT INTO inventory (event_id, section_id, seat_id) VALUES ($1, $2, $3)`, ev.ID, ev.Seated, ev.AllSeat[0])
	assert.Equal(t, "23505", code(err), "one row per seat: %v", err)
	// A HELD row without a holder, a bogus status.
	_, err = e.pool.Exec(ctx, `UPDATE inventory SET status = 'HELD' WHERE event_id = $1 AND seat_id = $2`, ev.ID, ev.AllSeat[1])
	assert.Equal(t, "23514", code(err), "status check: %v", err)
	_, err = e.pool.Exec(ctx, `UPDATE inventory SET status = 'RESERVED' WHERE event_id = $1 AND seat_id = $2`, ev.ID, ev.AllSeat[1])
	assert.Equal(t, "23514", code(err), "status check: %v", err)
	// Two valid tickets for one seat.
	_, err = e.pool.Exec(ctx, `
		WITH o AS (INSERT INTO orders (id, hold_id, event_id, owner, status, total_amount, currency)
		           VALUES ('01900000-0000-7000-8000-0000000000bb', $1, $2, 'user-1', 'CONFIRMED', 0, 'EUR') RETURNING id)
		INSERT INTO tickets (id, order_id, event_id, inventory_id, section_id, seat_id, code)
		SELECT gen_random_uuid(), o.id, i.event_id, i.id, i.section_id, i.seat_id, c
		FROM o, inventory i, (VALUES ('A'), ('B')) v(c) WHERE i.hold_id = $1`, h.ID, ev.ID)
	assert.Equal(t, "23505", code(err), "tickets_one_valid: %v", err)
}

// countingLeases counts the lease acquisitions made through the real Redis
// lease store.
type countingLeases struct {
	holds.LeaseStore
	acquired atomic.Int32
}

func (c *countingLeases) Acquire(ctx context.Context, eventID string, seatIDs []string, value string, ttl time.Duration) ([]string, error) {
	c.acquired.Add(1)
	return c.LeaseStore.Acquire(ctx, eventID, seatIDs, value, ttl)
}

// A request that goes round the waiting room of a queue-protected event
// takes no lease (Postgres refuses it anyway), so it cannot keep a seat
// from an admitted buyer even for a moment; an admitted request does.
func TestNoLeaseWithoutAdmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	queued := createEvent(t, e.pool, eventSpec{queueRequired: true})
	ctx := ctxT(t, 30*time.Second)
	leases := &countingLeases{LeaseStore: e.leases}
	svc := holds.New(e.st, holds.Config{Leases: leases, Admission: verifierFunc(func(token, u, evID string) error {
		if token == "ok" {
			return nil
		}
		return errors.New("bad token")
	})})
	t.Cleanup(svc.Wait)

	for _, token := range []string{"", "forged"} {
		r := seatsReq(queued, queued.AllSeat[0])
		r.AdmissionToken = token
		_, err := svc.Create(ctx, user(1), r)
		require.ErrorIs(t, err, apperr.ErrQueueAdmissionRequired)
	}
	require.Zero(t, leases.acquired.Load(), "no lease for a request without admission")
	_, err := svc.Create(ctx, user(1), seatsReq(event{ID: "01900000-0000-7000-8000-000000000000"}, queued.AllSeat[0]))
	require.ErrorIs(t, err, apperr.ErrNotFound)
	// Refusals are the caller's, not errors of ours (the README's alert is on "error").
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(svc.Collectors()...)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ticketing_hold_attempts_total createHold attempts by result (ok, replay, conflict, limit, sale_not_open, not_admitted, invalid, refused, unavailable, shed, error).
# TYPE ticketing_hold_attempts_total counter
ticketing_hold_attempts_total{result="not_admitted"} 2
ticketing_hold_attempts_total{result="refused"} 1
`), "ticketing_hold_attempts_total"))

	r := seatsReq(queued, queued.AllSeat[0])
	r.AdmissionToken = "ok"
	h, err := svc.Create(ctx, user(2), r)
	require.NoError(t, err)
	require.Equal(t, int32(1), leases.acquired.Load())
	ttl, err := e.rdb.PTTL(ctx, e.leases.Key(queued.ID, queued.AllSeat[0])).Result()
	require.NoError(t, err)
	require.InDelta(t, time.Until(h.ExpiresAt).Seconds(), ttl.Seconds(), 1, "the admitted buyer's lease")
}
