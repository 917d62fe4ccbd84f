package holds_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/holds"
)

// TestBestAvailableHint: a best-available search starts at the row where
// the last one of its kind found seats (the hint) for bestHintTTL (10 s), so
// a seat freed in front of it within that time is found by the next search
// from the front, not by a hinted one; a hinted search that finds nothing
// from its row to the back still searches the rows in front of it.
func TestBestAvailableHint(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := newEnv(t, false, holds.Config{Now: clock})
	ev := createEvent(t, e.pool, eventSpec{rows: 3, perRow: 6, maxPerUser: 30})
	ctx := ctxT(t, 30*time.Second)
	rowOf := func(h holds.Hold) int {
		items, err := e.svc.Items(ctx, h.ID)
		require.NoError(t, err)
		require.NotEmpty(t, items)
		for r, row := range ev.Seats {
			for _, s := range row {
				if s == *items[0].SeatID {
					return r
				}
			}
		}
		t.Fatalf("seat %s not in the event", *items[0].SeatID)
		return -1
	}
	bestIn := func(ev event, u int) (holds.Hold, error) {
		return e.svc.Create(ctx, user(u), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
			BestAvailable: &holds.BestAvailable{Quantity: 2, Adjacent: true}})
	}
	best := func(u int) holds.Hold {
		h, err := bestIn(ev, u)
		require.NoError(t, err)
		return h
	}
	front, err := e.svc.Create(ctx, user(1), seatsReq(ev, ev.Seats[0]...))
	require.NoError(t, err)

	assert.Equal(t, 1, rowOf(best(2)), "the front row is full: row 1, and the hint is row 1")
	_, err = e.svc.Cancel(ctx, user(1), front.ID)
	require.NoError(t, err)
	advance(time.Second)
	assert.Equal(t, 1, rowOf(best(3)), "within the hint's 10 s, the search starts at row 1")
	advance(10 * time.Second)
	assert.Equal(t, 0, rowOf(best(4)), "then from the front again: the freed front row")

	// Wrap-around: another event, rows of 2. Rows 0 and 1 taken, a search
	// from the front takes row 2 (the hint), row 0 is freed: within the
	// hint's time, the search from row 2 to the back finds nothing and goes
	// on with the rows in front of it: row 0. Then nothing is left.
	ev2 := createEvent(t, e.pool, eventSpec{rows: 3, perRow: 2, maxPerUser: 30})
	row0, err := e.svc.Create(ctx, user(9), seatsReq(ev2, ev2.Seats[0]...))
	require.NoError(t, err)
	_, err = e.svc.Create(ctx, user(10), seatsReq(ev2, ev2.Seats[1]...))
	require.NoError(t, err)
	h, err := bestIn(ev2, 11)
	require.NoError(t, err)
	ev = ev2
	assert.Equal(t, 2, rowOf(h))
	_, err = e.svc.Cancel(ctx, user(9), row0.ID)
	require.NoError(t, err)
	advance(time.Second)
	h, err = bestIn(ev2, 12)
	require.NoError(t, err)
	assert.Equal(t, 0, rowOf(h), "hinted at row 2, full: the rows in front of it")
	_, err = bestIn(ev2, 13)
	assert.True(t, isUnavailable(err), "every row full: refused (%v)", err)
}
