package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/outbox"
)

// The NOTIFY does not wait for a pool connection: during a storm of holds
// every connection of the pool is busy with the transactions it announces.
func TestNotifierDoesNotQueueBehindTheBusyPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewPool(t)
	listener, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close(context.Background()) })
	_, err = listener.Exec(ctx, "LISTEN outbox")
	require.NoError(t, err)

	n := outbox.NewNotifier(pool, nil)
	nctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); n.Run(nctx) }()
	t.Cleanup(func() { stop(); <-done })
	// Warm up: the notifier opens its connection at the first kick.
	n.Kick()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = listener.WaitForNotification(wctx)
	cancel()
	require.NoError(t, err)

	// Every pool connection taken.
	var held []*pgxpool.Conn
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, c)
	}
	t.Cleanup(func() {
		for _, c := range held {
			c.Release()
		}
	})
	n.Kick()
	wctx, cancel = context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = listener.WaitForNotification(wctx)
	require.NoError(t, err, "no NOTIFY while the pool was busy")
}
