package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/testdb"
)

// firstLoads is how many events' seat maps a loaded from Postgres for the
// first time (ticketing_seatmap_snapshot_loads_total{reason="first"}).
func firstLoads(t *testing.T, a *app.App) int {
	t.Helper()
	mfs, err := a.Metrics.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "ticketing_seatmap_snapshot_loads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == "first" {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	return 0
}

// heldOnPage is how many seats an event page's seat map shows HELD, and
// how many seats it shows.
func heldOnPage(t *testing.T, base, eventID string) (held, seats int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { event(id: $id) { name venue { name }
	  prices { price { amount } } seatMap { seats { status } } } }`, "variables": map[string]any{"id": eventID}})
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Event struct {
				SeatMap struct{ Seats []struct{ Status string } }
			}
		}
		Errors []json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Empty(t, r.Errors)
	for _, s := range r.Data.Event.SeatMap.Seats {
		if s.Status == "HELD" {
			held++
		}
	}
	return held, len(r.Data.Event.SeatMap.Seats)
}

// TestWarmLoadsTheEventsMostLikelyBrowsed: the warm-up `ticketing serve`
// runs before it listens loads the catalog rows and seat maps of the events
// on sale first, then the soonest, never a cancelled one, at most
// WARMUP_EVENTS of them. Their first pages are then answered without
// loading a map from Postgres, and the warmed maps still follow holds.
func TestWarmLoadsTheEventsMostLikelyBrowsed(t *testing.T) {
	ctx := context.Background()
	db := testdb.NewDatabase(t)
	writer := apptest.New(t, map[string]string{"DATABASE_URL": db, "WARMUP_EVENTS": "0"})
	require.Zero(t, writer.Warm(ctx), "WARMUP_EVENTS=0 is off")
	onSale := fixtures.SmallEvent(t, writer.Pool, fixtures.EventOptions{Name: "On sale"})
	// Sooner than onSale, but its sale opens tomorrow.
	soon := fixtures.SmallEvent(t, writer.Pool, fixtures.EventOptions{Name: "Soon", SaleAgo: "-1 day"})
	cancelled := fixtures.SmallEvent(t, writer.Pool, fixtures.EventOptions{Name: "Cancelled"})
	_, err := writer.Pool.Exec(ctx, `UPDATE events SET starts_at = now() + interval '2 days' WHERE id = $1`, soon.ID)
	require.NoError(t, err)
	_, err = writer.Pool.Exec(ctx, `UPDATE events SET cancelled_at = now(), cancel_reason = 'test' WHERE id = $1`, cancelled.ID)
	require.NoError(t, err)

	one := apptest.New(t, map[string]string{"DATABASE_URL": db, "WARMUP_EVENTS": "1"})
	require.Equal(t, 1, one.Warm(ctx))
	require.Equal(t, 1, firstLoads(t, one))
	_, ok := one.Catalog.CachedEvent(onSale.ID)
	require.True(t, ok, "the event on sale comes first")
	_, ok = one.Catalog.CachedEvent(soon.ID)
	require.False(t, ok, "one event only")

	a := apptest.New(t, map[string]string{"DATABASE_URL": db})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.RunWorkers(wctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	require.Equal(t, 2, a.Warm(ctx))
	require.Equal(t, 2, firstLoads(t, a))
	for _, id := range []string{onSale.ID, soon.ID} {
		_, ok := a.Catalog.CachedEvent(id)
		require.True(t, ok)
	}
	_, ok = a.Catalog.CachedEvent(cancelled.ID)
	require.False(t, ok, "a cancelled event is not warmed")

	base := apptest.Serve(t, a).URL
	for _, id := range []string{onSale.ID, soon.ID} {
		held, seats := heldOnPage(t, base, id)
		require.Equal(t, 10, seats)
		require.Zero(t, held)
	}
	require.Equal(t, 2, firstLoads(t, a), "the warmed events' first pages load no map")

	// A warmed map follows the holds made after it was loaded.
	_, err = a.Holds.Create(ctx, auth.User{ID: "fan"}, holds.CreateRequest{EventID: onSale.ID,
		SeatIDs: onSale.Seats[:2], IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { held, _ := heldOnPage(t, base, onSale.ID); return held == 2 },
		10*time.Second, 20*time.Millisecond)

	// An event it did not warm is loaded by its first view.
	heldOnPage(t, base, cancelled.ID)
	require.Equal(t, 3, firstLoads(t, a))
}
