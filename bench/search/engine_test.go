package search_test

import (
	"context"
	"log/slog"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/search/searchtest"
	"github.com/ticketing/ticketing/store"
)

// toInput is a query of the mix as search.Input.
func toInput(q benchQuery) search.Input {
	in := search.Input{First: 20, Facets: q.facets}
	f := q.filter
	if v, ok := f["text"].(string); ok {
		in.Text = v
	}
	if v, ok := f["city"].(string); ok {
		in.City = v
	}
	if v, ok := f["categories"].([]string); ok {
		in.Categories = v
	}
	if v, ok := f["near"].(map[string]any); ok {
		in.Near = &search.GeoPoint{Lat: v["lat"].(float64), Lon: v["lon"].(float64)}
	}
	if v, ok := f["radiusKm"].(int); ok {
		r := float64(v)
		in.RadiusKm = &r
	}
	if v, ok := f["sort"].(string); ok {
		in.Sort = search.Sort(v)
	}
	if v, ok := f["to"].(string); ok {
		t, _ := time.Parse(time.RFC3339, v)
		in.To = &t
	}
	return in
}

// TestSearchEngine is the engine-level companion of TestSearchBenchmark,
// for profiling: the benchmark's mix straight against search.Service (no
// HTTP, no GraphQL), over a database that is kept between runs. Create it
// once (createdb + `ticketing migrate`); the first run generates 100,000
// events and builds the index under SEARCH_PROF_DIR, later runs reuse both.
//
//	SEARCH_PROF_DB=search_prof SEARCH_PROF_DIR=/tmp/sp \
//	  [SEARCH_PROF_NOCACHE=1] [SEARCH_PROF_CLIENTS=1] [SEARCH_PROF_ROUNDS=10] \
//	  [SEARCH_PROF_CPU=cpu.prof] [SEARCH_PROF_CPU_START=rebuild.prof] [SEARCH_PROF_PG=1] \
//	  go test ./bench/search -run TestSearchEngine -v
//
// SEARCH_PROF_PG=1 times the Postgres baseline instead (one client).
func TestSearchEngine(t *testing.T) {
	db := os.Getenv("SEARCH_PROF_DB")
	if db == "" {
		t.Skip("set SEARCH_PROF_DB (and SEARCH_PROF_DIR) to profile the search engine")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testdb.URLFor(db))
	require.NoError(t, err)
	defer pool.Close()
	st := store.New(pool)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n))
	if n == 0 {
		start := time.Now()
		_, err := searchtest.Generate(ctx, st, 100000, 400, 5000, 1, time.Now().UTC())
		require.NoError(t, err)
		t.Logf("generated in %s", time.Since(start))
	}
	if os.Getenv("SEARCH_PROF_PG") != "" {
		start := time.Now()
		require.NoError(t, st.SearchBaselinePrepare(ctx))
		t.Logf("baseline prepare %s", time.Since(start))
		byKind := map[string][]time.Duration{}
		for range 3 {
			for _, q := range mix(time.Now()) {
				bq := q.base
				bq.From, bq.Limit, bq.Facets = time.Now(), 20, q.facets
				s := time.Now()
				ids, total, err := st.SearchBaseline(ctx, bq)
				require.NoError(t, err)
				byKind[q.name] = append(byKind[q.name], time.Since(s))
				_ = ids
				if os.Getenv("SEARCH_PROF_PG") == "v" {
					t.Log(q.name, q.filter, total)
				}
			}
		}
		for k, l := range byKind {
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
			t.Logf("PG %-10s n=%d p50 %s max %s", k, len(l), ms(pct(l, .5)), ms(l[len(l)-1]))
		}
		return
	}
	b, err := search.OpenBleve(os.Getenv("SEARCH_PROF_DIR"), false)
	require.NoError(t, err)
	defer b.Close()
	svc := search.NewService(b, st, slog.New(slog.DiscardHandler))
	if os.Getenv("SEARCH_PROF_NOCACHE") != "" {
		svc.CacheTTL, b.StatsTTL = -1, -1
	}
	start := time.Now()
	if p := os.Getenv("SEARCH_PROF_CPU_START"); p != "" {
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
	}
	require.NoError(t, svc.Start(ctx, b.Fresh))
	if os.Getenv("SEARCH_PROF_CPU_START") != "" {
		pprof.StopCPUProfile()
	}
	t.Logf("start (fresh=%v) took %s", b.Fresh, time.Since(start))
	qs := mix(time.Now())
	rounds, _ := strconv.Atoi(os.Getenv("SEARCH_PROF_ROUNDS"))
	if rounds == 0 {
		rounds = 10
	}
	if p := os.Getenv("SEARCH_PROF_CPU"); p != "" {
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	var mu sync.Mutex
	byKind := map[string][]time.Duration{}
	var all []time.Duration
	var wg sync.WaitGroup
	nc := clients
	if v, _ := strconv.Atoi(os.Getenv("SEARCH_PROF_CLIENTS")); v > 0 {
		nc = v
	}
	for _, q := range qs {
		_, _ = svc.Search(ctx, toInput(q))
	}
	for c := range nc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds * len(qs) / nc {
				q := qs[(c*7+i)%len(qs)]
				s := time.Now()
				_, err := svc.Search(ctx, toInput(q))
				d := time.Since(s)
				if err != nil {
					t.Error(q.name, err)
				}
				mu.Lock()
				byKind[q.name] = append(byKind[q.name], d)
				all = append(all, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for k, l := range byKind {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		t.Logf("%-10s n=%d p50 %s p99 %s", k, len(l), ms(pct(l, .5)), ms(pct(l, .99)))
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	t.Logf("ALL p50 %s p99 %s max %s", ms(pct(all, .5)), ms(pct(all, .99)), ms(all[len(all)-1]))
}
