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
	pool, listener, n := startNotifier(t, 0)
	// Warm up: the notifier opens its connection at the first kick.
	n.Kick()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := listener.WaitForNotification(wctx)
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

// Kicks that come within Interval of a notification are coalesced into one
// more, sent when the interval is over: a storm of commits costs a NOTIFY
// per interval, and the last kick is never left unannounced.
func TestNotifierCoalescesKicksOfAnInterval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, listener, n := startNotifier(t, 200*time.Millisecond)

	start := time.Now()
	for range 100 { // 100 kicks over ~300 ms
		n.Kick()
		time.Sleep(3 * time.Millisecond)
	}
	elapsed := time.Since(start)
	got := 0
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Second) // well past the last interval
		_, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			break
		}
		got++
	}
	require.GreaterOrEqual(t, got, 2, "the kicks after the first notification are announced too")
	require.LessOrEqual(t, got, int(elapsed/(200*time.Millisecond))+2, "100 kicks in %s", elapsed)
}

// startNotifier runs a Notifier (interval 0: the default) on a test pool,
// with a connection listening to its channel.
func startNotifier(t *testing.T, interval time.Duration) (*pgxpool.Pool, *pgx.Conn, *outbox.Notifier) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.NewPool(t)
	listener, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close(context.Background()) })
	_, err = listener.Exec(ctx, "LISTEN outbox")
	require.NoError(t, err)
	n := outbox.NewNotifier(pool, nil)
	if interval > 0 {
		n.Interval = interval
	}
	nctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); n.Run(nctx) }()
	t.Cleanup(func() { stop(); <-done })
	return pool, listener, n
}
