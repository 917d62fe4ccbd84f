// Package search_test is the search benchmark: N generated events (default
// 100,000), the indexing rate of the embedded engine, and p50/p99 latency of
// a mix of searches through the GraphQL endpoint at 16 concurrent clients,
// as shipped (caches on) and with every cache off, next to the same
// searches answered by Postgres full-text search (a denormalised search
// table: weighted tsvector + GIN + unaccent, b-trees for the filters and the
// date order; store/search_baseline.go). Run it with (see bench/README.md):
//
//	SEARCH_BENCH_EVENTS=100000 SEARCH_BENCH_ROUNDS=30 go test ./bench/search -run TestSearchBenchmark -v -timeout 30m
//
// SEARCH_BENCH_CPU=file writes a CPU profile of the uncached pass alone.
package search_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/search/searchtest"
	"github.com/ticketing/ticketing/store"
)

const clients = 16

// benchQuery is one search of the mix, as GraphQL variables and as the
// baseline's query.
type benchQuery struct {
	name   string
	filter map[string]any
	facets bool
	base   store.BaselineQuery
}

func mix(now time.Time) []benchQuery {
	f := func(v float64) *float64 { return &v }
	in30 := now.Add(30 * 24 * time.Hour)
	var qs []benchQuery
	for _, t := range []string{"flamenco", "jazz", "musica clasica", "teatro", "festival verano", "ballet", "rosalia", "orquesta sinfonica", "boxeo", "magia"} {
		qs = append(qs, benchQuery{name: "text", filter: map[string]any{"text": t}, facets: true,
			base: store.BaselineQuery{Text: t, Sort: "RELEVANCE"}})
	}
	for _, t := range []string{"flamneco", "barcelna", "opera", "tenis madrid"} { // typos/accents: Postgres finds fewer
		qs = append(qs, benchQuery{name: "text-typo", filter: map[string]any{"text": t},
			base: store.BaselineQuery{Text: t, Sort: "RELEVANCE"}})
	}
	for _, c := range []string{"Madrid", "Sevilla", "Málaga", "London"} {
		qs = append(qs, benchQuery{name: "city", filter: map[string]any{"city": c}, facets: true,
			base: store.BaselineQuery{City: c, Sort: "DATE"}})
	}
	for _, c := range [][]string{{"music"}, {"sports", "comedy"}} {
		qs = append(qs, benchQuery{name: "category", filter: map[string]any{"categories": c},
			base: store.BaselineQuery{Categories: c, Sort: "DATE"}})
	}
	for _, p := range searchtest.Cities[:4] {
		qs = append(qs, benchQuery{name: "near",
			filter: map[string]any{"near": map[string]any{"lat": p.Lat, "lon": p.Lon}, "radiusKm": 30, "sort": "DISTANCE"},
			base:   store.BaselineQuery{Lat: f(p.Lat), Lon: f(p.Lon), RadiusKm: 30, Sort: "DISTANCE"}})
	}
	qs = append(qs,
		benchQuery{name: "combined", filter: map[string]any{"text": "jazz", "city": "Madrid", "to": in30.Format(time.RFC3339)},
			base: store.BaselineQuery{Text: "jazz", City: "Madrid", To: in30, Sort: "RELEVANCE"}},
		benchQuery{name: "combined", filter: map[string]any{"categories": []string{"music"}, "city": "Barcelona", "to": in30.Format(time.RFC3339)}, facets: true,
			base: store.BaselineQuery{Categories: []string{"music"}, City: "Barcelona", To: in30, Sort: "DATE"}},
		benchQuery{name: "browse", filter: map[string]any{}, facets: true, base: store.BaselineQuery{Sort: "DATE"}},
	)
	return qs
}

const gqlSearch = `query($f: EventSearchInput) { searchEvents(filter: $f, first: 20) {
  totalCount pageInfo { hasNextPage endCursor } edges { cursor distanceKm node { id name startsAt category } } } }`

const gqlSearchFacets = `query($f: EventSearchInput) { searchEvents(filter: $f, first: 20) {
  totalCount pageInfo { hasNextPage endCursor } edges { cursor distanceKm node { id name startsAt category } }
  facets { categories { value count } cities { value count } } } }`

