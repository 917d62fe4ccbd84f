// Package apptest builds the real App of `ticketing serve` for tests, on a
// fresh database and the test Redis, configured through the same
// environment variables as production.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/internal/testdb"
)

// New returns an App configured by env; DATABASE_URL (a fresh database),
// REDIS_URL (and REDIS_CLUSTER_ADDRS when the tests run on the cluster,
// testdb.RedisCluster) and SEARCH_DIR (a temp dir) are filled in when
// absent. The App
// is closed when the test ends.
func New(t testing.TB, env map[string]string) *app.App {
	t.Helper()
	defaults := testdb.RedisEnv() // REDIS_URL, and REDIS_CLUSTER_ADDRS in cluster mode
	defaults["SEARCH_DIR"] = t.TempDir()
	// The test's own Redis key prefix: the seat map's and the rate limits'
	// keys are not shared with tests running at the same time.
	defaults["SEATMAP_REDIS_PREFIX"] = testdb.RedisPrefix(t)
	if env["DATABASE_URL"] == "" {
		defaults["DATABASE_URL"] = testdb.NewDatabase(t)
	}
	get := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return defaults[k]
	}
	cfg, err := config.Load(get)
	require.NoError(t, err)
	a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a
}

// Serve runs a's handler on a real loopback port until the test ends.
func Serve(t testing.TB, a *app.App) *httptest.Server {
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// GraphQL posts query with vars to baseURL's /graphql as the bearer of
// token (none if empty), decodes the data into out (if not nil) and returns
// the errors.
func GraphQL(t testing.TB, baseURL, token, query string, vars map[string]any, out any) []map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest(http.MethodPost, baseURL+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Data   json.RawMessage  `json:"data"`
		Errors []map[string]any `json:"errors"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	if out != nil && len(r.Data) > 0 && string(r.Data) != "null" {
		require.NoError(t, json.Unmarshal(r.Data, out))
	}
	return r.Errors
}
