package orders_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/store"
)

// fingerprintCounter counts the order-fingerprint queries a pool runs.
type fingerprintCounter struct{ n atomic.Int64 }

func (c *fingerprintCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "count(*)::text FROM payments") {
		c.n.Add(1)
	}
	return ctx
}

func (c *fingerprintCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestUpdatesShareOnePoll: 20 orderUpdates streams (10 orders, two streams
// each) cost the database one query a second between them, not one each,
// and every stream still sees its order change.
func TestUpdatesShareOnePoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	cfg, err := pgxpool.ParseConfig(e.pool.Config().ConnString())
	require.NoError(t, err)
	counter := &fingerprintCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	svc, err := orders.New(store.New(pool), orders.Config{Provider: e.sb, TicketKeys: ticketKeys, Holds: e.holds})
	require.NoError(t, err)

	const n = 10 // the event's seats
	var ids []string
	var streams []<-chan orders.Order
	for i := range n {
		u := auth.User{ID: fmt.Sprintf("watcher-%d", i)}
		_, o, _ := e.checkout(u, i)
		ids = append(ids, o.ID)
		for range 2 {
			ch, err := svc.Updates(e.ctx, u, o.ID)
			require.NoError(t, err)
			streams = append(streams, ch)
		}
	}
	for _, ch := range streams {
		select {
		case o := <-ch:
			require.Equal(t, orders.OrderAwaitingPayment, o.Status)
		case <-time.After(10 * time.Second):
			t.Fatal("no first message")
		}
	}
	before := counter.n.Load()
	const idle = 5 * time.Second
	time.Sleep(idle) // the quantity measured is what 5 s of waiting costs
	polls := counter.n.Load() - before
	t.Logf("%d streams idle for %s: %d fingerprint queries", len(streams), idle, polls)
	require.LessOrEqual(t, polls, int64(idle/time.Second)+3, "one query per second for all the streams")

	_, err = e.pool.Exec(e.ctx, `UPDATE orders SET updated_at = now() WHERE id = ANY($1::uuid[])`, ids)
	require.NoError(t, err)
	for i, ch := range streams {
		select {
		case o := <-ch:
			require.Equal(t, ids[i/2], o.ID)
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d did not see its order change", i)
		}
	}
}