// run sends every query of qs `rounds` times from 16 clients and returns
// the sorted latencies (failed requests included) and the failures by kind.
func run(t *testing.T, qs []benchQuery, rounds int, do func(q benchQuery) error) ([]time.Duration, map[string]int) {
	var mu sync.Mutex
	var lat []time.Duration
	failed := map[string]int{}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds * len(qs) / clients {
				q := qs[(c*7+i)%len(qs)]
				start := time.Now()
				err := do(q)
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					failed[q.name]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, failed
}

func pct(lat []time.Duration, p float64) time.Duration {
	return lat[min(len(lat)-1, int(float64(len(lat))*p))]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}

func TestSearchBenchmark(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SEARCH_BENCH_EVENTS"))
	if n == 0 {
		t.Skip("set SEARCH_BENCH_EVENTS (e.g. 100000) to run the search benchmark")
	}
	rounds := 100
	if v, _ := strconv.Atoi(os.Getenv("SEARCH_BENCH_ROUNDS")); v > 0 {
		rounds = v
	}
	ctx := context.Background()
	loadStart := loadavg()
	dbURL := testdb.NewDatabase(t)
	now := time.Now().UTC()
	{
		st, closeDB := openStore(t, dbURL)
		start := time.Now()
		_, err := searchtest.Generate(ctx, st, n, 400, 5000, 1, now)
		require.NoError(t, err)
		t.Logf("generated %d events in Postgres in %s", n, time.Since(start).Round(time.Millisecond))
		closeDB()
	}

	// Indexing: the app rebuilds its (new) embedded index from Postgres at start.
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": testdb.RedisURL(), "SEARCH_DIR": t.TempDir(),
		"JWT_HS256_SECRET": "0123456789abcdef0123456789abcdef",
		"ABUSE_LIMITS":     "off"} // every client is one address
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	start := time.Now()
	a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer a.Close()
	require.Eventually(t, func() bool { return a.Search.Ready(ctx) == nil }, 20*time.Minute, 100*time.Millisecond)
	indexTook := time.Since(start)
	count, _ := a.Search.Engine.Count(ctx)
	require.Equal(t, uint64(n), count)
	t.Logf("indexed %d events in %s", n, indexTook.Round(time.Millisecond))
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}

	qs := mix(now)
	do := func(q benchQuery) error {
		query := gqlSearch
		if q.facets {
			query = gqlSearchFacets
		}
		body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"f": q.filter}})
		res, err := client.Post(srv.URL+"/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var out struct {
			Data struct {
				SearchEvents struct{ TotalCount int }
			}
			Errors []any
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || len(out.Errors) > 0 {
			return fmt.Errorf("%v %v", err, out.Errors)
		}
		return nil
	}
	// Uncached first: every request runs the engine (no result cache, no
	// cached totals/facets). Then as shipped: identical searches within 1 s
	// share a result, totals/facets are reused for 2 s.
	bleveEngine, _ := a.Search.Engine.(*search.Bleve)
	a.Search.CacheTTL = -1
	if bleveEngine != nil {
		bleveEngine.StatsTTL = -1
	}
	run(t, qs, 2, do) // warm up
	// SEARCH_BENCH_CPU: a CPU profile of the uncached pass alone
	if p := os.Getenv("SEARCH_BENCH_CPU"); p != "" {
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
	}
	rawLat, rawFailed := run(t, qs, rounds, do)
	if os.Getenv("SEARCH_BENCH_CPU") != "" {
		pprof.StopCPUProfile()
	}
	a.Search.CacheTTL = 0
	if bleveEngine != nil {
		bleveEngine.StatsTTL = 0
	}
	run(t, qs, 2, do) // warm up
	gqlLat, gqlFailed := run(t, qs, rounds, do)

	// SEARCH_BENCH_NO_PG=1 leaves out the Postgres baseline (minutes to
	// build its table and indexes): its line reports zeros.
	pgLat, pgFailed, ginTook := []time.Duration{0}, map[string]int{}, time.Duration(0)
	if os.Getenv("SEARCH_BENCH_NO_PG") == "" {
		st, closeDB := openStore(t, dbURL)
		defer closeDB()
		start = time.Now()
		require.NoError(t, st.SearchBaselinePrepare(ctx))
		ginTook = time.Since(start)
		base := func(q benchQuery) error {
			bq := q.base
			bq.From, bq.Limit, bq.Facets = time.Now(), 20, q.facets
			_, _, err := st.SearchBaseline(ctx, bq)
			return err
		}
		run(t, qs, 2, base) // warm up
		pgLat, pgFailed = run(t, qs, rounds, base)
	}

	report := fmt.Sprintf(`events: %d
load average (1/5/15 min) at start: %s, at end: %s (%d CPUs)
embedded index rebuild at start: %s (%.0f events/s)
Postgres search table + GIN/b-tree indexes build: %s
searches: %d kinds x %d rounds = %d requests, %d concurrent clients
GraphQL searchEvents (Bleve, as shipped):  p50 %s  p99 %s  max %s  failed %v
GraphQL searchEvents (Bleve, no caches):   p50 %s  p99 %s  max %s  failed %v
Postgres FTS baseline (SQL, no HTTP):      p50 %s  p99 %s  max %s  failed %v
`, n, loadStart, loadavg(), runtime.NumCPU(), indexTook.Round(time.Millisecond), float64(n)/indexTook.Seconds(), ginTook.Round(time.Millisecond),
		len(qs), rounds, len(gqlLat), clients,
		ms(pct(gqlLat, .5)), ms(pct(gqlLat, .99)), ms(gqlLat[len(gqlLat)-1]), gqlFailed,
		ms(pct(rawLat, .5)), ms(pct(rawLat, .99)), ms(rawLat[len(rawLat)-1]), rawFailed,
		ms(pct(pgLat, .5)), ms(pct(pgLat, .99)), ms(pgLat[len(pgLat)-1]), pgFailed)
	t.Log("\n" + report)
	if out := os.Getenv("SEARCH_BENCH_OUT"); out != "" {
		require.NoError(t, os.WriteFile(out, []byte(report), 0o644))
	}
}

// loadavg is the machine's load average (1, 5, 15 minutes).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func openStore(t *testing.T, url string) (*store.Store, func()) {
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	return store.New(pool), pool.Close
}
