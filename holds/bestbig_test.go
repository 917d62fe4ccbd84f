package holds_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/holds"
)

// The best-available choice as hold_create made it up to migration 00014
// (its queries verbatim, without the row locks), the reference the faster
// function (00020) must agree with. $1 event, $2 section, $3 quantity.
const (
	refBestAdjacent = `
WITH free AS (
    SELECT i.id, i.seat_id, s.section_id, s.row_index, s.row_label, s.number,
           s.number - row_number() OVER (PARTITION BY s.section_id, s.row_index, s.row_label ORDER BY s.number) AS grp
    FROM inventory i JOIN seats s ON s.id = i.seat_id
    WHERE i.event_id = $1 AND i.seat_id IS NOT NULL
      AND ($2::uuid IS NULL OR i.section_id = $2)
      AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
), runs AS (
    SELECT section_id, row_index, row_label, number AS first,
           lead(number, $3::int - 1) OVER (PARTITION BY section_id, row_index, row_label, grp ORDER BY number) AS last
    FROM free
), best AS (
    SELECT r.* FROM runs r
    CROSS JOIN LATERAL (
        SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
        WHERE section_id = r.section_id AND row_index = r.row_index AND row_label = r.row_label) c
    WHERE r.last IS NOT NULL
    ORDER BY r.row_index, abs((r.first + r.last) / 2.0 - c.center), r.section_id, r.first
    LIMIT 1
)
SELECT coalesce(array_agg(f.seat_id::text ORDER BY f.seat_id::text), '{}')
FROM free f JOIN best b
  ON f.section_id = b.section_id AND f.row_index = b.row_index AND f.row_label = b.row_label
 AND f.number BETWEEN b.first AND b.last`
	refBestAnywhere = `
SELECT coalesce(array_agg(b.seat_id::text ORDER BY b.seat_id::text), '{}') FROM (
    SELECT i.seat_id FROM inventory i JOIN seats s ON s.id = i.seat_id
    CROSS JOIN LATERAL (
        SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
        WHERE section_id = s.section_id AND row_index = s.row_index AND row_label = s.row_label) c
    WHERE i.event_id = $1 AND i.seat_id IS NOT NULL
      AND ($2::uuid IS NULL OR i.section_id = $2)
      AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
    ORDER BY s.row_index, abs(s.number - c.center), i.id
    LIMIT $3) b`
)

