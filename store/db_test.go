package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

func TestOutboxHookRunsAfterCommitOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(testdb.NewPool(t))
	var calls atomic.Int32
	st.SetOutboxHook(func() { calls.Add(1) })

	t.Run("CommitWithOutboxRows", func(t *testing.T) {
		calls.Store(0)
		err := st.InTx(ctx, func(tx *store.Store) error {
			require.NoError(t, tx.OutboxInsert(ctx, "", "test", map[string]int{"n": 1}))
			// A savepoint inside the transaction must not fire on its own.
			require.NoError(t, tx.InTx(ctx, func(sp *store.Store) error {
				return sp.OutboxInsert(ctx, "", "test", map[string]int{"n": 2})
			}))
			require.Zero(t, calls.Load(), "hook ran before commit")
			return nil
		})
		require.NoError(t, err)
		require.EqualValues(t, 1, calls.Load())
	})

	t.Run("Rollback", func(t *testing.T) {
		calls.Store(0)
		err := st.InTx(ctx, func(tx *store.Store) error {
			require.NoError(t, tx.OutboxInsert(ctx, "", "test", map[string]int{"n": 3}))
			return errors.New("abort")
		})
		require.Error(t, err)
		require.Zero(t, calls.Load())
	})

	t.Run("CommitWithoutOutboxRows", func(t *testing.T) {
		calls.Store(0)
		require.NoError(t, st.InTx(ctx, func(tx *store.Store) error { return nil }))
		require.Zero(t, calls.Load())
	})
}

func TestUnreachablePostgresIsServiceUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A port nobody listens on: every connection attempt is refused.
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)

	err = st.OutboxInsert(ctx, "", "test", map[string]int{})
	require.ErrorIs(t, err, apperr.ErrServiceUnavailable)

	err = st.InTx(ctx, func(*store.Store) error { return nil })
	require.ErrorIs(t, err, apperr.ErrServiceUnavailable)

	d, known := apperr.Describe(err)
	require.True(t, known)
	require.Equal(t, "SERVICE_UNAVAILABLE", d.Code)
}

func TestStatementErrorsStayInternal(t *testing.T) {
	t.Parallel()
	st := store.New(testdb.NewPool(t))
	err := st.Exec(context.Background(), "SELECT * FROM no_such_table")
	require.Error(t, err)
	require.NotErrorIs(t, err, apperr.ErrServiceUnavailable)
}
