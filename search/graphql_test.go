package search_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
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

type gqlResult struct {
	Data struct {
		SearchEvents struct {
			TotalCount int
			Edges      []struct {
				Cursor     string
				DistanceKm *float64
				Node       struct{ ID, Name string }
			}
			PageInfo struct{ HasNextPage bool }
			Facets   *struct {
				Categories, Cities []struct {
					Value string
					Count int
				}
			}
		}
	}
	Errors []struct {
		Message    string
		Extensions map[string]any
	}
}

func gql(t *testing.T, url, query string, vars map[string]any) gqlResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	res, err := http.Post(url+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	var out gqlResult
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out
}

const searchQuery = `query($f: EventSearchInput, $first: Int, $after: String) {
  searchEvents(filter: $f, first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { cursor distanceKm node { id name } }
    facets { categories { value count } cities { value count } }
  }
}`

// TestGraphQLSearchThroughRelay: the app rebuilds its index at start, serves
// searchEvents over HTTP, and an event renamed in Postgres (with its outbox
// row, as the catalog writes it) is found under its new name within seconds
// through the outbox relay.
func TestGraphQLSearchThroughRelay(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dbURL := testdb.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": testdb.RedisURL(),
		"SEARCH_DIR": t.TempDir(), "JWT_HS256_SECRET": "0123456789abcdef0123456789abcdef"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer a.Close()
	st := store.New(a.Pool)
	cat, err := searchtest.Generate(ctx, st, 300, 20, 50, 7, time.Now())
	require.NoError(t, err)
	go a.RunWorkers(ctx)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	// The index was built at start before the catalog existed: catch up.
	_, err = a.Search.CatchUp(ctx)
	require.NoError(t, err)
	r := gql(t, srv.URL, searchQuery, map[string]any{"f": map[string]any{"city": "sevilla"}, "first": 5})
	require.Empty(t, r.Errors)
	require.Positive(t, r.Data.SearchEvents.TotalCount)
	require.NotNil(t, r.Data.SearchEvents.Facets)
	require.Equal(t, "Sevilla", r.Data.SearchEvents.Facets.Cities[0].Value)

	near := map[string]any{"near": map[string]any{"lat": 40.4168, "lon": -3.7038}, "sort": "DISTANCE"}
	r = gql(t, srv.URL, searchQuery, map[string]any{"f": near, "first": 3})
	require.Empty(t, r.Errors)
	require.NotNil(t, r.Data.SearchEvents.Edges[0].DistanceKm)

	r = gql(t, srv.URL, searchQuery, map[string]any{"f": map[string]any{"sort": "DISTANCE"}})
	require.Equal(t, "BAD_USER_INPUT", r.Errors[0].Extensions["code"])

	// The REST facade answers the same search.
	res, err := http.Get(srv.URL + "/api/events?city=sevilla&first=3&category=music&category=theatre")
	require.NoError(t, err)
	var rest struct {
		TotalCount int
		Edges      []struct{ Node struct{ ID, Name string } }
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&rest))
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Positive(t, rest.TotalCount)
	require.LessOrEqual(t, len(rest.Edges), 3)
	res, err = http.Get(srv.URL + "/api/events?sort=DISTANCE")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)

	id := cat.EventIDs[0]
	require.NoError(t, st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.Exec(ctx, `UPDATE events SET name = 'Gran Final Renombrada', version = version + 1, updated_at = now() WHERE id = $1`, id); err != nil {
			return err
		}
		return tx.CatalogOutboxInsert(ctx, []string{id}, []int64{2})
	}))
	start := time.Now()
	require.Eventually(t, func() bool {
		from := time.Now().Add(-30 * 24 * time.Hour).Format(time.RFC3339)
		r := gql(t, srv.URL, searchQuery, map[string]any{"f": map[string]any{"text": "final renombrada", "from": from}, "first": 1})
		return len(r.Data.SearchEvents.Edges) == 1 && r.Data.SearchEvents.Edges[0].Node.ID == id &&
			r.Data.SearchEvents.Edges[0].Node.Name == "Gran Final Renombrada"
	}, 10*time.Second, 50*time.Millisecond)
	t.Logf("renamed event searchable after %s", time.Since(start))
}
