package app

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/metrictest"
)

// firstLoads is how many events' seat maps a loaded from Postgres for the
// first time (ticketing_seatmap_snapshot_loads_total{reason="first"}).
func firstLoads(t *testing.T, a *App) int {
	t.Helper()
	return int(metrictest.Value(t, a.Metrics, "ticketing_seatmap_snapshot_loads_total", "reason", "first"))
}

// TestWarmLoadsTheEventsMostLikelyBrowsed: the warm-up `ticketing serve`
// runs before it listens loads the catalog rows and seat maps of the events
// on sale first, then the soonest, never a cancelled one, at most
// WARMUP_EVENTS of them. Their first pages are then answered without
// loading a map from Postgres, and the warmed maps follow the holds made
// through another instance.
func TestWarmLoadsTheEventsMostLikelyBrowsed(t *testing.T) {
	ctx := context.Background()
	apps, srvs := seatMapInstances(t, 3) // apps[0] runs the workers
	writer, one, a := apps[0], apps[1], apps[2]
	writer.Cfg.WarmupEvents = 0
	require.Zero(t, writer.Warm(ctx), "WARMUP_EVENTS=0 is off")
	onSale := fixtures.SmallEvent(t, writer.Pool, fixtures.EventOptions{Name: "On sale"})
	// Sooner than onSale, but its sale opens tomorrow.
	soon := fixtures.SmallEvent(t, writer.Pool, fixtures.EventOptions{Name: "Soon", SaleAgo: "-1 day"})
	cancelled := fixtures.SmallEvent(t, writer.Pool, fixtures.EventOptions{Name: "Cancelled"})
	_, err := writer.Pool.Exec(ctx, `UPDATE events SET starts_at = now() + interval '2 days' WHERE id = $1`, soon.ID)
	require.NoError(t, err)
	_, err = writer.Pool.Exec(ctx, `UPDATE events SET cancelled_at = now(), cancel_reason = 'test' WHERE id = $1`, cancelled.ID)
	require.NoError(t, err)

	one.Cfg.WarmupEvents = 1
	require.Equal(t, 1, one.Warm(ctx))
	require.Equal(t, 1, firstLoads(t, one))
	_, ok := one.Catalog.CachedEvent(onSale.ID)
	require.True(t, ok, "the event on sale comes first")
	_, ok = one.Catalog.CachedEvent(soon.ID)
	require.False(t, ok, "one event only")

	require.Equal(t, 2000, a.Cfg.WarmupEvents, "the default")
	require.Equal(t, 2, a.Warm(ctx))
	require.Equal(t, 2, firstLoads(t, a))
	for _, id := range []string{onSale.ID, soon.ID} {
		_, ok := a.Catalog.CachedEvent(id)
		require.True(t, ok)
	}
	_, ok = a.Catalog.CachedEvent(cancelled.ID)
	require.False(t, ok, "a cancelled event is not warmed")

	base := srvs[2].URL
	for _, id := range []string{onSale.ID, soon.ID} {
		_, onMap := eventPage(t, base, id)
		require.Equal(t, pageCounts{Available: 20}, onMap) // 10 seats and a GA floor of 10
	}
	require.Equal(t, 2, firstLoads(t, a), "the warmed events' first pages load no map")

	// A warmed map follows a hold made through another instance.
	holdSeat(t, writer, onSale.ID, onSale.Seats[0])
	holdSeat(t, writer, onSale.ID, onSale.Seats[1])
	require.Eventually(t, func() bool { _, onMap := eventPage(t, base, onSale.ID); return onMap.Held == 2 },
		10*time.Second, 20*time.Millisecond)

	// An event it did not warm is loaded by its first view.
	eventPage(t, base, cancelled.ID)
	require.Equal(t, 3, firstLoads(t, a))
}
