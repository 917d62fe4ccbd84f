package search_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/demo"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/search/searchtest"
	"github.com/ticketing/ticketing/store"
)

// fixture is a catalog of generated events plus hand-made ones whose
// search behaviour the tests know.
type fixture struct {
	pool  *pgxpool.Pool
	store *store.Store
	now   time.Time
	ids   map[string]string // fixture name -> event id
}

// special events: name, description, city index in searchtest.Cities, category, start offset.
var specials = []struct {
	key, name, desc string
	city            int
	category        string
	in              time.Duration
}{
	{"andaluza", "Noche de Música Andaluza", "Cante y toque", 2, "music", 30 * 24 * time.Hour},
	{"xilo-name", "Xilofonía Nocturna", "Un recital para percusión", 0, "music", 40 * 24 * time.Hour},
	{"xilo-desc", "Recital Temprano", "Obras de xilofonía y marimba", 0, "music", 20 * 24 * time.Hour},
	{"past", "Pasado Irrepetible", "Ya fue", 0, "theatre", -2 * 24 * time.Hour},
	{"edit", "Nombre Provisional", "Se renombra en el test", 1, "comedy", 10 * 24 * time.Hour},
}

func newFixture(t *testing.T, generated int, withDemo bool) *fixture {
	t.Helper()
	ctx := context.Background()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	now := time.Now().UTC()
	_, err := searchtest.Generate(ctx, st, generated, 40, 300, 42, now)
	require.NoError(t, err)
	if withDemo {
		_, err = demo.Seed(ctx, catalog.New(st, func() time.Time { return now }), now)
		require.NoError(t, err)
	}
	f := &fixture{pool: pool, store: st, now: now, ids: map[string]string{}}
	for _, s := range specials {
		c := searchtest.Cities[s.city]
		vid := uuid.Must(uuid.NewV7()).String()
		require.NoError(t, st.VenueCreate(ctx, store.Venue{ID: vid, Name: "Sala Especial " + s.key, Address: "x",
			City: c.Name, Country: c.Country, Lat: c.Lat, Lon: c.Lon}))
		id := uuid.Must(uuid.NewV7()).String()
		starts := now.Add(s.in).Truncate(time.Minute)
		require.NoError(t, st.EventCreate(ctx, store.Event{ID: id, VenueID: vid, Name: s.name, Description: s.desc,
			Category: s.category, StartsAt: starts, SaleStartsAt: starts.Add(-90 * 24 * time.Hour),
			MaxTicketsPerUser: 4, HoldDurationSeconds: 600, Version: 1}))
		f.ids[s.key] = id
	}
	return f
}

func (f *fixture) service(t *testing.T, e search.Engine) *search.Service {
	s := search.NewService(e, f.store, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	s.Now = func() time.Time { return time.Now().UTC() }
	return s
}

// count asks Postgres how many events match (the authority for totals).
func (f *fixture) count(t *testing.T, where string, args ...any) int {
	var n int
	require.NoError(t, f.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM events e JOIN venues v ON v.id = e.venue_id WHERE `+where, args...).Scan(&n))
	return n
}
