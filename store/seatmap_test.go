package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// A general-admission count's version grows with every visible commit,
// even when two changes commit in the opposite order to the versions they
// took (two holds on one section): otherwise the later count carries the
// same version as the earlier one and consumers drop it as not newer.
func TestSeatMapGAVersionGrowsWithEveryCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	ev := fixtures.SmallEvent(t, pool, fixtures.EventOptions{})
	var units []string
	rows, err := pool.Query(ctx, `SELECT id::text FROM inventory WHERE event_id = $1 AND section_id = $2 ORDER BY unit_no LIMIT 2`, ev.ID, ev.GA)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		units = append(units, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, units, 2)
	version := func() int64 {
		ga, err := st.SeatMapGA(ctx, ev.ID, []string{ev.GA})
		require.NoError(t, err)
		require.Len(t, ga, 1)
		return ga[0].Version
	}
	bump := `UPDATE inventory SET version = nextval('inventory_version_seq') WHERE event_id = $1 AND id = $2`

	v0 := version()
	a, err := pool.Begin(ctx) // takes the lower version, commits last
	require.NoError(t, err)
	defer a.Rollback(ctx)
	_, err = a.Exec(ctx, bump, ev.ID, units[0])
	require.NoError(t, err)
	_, err = pool.Exec(ctx, bump, ev.ID, units[1]) // a higher version, committed first
	require.NoError(t, err)
	v1 := version()
	require.Greater(t, v1, v0)
	require.NoError(t, a.Commit(ctx))
	require.Greater(t, version(), v1, "the later commit must carry a newer version")
}

// SeatMap is SeatMapSeats and SeatMapGA in one round trip.
func TestSeatMapIsSeatsAndGA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	ev := fixtures.SmallEvent(t, pool, fixtures.EventOptions{})
	seats, ga, err := st.SeatMap(ctx, ev.ID)
	require.NoError(t, err)
	wantSeats, err := st.SeatMapSeats(ctx, ev.ID)
	require.NoError(t, err)
	wantGA, err := st.SeatMapGA(ctx, ev.ID, nil)
	require.NoError(t, err)
	require.NotEmpty(t, seats)
	require.NotEmpty(t, ga)
	require.Equal(t, wantSeats, seats)
	require.Equal(t, wantGA, ga)
}
