// Package reads benchmarks the browsing path with the primary Postgres up
// and with it stopped (served by the streaming replica): searchEvents and
// event pages (event with venue, prices and seat map) through the real App
// over HTTP, from 16 clients, with a query mix that rarely repeats: a first
// phase of first views (each event's live map loaded), then one with the
// primary up and one with it stopped. It reports numbers; it asserts only
// that browsing answers in every phase.
//
//	READS_BENCH_EVENTS=2000 READS_BENCH_DURATION=10s go test -count=1 ./bench/reads -run TestReadsBenchmark -v -timeout 20m
//
// The instance warms up first, as `ticketing serve` does before it listens
// (app.Warm, WARMUP_EVENTS); READS_BENCH_WARM=off skips it, so the first
// phase is a cold instance's first views.
//
// It needs the private primary and replica of scripts/test.sh
// (TEST_PRIMARY_URL, TEST_REPLICA_URL, TEST_PRIMARY_PGDATA, TEST_PG_BIN; see
// scripts/lib.sh ensure_pg_replica).
package reads

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/search/searchtest"
	"github.com/ticketing/ticketing/store"
)

const clients = 16

const gqlSearch = `query($f: EventSearchInput, $first: Int) { searchEvents(filter: $f, first: $first) {
  totalCount edges { cursor node { id name startsAt category venue { name city } } } } }`

const gqlEvent = `query($id: ID!) { event(id: $id) { id name startsAt
  venue { name city sections { id name kind } }
  prices { section { id } price { amount currency } }
  availability { available capacity }
  seatMap { cursor seats { seatId status version } generalAdmission { sectionId available version } } } }`

var words = []string{"jazz", "rock", "flamenco", "opera", "teatro", "ballet", "tango", "circo", "magia", "blues",
	"festival", "noche", "gala", "summer", "winter", "madrid", "sevilla", "london", "paris", "lisboa", "musica",
	"comedia", "futbol", "tenis", "salsa", "indie", "electronica", "orquesta", "guitarra", "zarzuela"}

type result struct {
	search, page []time.Duration
	firstPage    []time.Duration // each event's first page in the phase
	failed       int
	took         time.Duration
	cpu          time.Duration // this process's CPU (the App and the clients) during the phase
}