// bigSection is a 100 x 200 seated section (20,000 seats) where a scattered
// pattern of seats is held (some of those holds already expired, hence
// free again), so the front rows have holes and runs of many lengths.
func bigSection(t testing.TB) (*env, event) {
	t.Helper()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{rows: 100, perRow: 200, maxPerUser: 1000})
	_, err := e.pool.Exec(context.Background(), `
UPDATE inventory i SET status = 'HELD', hold_id = gen_random_uuid(), owner = 'someone-else',
       expires_at = CASE WHEN (s.row_index + s.number) % 5 = 0 THEN now() - interval '1 minute' ELSE now() + interval '1 hour' END
FROM seats s
WHERE i.event_id = $1 AND s.id = i.seat_id
  AND ((s.row_index * 7 + s.number * 3) % 11 = 0 OR (s.row_index < 3 AND s.number BETWEEN 90 AND 110))`, ev.ID)
	require.NoError(t, err)
	// Sold seats, all to one order (the search must skip them without
	// reading them, migration 00022): the whole first row, the second but
	// three seats, and a scattered tenth or so of the rest. A seat sold,
	// then refunded (SOLD -> AVAILABLE, rows 2 and 3 from seat 150 on) is
	// unsold again and found.
	hold, order := uuid.NewString(), uuid.NewString()
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO holds (id, event_id, owner, status, expires_at, total_amount, currency, idempotency_key)
		  VALUES ($2, $1, 'buyer', 'PURCHASED', now() + interval '1 minute', 0, 'EUR', 'sold')`, []any{ev.ID, hold}},
		{`INSERT INTO orders (id, hold_id, event_id, owner, status, total_amount, currency)
		  VALUES ($3, $2, $1, 'buyer', 'CONFIRMED', 0, 'EUR')`, []any{ev.ID, hold, order}},
		{`UPDATE inventory i SET status = 'SOLD', hold_id = $2, owner = 'buyer', order_id = $3, expires_at = NULL
		  FROM seats s
		  WHERE i.event_id = $1 AND s.id = i.seat_id AND i.status = 'AVAILABLE'
		    AND (s.row_index = 0 OR (s.row_index = 1 AND s.number NOT IN (10, 11, 12))
		         OR (s.row_index * 5 + s.number * 7) % 10 = 0 OR (s.row_index IN (2, 3) AND s.number >= 150))`, []any{ev.ID, hold, order}},
		{`UPDATE inventory i SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, order_id = NULL
		  FROM seats s
		  WHERE i.event_id = $1 AND s.id = i.seat_id AND i.status = 'SOLD'
		    AND s.row_index IN (2, 3) AND s.number >= 150`, []any{ev.ID}},
	} {
		_, err = e.pool.Exec(context.Background(), st.q, st.args...)
		require.NoError(t, err, st.q)
	}
	_, err = e.pool.Exec(context.Background(), `ANALYZE inventory; ANALYZE seats`)
	require.NoError(t, err)
	return e, ev
}

func refChoice(t testing.TB, pool *pgxpool.Pool, ev event, section *string, qty int, adjacent bool) []string {
	t.Helper()
	q := refBestAnywhere
	if adjacent {
		q = refBestAdjacent
	}
	var ids []string
	require.NoError(t, pool.QueryRow(context.Background(), q, ev.ID, section, qty).Scan(&ids))
	return ids
}

// On a 20,000-seat section, a sequence of best-available holds (adjacent or
// not, with or without a section, quantities 1 to 100, some taking
// seats of several rows, one refused if no run of 100 is left) takes
// exactly the seats the reference choice names before each of them, and a
// refused one takes nothing.
func TestBestAvailableBigSectionMatchesReference(t *testing.T) {
	t.Parallel()
	e, ev := bigSection(t)
	ctx := ctxT(t, 5*time.Minute)
	steps := []struct {
		qty      int
		adjacent bool
		section  bool
	}{
		{4, true, true}, {1, true, false}, {7, true, true}, {12, true, true}, {40, true, true},
		{3, false, true}, {9, false, false}, {2, true, false}, {25, false, true}, {6, true, true},
		{100, true, true}, // refused if no run of 100 is left
		{60, true, true}, {5, true, true}, {1, false, true}, {8, true, true},
		{100, false, true}, {100, false, false}, {100, false, true}, // not adjacent, over several rows
	}
	for i, st := range steps {
		var section *string
		req := holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
			BestAvailable: &holds.BestAvailable{Quantity: st.qty, Adjacent: st.adjacent}}
		if st.section {
			section = &ev.Seated
			req.BestAvailable.SectionID = ev.Seated
		}
		want := refChoice(t, e.pool, ev, section, st.qty, st.adjacent)
		if !st.adjacent && len(want) < st.qty {
			want = nil
		}
		heldBefore := count(t, e.pool, `SELECT count(*) FROM inventory WHERE event_id = $1 AND status = 'HELD' AND expires_at > now()`, ev.ID)
		h, err := e.svc.Create(ctx, user(i), req)
		if len(want) == 0 {
			require.True(t, isUnavailable(err), "step %d: %v", i, err)
			require.Equal(t, heldBefore, count(t, e.pool, `SELECT count(*) FROM inventory WHERE event_id = $1 AND status = 'HELD' AND expires_at > now()`, ev.ID))
			continue
		}
		require.NoError(t, err, "step %d", i)
		require.Len(t, want, st.qty, "step %d", i)
		items, err := e.svc.Items(ctx, h.ID)
		require.NoError(t, err)
		var got []string
		for _, it := range items {
			got = append(got, *it.SeatID)
		}
		require.Equal(t, want, sorted(got), "step %d (%+v)", i, st)
	}
}

// BenchmarkBestAvailable20k: one best-available hold of 4 seats in a
// 20,000-seat section, alone, and one refused request for 100 adjacent (go test -run '^$' -bench BestAvailable20k
// -benchtime 20x ./holds/).
func BenchmarkBestAvailable20k(b *testing.B) {
	for _, adjacent := range []bool{true, false} {
		b.Run(fmt.Sprintf("adjacent=%v", adjacent), func(b *testing.B) {
			e, ev := bigSection(b)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := e.svc.Create(ctx, user(i), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
					BestAvailable: &holds.BestAvailable{Quantity: 4, SectionID: ev.Seated, Adjacent: adjacent}})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The worst case of a front-to-back search: every row is read and the
	// hold refused (no row has 100 free seats in a run).
	b.Run("refused", func(b *testing.B) {
		e, ev := bigSection(b)
		ctx := context.Background()
		_, err := e.pool.Exec(ctx, `
