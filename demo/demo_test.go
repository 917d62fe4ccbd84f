package demo_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/demo"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

type tableCounts struct{ venues, sections, seats, artists, events, prices, inventory, outbox int }

func count(t *testing.T, st *store.Store) tableCounts {
	t.Helper()
	var c tableCounts
	require.NoError(t, st.Pool().QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM venues), (SELECT count(*) FROM sections), (SELECT count(*) FROM seats),
		(SELECT count(*) FROM artists), (SELECT count(*) FROM events), (SELECT count(*) FROM event_prices),
		(SELECT count(*) FROM inventory), (SELECT count(*) FROM outbox WHERE topic = 'catalog')`).
		Scan(&c.venues, &c.sections, &c.seats, &c.artists, &c.events, &c.prices, &c.inventory, &c.outbox))
	return c
}

func TestSeedDemoIdempotent(t *testing.T) {
	t.Parallel()
	st := store.New(testdb.NewPool(t))
	svc := catalog.New(st, time.Now)
	ctx := context.Background()

	start := time.Now()
	got, err := demo.Seed(ctx, svc, time.Now())
	require.NoError(t, err)
	t.Logf("demo seeded in %v: %+v", time.Since(start), got)
	require.GreaterOrEqual(t, got.Venues, 12)
	require.Equal(t, 40, got.Artists)
	require.Equal(t, demo.DemoEvents, got.Events)
	first := count(t, st)
	require.Equal(t, 300, first.events)
	require.Equal(t, 300, first.outbox)
	require.Positive(t, first.inventory)

	again, err := demo.Seed(ctx, svc, time.Now().Add(36*time.Hour))
	require.NoError(t, err)
	require.Equal(t, demo.Counts{}, again)
	require.Equal(t, first, count(t, st))

	// Upcoming events in several categories, cities and currencies.
	var cats, cities, currencies, queued int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(DISTINCT e.category), count(DISTINCT v.city),
		(SELECT count(DISTINCT currency) FROM event_prices), count(*) FILTER (WHERE e.queue_required)
		FROM events e JOIN venues v ON v.id = e.venue_id WHERE e.starts_at > now()`).Scan(&cats, &cities, &currencies, &queued))
	require.GreaterOrEqual(t, cats, 5)
	require.GreaterOrEqual(t, cities, 12)
	require.GreaterOrEqual(t, currencies, 6)
	require.Positive(t, queued)
}

func TestSeedEvents(t *testing.T) {
	t.Parallel()
	st := store.New(testdb.NewPool(t))
	svc := catalog.New(st, time.Now)
	ctx := context.Background()
	got, err := demo.SeedEvents(ctx, svc, time.Now(), 120)
	require.NoError(t, err)
	require.Equal(t, 120, got.Events)
	require.Equal(t, 120, count(t, st).events)
	got, err = demo.SeedEvents(ctx, svc, time.Now(), 150)
	require.NoError(t, err)
	require.Equal(t, 30, got.Events)
	c := count(t, st)
	require.Equal(t, 150, c.events)
	require.Zero(t, c.outbox, "bulk imports write no outbox rows")

	// Every generated event has the inventory of its small venue (30
	// places), prices for its sections, and starts within the next year.
	var noInventory, noPrices, farOff int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE (SELECT count(*) FROM inventory i WHERE i.event_id = e.id) <> 30),
		count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM event_prices p WHERE p.event_id = e.id)),
		count(*) FILTER (WHERE e.starts_at > now() + interval '367 days' OR e.starts_at < now())
		FROM events e JOIN venues v ON v.id = e.venue_id WHERE v.name LIKE 'Sala Íntima %'`).Scan(&noInventory, &noPrices, &farOff))
	require.Zero(t, noInventory)
	require.Zero(t, noPrices)
	require.Zero(t, farOff)
}

// TestSeedEventsScale: SEED_BENCH_EVENTS=100000 go test ./demo -run TestSeedEventsScale -v
// measures the bulk path (skipped otherwise).
func TestSeedEventsScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SEED_BENCH_EVENTS"))
	if n == 0 {
		t.Skip("set SEED_BENCH_EVENTS")
	}
	st := store.New(testdb.NewPool(t))
	svc := catalog.New(st, time.Now)
	start := time.Now()
	got, err := demo.SeedEvents(context.Background(), svc, time.Now(), n)
	require.NoError(t, err)
	require.Equal(t, n, got.Events)
	c := count(t, st)
	t.Logf("%d events seeded in %s (%.0f events/s); %d inventory rows", n, time.Since(start).Round(time.Millisecond),
		float64(n)/time.Since(start).Seconds(), c.inventory)
}