// processCPU is this process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestReadsBenchmark(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("READS_BENCH_EVENTS"))
	if n == 0 {
		t.Skip("set READS_BENCH_EVENTS (e.g. 2000) to run the read-path benchmark")
	}
	dur := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("READS_BENCH_DURATION")); err == nil && d > 0 {
		dur = d
	}
	pair := testdb.PrivateReplicated(t)
	primary, replica := pair.NewDatabase(t)
	a := apptest.New(t, map[string]string{"DATABASE_URL": primary, "DATABASE_READ_URL": replica,
		"SEATMAP_REDIS_PREFIX": testdb.RedisPrefix(t),
		"ABUSE_LIMITS":         "off"}) // every client is one address: the fair-use limit would refuse them
	base := apptest.Serve(t, a).URL
	cat, err := searchtest.Generate(t.Context(), store.New(a.Pool), n, max(20, n/50), max(50, n/20), 7, time.Now())
	require.NoError(t, err)
	for i := 0; i < len(cat.EventIDs); i += 500 {
		_, err = store.New(a.Pool).InventoryCreate(t.Context(), cat.EventIDs[i:min(i+500, len(cat.EventIDs))])
		require.NoError(t, err)
	}
	_, err = a.Search.Rebuild(t.Context())
	require.NoError(t, err)
	// The seat map's change feed exists, as once the workers' relay has
	// started (app.runRelay): this instance's maps of unchanged events
	// are served without reading their streams.
	require.NoError(t, a.SeatMap.AnnounceFeed(t.Context()))
	pair.CaughtUp(t)
	// What `ticketing serve` does before it listens (app.Warm): the pages of
	// the events most likely browsed are loaded before the first request.
	// READS_BENCH_WARM=off measures a cold instance's first views instead.
	if os.Getenv("READS_BENCH_WARM") != "off" {
		start := time.Now()
		n := a.Warm(t.Context())
		t.Logf("warm-up: %d events' seat maps in %s", n, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("%d events, %d clients, %s per phase, search caches on (queries rarely repeat)", len(cat.EventIDs), clients, dur)

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	post := func(query string, vars map[string]any) error {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		resp, err := hc.Post(base+"/graphql", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var r struct {
			Errors []json.RawMessage `json:"errors"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return err
		}
		if len(r.Errors) > 0 {
			return fmt.Errorf("%s", r.Errors[0])
		}
		return nil
	}
	phase := func(seed uint64) result {
		var mu sync.Mutex
		var res result
		var seen sync.Map
		var wg sync.WaitGroup
		start, cpu0 := time.Now(), processCPU()
		end := start.Add(dur)
		for c := range clients {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(seed, uint64(c)))
				for time.Now().Before(end) {
					var err error
					t0 := time.Now()
					isSearch := rnd.IntN(2) == 0
					isFirst := false
					if isSearch {
						f := map[string]any{"text": words[rnd.IntN(len(words))] + " " + words[rnd.IntN(len(words))]}
						if rnd.IntN(3) == 0 {
							f["city"] = searchtest.Cities[rnd.IntN(len(searchtest.Cities))].Name
						}
						err = post(gqlSearch, map[string]any{"f": f, "first": 5 + rnd.IntN(16)})
					} else {
						id := cat.EventIDs[rnd.IntN(len(cat.EventIDs))]
						_, loaded := seen.LoadOrStore(id, true)
						isFirst = !loaded
						err = post(gqlEvent, map[string]any{"id": id})
					}
					d := time.Since(t0)
					mu.Lock()
					if isSearch {
						res.search = append(res.search, d)
					} else {
						res.page = append(res.page, d)
						if isFirst {
							res.firstPage = append(res.firstPage, d)
						}
					}
					if err != nil {
						if res.failed < 3 {
							t.Logf("failed: %v", err)
						}
						res.failed++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		res.took, res.cpu = time.Since(start), processCPU()-cpu0
		return res
	}
	report := func(name string, r result) {
		for _, k := range []struct {
			what string
			lat  []time.Duration
		}{{"search", r.search}, {"event page", r.page}} {
			sort.Slice(k.lat, func(i, j int) bool { return k.lat[i] < k.lat[j] })
			if len(k.lat) == 0 {
				continue
			}
			t.Logf("%-22s %-10s %6d req %7.0f req/s  p50 %6.1f ms  p99 %6.1f ms", name, k.what, len(k.lat),
				float64(len(k.lat))/r.took.Seconds(), ms(pct(k.lat, 0.5)), ms(pct(k.lat, 0.99)))
		}
		fp := r.firstPage
		sort.Slice(fp, func(i, j int) bool { return fp[i] < fp[j] })
		if len(fp) > 0 {
			t.Logf("%-22s each event's first page in the phase: %d, p50 %.1f ms p99 %.1f ms", name, len(fp), ms(pct(fp, 0.5)), ms(pct(fp, 0.99)))
		}
		t.Logf("%-22s failed: %d; CPU of this process %.2f ms per request", name, r.failed,
			ms(r.cpu)/float64(max(1, len(r.search)+len(r.page))))
	}

	// The first phase is also every event's first page on this instance
	// (without the warm-up, its live map is loaded then:
	// seatmap.Service.Snapshot); reported apart from the views that follow.
	if f := os.Getenv("READS_BENCH_CPU"); f != "" { // a CPU profile of the two phases with the primary up
		out, err := os.Create(f)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(out))
		defer out.Close()
		defer pprof.StopCPUProfile() // first, if a phase fails (a no-op after the one below)
	}
	first := phase(3)
	report("primary up, first views", first)
	require.Zero(t, first.failed)
	up := phase(1)
	report("primary up", up)
	require.Zero(t, up.failed)
	pprof.StopCPUProfile()

	pair.StopPrimary(t)
	down := phase(2) // other queries: not answered from the caches of phase 1
	report("primary down (replica)", down)
	require.Zero(t, down.failed, "browsing must keep answering from the replica")
	pair.StartPrimary(t)
}

func pct(lat []time.Duration, p float64) time.Duration {
	return lat[min(len(lat)-1, int(float64(len(lat))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