UPDATE inventory i SET status = 'HELD', hold_id = gen_random_uuid(), owner = 'someone-else', expires_at = now() + interval '1 hour'
FROM seats s WHERE i.event_id = $1 AND s.id = i.seat_id AND s.number IN (67, 134) AND i.status <> 'SOLD'`, ev.ID)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, err := e.svc.Create(ctx, user(i), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
				BestAvailable: &holds.BestAvailable{Quantity: 100, SectionID: ev.Seated, Adjacent: true}})
			if !isUnavailable(err) {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBestAvailableNeverFits: 100 adjacent seats asked of a
// 20,000-seat section of 400 rows of 50: no row can ever hold them, refused
// before the database's search (holds.Service.neverFits); without it the
// search reads every row (go test -run '^$' -bench BestAvailableNeverFits
// -benchtime 20x ./holds/).
func BenchmarkBestAvailableNeverFits(b *testing.B) {
	e := newEnv(b, false, holds.Config{})
	ev := createEvent(b, e.pool, eventSpec{rows: 400, perRow: 50, maxPerUser: 1000})
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, err := e.svc.Create(ctx, user(i), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
			BestAvailable: &holds.BestAvailable{Quantity: 100, SectionID: ev.Seated, Adjacent: true}})
		if !isUnavailable(err) {
			b.Fatal(err)
		}
	}
}

// 40 buyers race for 6 adjacent seats each (and 20 for 6 anywhere) in a
// 20,000-seat section: the non-adjacent ones all get a hold, an adjacent
// one may be refused (every run it tried was taken meanwhile) and then
// holds nothing, no seat is in two holds, and each adjacent hold is 6
// consecutive seats of one row (the row search, the SKIP LOCKED retries and the exclusion of a
// run taken meanwhile, under contention).
func TestBestAvailableBigSectionRace(t *testing.T) {
	t.Parallel()
	e, ev := bigSection(t)
	ctx := ctxT(t, 5*time.Minute)
	type result struct {
		h        holds.Hold
		adjacent bool
		err      error
	}
	results := make(chan result, 60)
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			adjacent := i < 40
			h, err := e.svc.Create(ctx, user(i), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
				BestAvailable: &holds.BestAvailable{Quantity: 6, SectionID: ev.Seated, Adjacent: adjacent}})
			results <- result{h, adjacent, err}
		}(i)
	}
	wg.Wait()
	close(results)
	pos := map[string][2]int{} // seat id -> row, number
	for r, row := range ev.Seats {
		for n, id := range row {
			pos[id] = [2]int{r, n + 1}
		}
	}
	seen := map[string]bool{}
	won := 0
	for r := range results {
		if r.adjacent && isUnavailable(r.err) {
			// Its runs were taken by others on every retry (BestAvailableRetries).
			continue
		}
		require.NoError(t, r.err)
		won++
		items, err := e.svc.Items(ctx, r.h.ID)
		require.NoError(t, err)
		require.Len(t, items, 6)
		var nums []int
		for _, it := range items {
			require.False(t, seen[*it.SeatID], "seat %s held twice", *it.SeatID)
			seen[*it.SeatID] = true
			nums = append(nums, pos[*it.SeatID][1])
			if r.adjacent {
				require.Equal(t, pos[*items[0].SeatID][0], pos[*it.SeatID][0], "one row")
			}
		}
		if r.adjacent {
			slices.Sort(nums)
			require.Equal(t, nums[0]+5, nums[5], "consecutive: %v", nums)
		}
	}
	t.Logf("%d of 60 holds made", won)
	require.Greater(t, won, 20, "the 20 non-adjacent buyers and some adjacent ones get holds")
	require.Equal(t, len(seen), count(t, e.pool,
		`SELECT count(*) FROM inventory WHERE event_id = $1 AND owner <> 'someone-else' AND status = 'HELD'`, ev.ID))
}
