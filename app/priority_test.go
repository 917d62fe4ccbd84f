package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/queue"
)

// TestNotificationAppliedWhileHoldsFloodThePool: every connection of the
// main pool (the one holds use) is taken, as by a flood of holds; the
// buyer pays, and paysim's signed notification still confirms the order,
// since orders, payments and their webhooks have a pool of their own. With
// one shared pool the confirmation would wait as long as the flood lasts
// (here: for ever, so the test's 60 s bound is only a deadlock detector).
func TestNotificationAppliedWhileHoldsFloodThePool(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewDatabase(t)
	a, orderID, checkoutURL := orderedApp(t, dbURL)

	// The flood: take every connection of the main pool and keep them.
	n := exhaust(t, a.Pool)
	// Pay: paysim notifies the server, which must confirm by itself.
	took := payAndAwaitConfirmation(t, dbURL, checkoutURL, orderID)
	t.Logf("confirmed %v after payment, with all %d connections of the main pool taken", took.Round(time.Millisecond), n)

	// The admission controller saw it: the notification's application,
	// timed at the webhook (read well inside recent.Stale), and no failed
	// provider call. The order is CONFIRMED once the webhook's transaction
	// commits, just before its handler returns and the timer observes.
	var p queue.Pressure
	require.Eventually(t, func() bool { p = a.CheckoutPressure(); return p.Confirm > 0 }, time.Second, 5*time.Millisecond,
		"the confirmation's latency reaches the controller")
	require.Zero(t, p.ProviderFailed)
}

// exhaust takes every connection of pool and keeps them until the test
// ends.
func exhaust(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var taken []*pgxpool.Conn
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		c, err := pool.Acquire(ctx)
		cancel()
		if err != nil {
			break
		}
		taken = append(taken, c)
	}
	t.Cleanup(func() {
		for _, c := range taken {
			c.Release()
		}
	})
	require.EqualValues(t, pool.Config().MaxConns, len(taken), "the pool is exhausted")
	return len(taken)
}

// payAndAwaitConfirmation pays at checkoutURL and waits (60 s at most: a
// deadlock detector) for paysim's notification to confirm the order.
func payAndAwaitConfirmation(t *testing.T, dbURL, checkoutURL, orderID string) time.Duration {
	t.Helper()
	payAtCheckout(t, checkoutURL)
	paid := time.Now()
	conn, err := pgxpool.New(context.Background(), dbURL) // a reader of its own
	require.NoError(t, err)
	defer conn.Close()
	var status string
	require.Eventually(t, func() bool {
		err := conn.QueryRow(context.Background(), `SELECT status FROM orders WHERE id = $1`, orderID).Scan(&status)
		return err == nil && status == "CONFIRMED"
	}, 60*time.Second, 20*time.Millisecond, "the order was not confirmed while the pool was exhausted (last status %q)", status)
	return time.Since(paid)
}

// TestNotificationAppliedWhileOrdersFloodTheirPool: every connection of
// the orders pool (createOrder, order reads, reconciliation) is taken, as
// by the crowd of a sale; paysim's notification still confirms the order,
// since notifications have a pool of their own (app/orders.go). With the
// orders pool alone the confirmation would wait for ever.
func TestNotificationAppliedWhileOrdersFloodTheirPool(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewDatabase(t)
	a, orderID, checkoutURL := orderedApp(t, dbURL)

	n := exhaust(t, a.OrdersPool())
	took := payAndAwaitConfirmation(t, dbURL, checkoutURL, orderID)
	t.Logf("confirmed %v after payment, with all %d connections of the orders pool taken", took.Round(time.Millisecond), n)
}

// orderedApp is an App with paysim on a database of its own and one
// buyer's order of one seat, awaiting payment at checkoutURL.
func orderedApp(t *testing.T, dbURL string) (a *app.App, orderID, checkoutURL string) {
	t.Helper()
	a, srv, ev := paysimApp(t, dbURL, nil)
	buyer := mint(t, "buyer")
	var hold struct {
		CreateHold struct{ ID string } `json:"createHold"`
	}
	require.Empty(t, apptest.GraphQL(t, srv.URL, buyer, `mutation($e: ID!, $s: [ID!]) { createHold(input: {eventId: $e, seatIds: $s, idempotencyKey: "h1"}) { id } }`,
		map[string]any{"e": ev.ID, "s": []string{ev.Seats[0]}}, &hold))
	orderID, checkoutURL = orderHold(t, srv.URL, buyer, hold.CreateHold.ID)
	return a, orderID, checkoutURL
}
