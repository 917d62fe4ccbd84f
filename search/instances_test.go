package search_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/search/searchtest"
	"github.com/ticketing/ticketing/store"
)

// TestEveryInstanceConverges: two API instances with their own embedded
// indexes (separate SEARCH_DIRs) over one database. Only A runs the outbox
// relay, so B learns of an event renamed through A from A's announcement
// on Redis, and finds it under its new name within seconds.
func TestEveryInstanceConverges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dbURL := testdb.NewDatabase(t)
	newApp := func() *app.App {
		env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": testdb.RedisURL(),
			"SEARCH_DIR": t.TempDir(), "JWT_HS256_SECRET": "0123456789abcdef0123456789abcdef"}
		cfg, err := config.Load(func(k string) string { return env[k] })
		require.NoError(t, err)
		a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		t.Cleanup(a.Close)
		return a
	}
	a := newApp()
	st := store.New(a.Pool)
	cat, err := searchtest.Generate(ctx, st, 100, 10, 20, 11, time.Now())
	require.NoError(t, err)
	b := newApp()
	for _, x := range []*app.App{a, b} {
		require.Eventually(t, func() bool { return x.Search.Ready(ctx) == nil }, 20*time.Second, 20*time.Millisecond)
		_, err := x.Search.CatchUp(ctx) // a's index was built before the catalog existed
		require.NoError(t, err)
	}
	go a.RunWorkers(ctx)
	srvA, srvB := httptest.NewServer(a.Handler()), httptest.NewServer(b.Handler())
	defer srvA.Close()
	defer srvB.Close()

	id := cat.EventIDs[0]
	require.NoError(t, st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.Exec(ctx, `UPDATE events SET name = 'Concierto Bautizado Kappa', version = version + 1, updated_at = now() WHERE id = $1`, id); err != nil {
			return err
		}
		return tx.CatalogOutboxInsert(ctx, []string{id}, []int64{2})
	}))
	start := time.Now()
	for name, url := range map[string]string{"A": srvA.URL, "B": srvB.URL} {
		require.Eventually(t, func() bool {
			from := time.Now().Add(-30 * 24 * time.Hour).Format(time.RFC3339)
			r := gql(t, url, searchQuery, map[string]any{"f": map[string]any{"text": "bautizado kappa", "from": from}, "first": 1})
			return len(r.Data.SearchEvents.Edges) == 1 && r.Data.SearchEvents.Edges[0].Node.ID == id
		}, 10*time.Second, 50*time.Millisecond, "instance %s", name)
		t.Logf("instance %s finds the renamed event after %s", name, time.Since(start))
	}
}
