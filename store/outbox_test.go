package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// TestOutboxRelayBatch: a batch is claimed by one relay at a time, a failed
// publication leaves the rows in place, a successful one deletes exactly
// what it published, in id order.
func TestOutboxRelayBatch(t *testing.T) {
	st := store.New(testdb.NewPool(t))
	ctx := context.Background()
	ev := uuid.NewString()
	for i := range 3 {
		require.NoError(t, st.OutboxInsert(ctx, ev, "inventory", map[string]int{"seq": i}))
	}
	count := func() (n int) {
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n))
		return n
	}

	// While one relay publishes, another finds the partition locked.
	rows, locked, err := st.OutboxRelayBatch(ctx, 0, 1, 10, func(tx *store.Store, batch []store.OutboxRow) error {
		require.Len(t, batch, 3)
		other, otherLocked, err := st.OutboxRelayBatch(ctx, 0, 1, 10, func(*store.Store, []store.OutboxRow) error {
			t.Error("a second relay published a locked partition")
			return nil
		})
		require.NoError(t, err)
		require.False(t, otherLocked)
		require.Empty(t, other)
		return errors.New("sink down")
	})
	require.ErrorContains(t, err, "sink down")
	require.True(t, locked)
	require.Empty(t, rows)
	require.Equal(t, 3, count(), "a failed publication deletes nothing")

	// A successful one publishes the partition's rows in id order, writes
	// through tx in the same transaction, and deletes them.
	rows, locked, err = st.OutboxRelayBatch(ctx, 0, 1, 2, func(tx *store.Store, batch []store.OutboxRow) error {
		require.Len(t, batch, 2)
		require.Less(t, batch[0].ID, batch[1].ID)
		require.Equal(t, ev, *batch[0].EventID)
		require.GreaterOrEqual(t, batch[0].Age, 0.0)
		return tx.Exec(ctx, `INSERT INTO search_pending (event_id) VALUES ($1)`, ev)
	})
	require.NoError(t, err)
	require.True(t, locked)
	require.Len(t, rows, 2)
	require.Equal(t, 1, count())
	var pending int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM search_pending WHERE event_id = $1`, ev).Scan(&pending))
	require.Equal(t, 1, pending, "written in the batch's transaction, committed with it")

	rows, _, err = st.OutboxRelayBatch(ctx, 0, 1, 2, func(*store.Store, []store.OutboxRow) error { return nil })
	require.NoError(t, err)
	require.Len(t, rows, 1)
	rows, locked, err = st.OutboxRelayBatch(ctx, 0, 1, 2, func(*store.Store, []store.OutboxRow) error {
		t.Error("publish called for an empty partition")
		return nil
	})
	require.NoError(t, err)
	require.True(t, locked)
	require.Empty(t, rows)
	require.Zero(t, count())
}
