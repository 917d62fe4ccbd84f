// Command holds is the createHold load generator: it runs the real app
// in-process on a real loopback listener against a fresh database, drives
// createHold through the GraphQL HTTP endpoint with N concurrent clients, and
// runs pgbench with a bare conditional UPDATE + outbox INSERT on the same
// Postgres for comparison. See bench/README.md and bench/holds/run.sh.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
)

var (
	baseURL   = flag.String("db", "postgres:///postgres?host=/var/run/postgresql&user=postgres", "Postgres server (any database; a fresh one is created)")
	redisURL  = flag.String("redis", "redis://127.0.0.1:6379/15", "Redis")
	redisClus = flag.String("redis-cluster", "", "REDIS_CLUSTER_ADDRS of a Redis Cluster to use instead of -redis (e.g. the test suite's 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103)")
	baselines = flag.Bool("baselines", true, "also run the pgbench baselines")
	poolMax   = flag.Int("pool", 16, "app pgx pool_max_conns")
	clients   = flag.String("clients", "8,64", "concurrent clients per run")
	duration  = flag.Duration("duration", 8*time.Second, "length of each run")
	pgbench   = flag.String("pgbench", "/usr/lib/postgresql/15/bin/pgbench", "pgbench binary")
	cpuprof   = flag.String("cpuprofile", "", "write a CPU profile of the hot-event run with the most clients")
	keepDB    = flag.Bool("keep", false, "keep the bench database")
	gistCheck = flag.Bool("gist-check", false, "also rerun the largest spread run without the hold_items exclusion constraint (dropped in the bench database only)")
	mainRuns  = flag.Bool("main", true, "run the mixed seat/GA holds runs (spread and hot event)")
	gaSweep   = flag.String("ga-capacities", "10000,50000,100000,200000", "GA capacity sweep: one-unit GA holds on a floor of each capacity (empty: skip)")
	gaClients = flag.Int("ga-clients", 8, "concurrent clients of the GA capacity sweep")
	workers   = flag.Bool("workers", false, "also run the app's background workers (app.RunWorkers: the outbox relay publishing every hold to the seat map and search, the sweeper, the queue controller, the orders jobs), as ticketing serve does")
	gaExplain = flag.Bool("ga-explain", true, "after each sweep run, print the plan (auto_explain, EXPLAIN ANALYZE) of the GA pick inside hold_create and of the relay's GA recount")
	spreadN   = 100
	secret    = "bench-secret-0123456789abcdef"
	rowsSpr   = 20
	perRowSpr = 50
	gaSpr     = 2000
	rowsHot   = 300
	perRowHot = 100
	gaHot     = 15000
)

type benchEvent struct {
	id, ga string
	rows   [][]string // seat ids per row
	cursor atomic.Int64
	gaOnly bool // every request is one GA unit (the capacity sweep)
}

func main() {
	flag.Parse()
	ctx := context.Background()
	name := "ticketing_bench_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	admin, err := pgx.Connect(ctx, *baseURL)
	check(err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	check(err)
	defer func() {
		if !*keepDB {
			_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
	}()
	u, _ := url.Parse(*baseURL)
	u.Path = "/" + name
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(*poolMax))
	u.RawQuery = q.Encode()
	dbURL := u.String()

	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": *redisURL, "JWT_HS256_SECRET": secret,
		"REDIS_CLUSTER_ADDRS": *redisClus,
		"ABUSE_LIMITS":        "off"} // every buyer is one address
	if *redisClus != "" {
		log.Printf("Redis Cluster %s", *redisClus)
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	check(err)
	a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	check(err)
	defer a.Close()
	meter = &cpuMeter{pool: a.Pool, rdb: a.Redis, db: name}
	if *workers {
		wctx, stopWorkers := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); a.RunWorkers(wctx) }()
		defer func() { stopWorkers(); <-done }()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	srv := &http.Server{Handler: a.Handler()}
	go srv.Serve(l)
	defer srv.Close()
	endpoint := "http://" + l.Addr().String() + "/graphql"

	mintTokens()
	counts := ints(*clients)
	if *gaSweep != "" {
		sweepGA(ctx, a.Pool, endpoint, ints(*gaSweep))
	}
	if !*mainRuns {
		return
	}
	log.Printf("creating %d spread events (%dx%d seats + %d GA) and 1 hot event (%dx%d + %d GA)",
		spreadN, rowsSpr, perRowSpr, gaSpr, rowsHot, perRowHot, gaHot)
	var spread []*benchEvent
	for range spreadN {
		spread = append(spread, createEvent(ctx, a.Pool, rowsSpr, perRowSpr, gaSpr))
	}
	hot := createEvent(ctx, a.Pool, rowsHot, perRowHot, gaHot)
	_, err = a.Pool.Exec(ctx, "VACUUM ANALYZE")
	check(err)

	// A short warm-up run, so the measured runs start, like a real sale,
	// with a holds history that the planner knows about (see reset).
	// The pause outlasts the holds service's in-flight window (2 s): the
	// first measured run deals the same seats again, and a younger lease
	// of the warm-up's users would be a fast conflict.
	reset(ctx, a.Pool, spread)
	run(endpoint, spread, slices.Max(counts), 2*time.Second)
	time.Sleep(3 * time.Second)

	fmt.Printf("\n%-22s %8s %10s %9s %9s %9s %9s\n", "run", "clients", "holds/s", "p50 ms", "p99 ms", "conflict", "errors")
	results := map[string]float64{}
	for _, n := range counts {
		for _, sc := range []struct {
			name   string
			events []*benchEvent
		}{{"spread-100-events", spread}, {"hot-event", []*benchEvent{hot}}} {
			reset(ctx, a.Pool, sc.events)
			var stop func()
			if *cpuprof != "" && sc.name == "hot-event" && n == slices.Max(counts) {
				f, err := os.Create(*cpuprof)
				check(err)
				check(pprof.StartCPUProfile(f))
				stop = func() { pprof.StopCPUProfile(); f.Close() }
			}
			r := run(endpoint, sc.events, n, *duration)
			if stop != nil {
				stop()
			}
			results[fmt.Sprintf("%s/%d", sc.name, n)] = r.rate
			fmt.Printf("%-22s %8d %10.0f %9.1f %9.1f %9d %9d   %s\n", sc.name, n, r.rate, ms(r.p50), ms(r.p99), r.conflicts, r.errors, r.cpu)
		}
	}

	if !*baselines {
		return
	}
	// The baseline: the bare conditional UPDATE + outbox INSERT. The app's
	// idle connections are closed first, so pgbench's clients fit in
	// max_connections on a server shared with other databases.
	a.Pool.Reset()
	pgb := map[int]float64{}
	script := filepath.Join(os.TempDir(), "holds_pgbench.sql")
	check(os.WriteFile(script, []byte(pgbenchScript(ctx, a.Pool, hot.id)), 0o644))
	for _, n := range counts {
		pgb[n] = runPgbench(u, script, n)
		fmt.Printf("%-22s %8d %10.0f\n", "pgbench-bare", n, pgb[n])
	}
	// Our whole hold transaction (hold_create, one explicit seat) on the
	// database alone: what the app and HTTP add is the gap to our figure.
	// Each client walks its own seats and wraps around once it has held
	// them all (at ~470 holds/s per client within 8 s): with a 1 s hold
	// duration its earlier holds have expired by then, and hold_create
	// reclaims the seat in the same UPDATE, as it would after a real
	// expiry. (A longer one aborted the client on the quiet machine.)
	_, err = a.Pool.Exec(ctx, `UPDATE events SET hold_duration_seconds = 1 WHERE id = $1`, hot.id)
	check(err)
	for _, n := range counts {
		reset(ctx, a.Pool, []*benchEvent{hot})
		a.Pool.Reset()
		fn := filepath.Join(os.TempDir(), "holds_pgbench_fn.sql")
		check(os.WriteFile(fn, []byte(pgbenchHoldScript(ctx, a.Pool, hot.id, n)), 0o644))
		fmt.Printf("%-22s %8d %10.0f\n", "pgbench-hold-fn", n, runPgbench(u, fn, n))
	}
	// GA design check: 2 units per transaction from unit rows picked with
	// SKIP LOCKED (ours) versus one counter row per section.
	_, err = a.Pool.Exec(ctx, `CREATE TABLE bench_ga_counter (section_id uuid PRIMARY KEY, held int NOT NULL, capacity int NOT NULL);
		INSERT INTO bench_ga_counter VALUES ('`+hot.ga+`', 0, 1000000)`)
	check(err)
	// The pick's index column: ga_status since migration 00014, status before.
	pickCol := "status"
	var hasGAStatus bool
	check(a.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'inventory'::regclass AND attname = 'ga_status')`).Scan(&hasGAStatus))
	if hasGAStatus {
		pickCol = "ga_status"
	}
	gaUnits := filepath.Join(os.TempDir(), "holds_pgbench_ga_units.sql")
	gaCounter := filepath.Join(os.TempDir(), "holds_pgbench_ga_counter.sql")
	check(os.WriteFile(gaUnits, []byte(fmt.Sprintf(`BEGIN;
WITH picked AS MATERIALIZED (
  SELECT id FROM inventory WHERE event_id = '%[1]s' AND section_id = '%[2]s' AND unit_no IS NOT NULL
    AND %[3]s IN ('AVAILABLE', 'HELD') AND (status = 'AVAILABLE' OR expires_at <= now())
  ORDER BY %[3]s, id LIMIT 2 FOR UPDATE SKIP LOCKED)
UPDATE inventory i SET status = 'HELD', hold_id = gen_random_uuid(), owner = 'pgbench', expires_at = now(),
  version = nextval('inventory_version_seq'), updated_at = now()
FROM picked WHERE i.event_id = '%[1]s' AND i.id = picked.id;
INSERT INTO outbox (event_id, topic, payload) VALUES ('%[1]s', 'inventory', '{"kind":"hold","seats":[]}');
END;
`, hot.id, hot.ga, pickCol)), 0o644))
	check(os.WriteFile(gaCounter, []byte(fmt.Sprintf(`BEGIN;
UPDATE bench_ga_counter SET held = held + 2 WHERE section_id = '%[2]s' AND held + 2 <= capacity;
INSERT INTO outbox (event_id, topic, payload) VALUES ('%[1]s', 'inventory', '{"kind":"hold","seats":[]}');
END;
`, hot.id, hot.ga)), 0o644))
	n := slices.Max(counts)
	fmt.Printf("%-22s %8d %10.0f\n", "pgbench-ga-unit-rows", n, runPgbench(u, gaUnits, n))
	fmt.Printf("%-22s %8d %10.0f\n", "pgbench-ga-counter-row", n, runPgbench(u, gaCounter, n))

	// The cost of the hold_items exclusion constraint (GiST): the same
	// spread run without it, in this throwaway database only.
	if *gistCheck {
		var name string
		check(a.Pool.QueryRow(ctx, `SELECT conname FROM pg_constraint WHERE conrelid = 'hold_items'::regclass AND contype = 'x'`).Scan(&name))
		_, err = a.Pool.Exec(ctx, `ALTER TABLE hold_items DROP CONSTRAINT `+name)
		check(err)
		reset(ctx, a.Pool, spread)
		r := run(endpoint, spread, n, *duration)
		fmt.Printf("%-22s %8d %10.0f %9.1f %9.1f %9d %9d\n", "spread-no-exclusion", n, r.rate, ms(r.p50), ms(r.p99), r.conflicts, r.errors)
	}

	fmt.Println("\nratios (ours / bare pgbench at the same client count):")
	for _, n := range counts {
		fmt.Printf("  %3d clients: spread %.0f%%, hot %.0f%%\n", n,
			100*results[fmt.Sprintf("spread-100-events/%d", n)]/pgb[n], 100*results[fmt.Sprintf("hot-event/%d", n)]/pgb[n])
	}
}

func ints(list string) []int {
	var out []int
	for _, c := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		check(err)
		out = append(out, n)
	}
	return out
}

// sweepGA runs one-unit GA holds at -ga-clients on a floor of each
// capacity: the cost of a hold must not depend on it. With -ga-explain it
// then prints how the hold function's GA pick ran (auto_explain of the
// statement inside hold_create, with the floor as the run left it) and
// what the relay's recount of the floor (store.SeatMapGA) costs.
func sweepGA(ctx context.Context, pool *pgxpool.Pool, endpoint string, capacities []int) {
	fmt.Printf("\nGA capacity sweep: one-unit GA holds, %d clients\n", *gaClients)
	fmt.Printf("%-22s %8s %10s %9s %9s %9s %9s\n", "capacity", "clients", "holds/s", "p50 ms", "p99 ms", "conflict", "errors")
	for _, c := range capacities {
		ev := createEvent(ctx, pool, 1, 4, c)
		ev.gaOnly = true
		reset(ctx, pool, []*benchEvent{ev})
		r := run(endpoint, []*benchEvent{ev}, *gaClients, *duration)
		fmt.Printf("%-22d %8d %10.0f %9.1f %9.1f %9d %9d\n", c, *gaClients, r.rate, ms(r.p50), ms(r.p99), r.conflicts, r.errors)
		if *gaExplain {
			explainGA(ctx, pool, ev)
		}
	}
}

// explainGA prints the plans of one more GA hold's pick (rolled back) and
// of the GA recount, with timings.
func explainGA(ctx context.Context, pool *pgxpool.Pool, ev *benchEvent) {
	cfg := pool.Config().ConnConfig.Copy()
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { plans = append(plans, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	check(err)
	defer conn.Close(ctx)
	for _, sql := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_analyze = on`, `SET auto_explain.log_buffers = on`, `SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_level = notice`, `BEGIN`} {
		_, err := conn.Exec(ctx, sql)
		check(err)
	}
	// Eight holds in the session: plpgsql may switch to a generic plan
	// after five executions, as on the app's long-lived connections.
	for range 8 {
		_, err = conn.Exec(ctx, `SELECT o_outcome FROM hold_create('explain', md5(random()::text), '\x00', gen_random_uuid(), $1,
			'{}', 0, NULL, false, 3, ARRAY[$2::uuid], ARRAY[1], false, NULL)`, ev.id, ev.ga)
		check(err)
	}
	_, err = conn.Exec(ctx, `ROLLBACK`)
	check(err)
	var picks []string
	for _, p := range plans {
		if strings.Contains(p, "ga_status IN") {
			picks = append(picks, p)
		}
	}
	if len(picks) > 0 {
		durations := make([]string, len(picks))
		for i, p := range picks {
			durations[i], _, _ = strings.Cut(strings.TrimPrefix(strings.TrimSpace(p), "duration: "), " ")
		}
		fmt.Printf("  GA pick inside hold_create, 8 calls in one session (ms): %s; the last plan:\n    %s\n",
			strings.Join(durations, " "), strings.ReplaceAll(strings.TrimSpace(picks[len(picks)-1]), "\n", "\n    "))
	}
	rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) SELECT section_id::text,
		(count(*) FILTER (WHERE status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now())))::int, sum(version)::bigint
		FROM inventory WHERE event_id = $1 AND unit_no IS NOT NULL AND section_id = ANY($2::uuid[]) GROUP BY section_id`, ev.id, []string{ev.ga})
	check(err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	check(err)
	fmt.Printf("  GA recount (store.SeatMapGA, once per relay batch): %s\n", lines[len(lines)-1])
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func createEvent(ctx context.Context, pool *pgxpool.Pool, rows, perRow, ga int) *benchEvent {
	venue, ev, seated, gaSec := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO venues (id, name, address, city, country, lat, lon) VALUES ($1, 'Bench hall', 'x', 'Madrid', 'ES', 40.4, -3.7)`, []any{venue}},
		{`INSERT INTO sections (id, venue_id, position, name, kind, capacity) VALUES ($1, $2, 1, 'Stalls', 'SEATED', $3), ($4, $2, 2, 'Floor', 'GENERAL_ADMISSION', $5)`, []any{seated, venue, rows * perRow, gaSec, ga}},
		{`INSERT INTO seats (id, section_id, row_label, row_index, number, x, y)
		  SELECT gen_random_uuid(), $1, 'R' || r, r, n, n, r FROM generate_series(0, $2 - 1) r, generate_series(1, $3) n`, []any{seated, rows, perRow}},
		{`INSERT INTO events (id, venue_id, name, category, starts_at, sale_starts_at, max_tickets_per_user, hold_duration_seconds)
		  VALUES ($1, $2, 'Bench', 'music', now() + interval '30 days', now() - interval '1 hour', 100, 60)`, []any{ev, venue}},
		{`INSERT INTO event_prices VALUES ($1, $2, 5000, 'EUR'), ($1, $3, 2500, 'EUR')`, []any{ev, seated, gaSec}},
		{`INSERT INTO inventory (event_id, section_id, seat_id) SELECT $1, section_id, id FROM seats WHERE section_id = $2 ORDER BY row_index, number`, []any{ev, seated}},
		{`INSERT INTO inventory (event_id, section_id, unit_no) SELECT $1, $2, g FROM generate_series(1, $3) g`, []any{ev, gaSec, ga}},
	}
	for _, s := range stmts {
		_, err := pool.Exec(ctx, s.sql, s.args...)
		check(err)
	}
	e := &benchEvent{id: ev, ga: gaSec, rows: make([][]string, rows)}
	r, err := pool.Query(ctx, `SELECT row_index, id::text FROM seats WHERE section_id = $1 ORDER BY row_index, number`, seated)
	check(err)
	for r.Next() {
		var i int
		var id string
		check(r.Scan(&i, &id))
		e.rows[i] = append(e.rows[i], id)
	}
	check(r.Err())
	return e
}

// reset makes all inventory available again between runs. The holds are
// ended (CANCELLED, their items' periods emptied), not deleted: a real
// database has a holds history, and emptying the tables before VACUUM
// ANALYZE left statistics of empty tables, so every connection's cached
// plans for the lookups of holds (idempotency key, the user's count) were
// sequential scans for the whole next run (autovacuum is off on this
// machine, so nothing re-analyzed them): thousands of rows read per hold.
func reset(ctx context.Context, pool *pgxpool.Pool, evs []*benchEvent) {
	for _, sql := range []string{
		`UPDATE inventory SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, expires_at = NULL WHERE status <> 'AVAILABLE'`,
		`UPDATE hold_items SET period = tstzrange(lower(period), lower(period)) WHERE NOT isempty(period)`,
		`UPDATE holds SET status = 'CANCELLED' WHERE status = 'ACTIVE'`,
		`DELETE FROM idempotency_keys`, `DELETE FROM outbox`, `VACUUM ANALYZE`,
	} {
		_, err := pool.Exec(ctx, sql)
		check(err)
	}
	for _, e := range evs {
		e.cursor.Store(0)
	}
}

// next returns the seats of the next request: 40% one seat, 30% four
// adjacent seats, 30% two GA units. Seats are dealt in order so requests do
// not collide (the run measures holds, not conflicts).
func (e *benchEvent) next(rng *rand.Rand) map[string]any {
	in := map[string]any{"eventId": e.id, "idempotencyKey": uuid.NewString()}
	switch p := rng.IntN(10); {
	case e.gaOnly:
		in["generalAdmission"] = []any{map[string]any{"sectionId": e.ga, "quantity": 1}}
	case p < 3:
		in["generalAdmission"] = []any{map[string]any{"sectionId": e.ga, "quantity": 2}}
	default:
		n := 1
		if p < 6 {
			n = 4
		}
		perRow := len(e.rows[0])
		blocks := perRow / 4
		c := int(e.cursor.Add(1)-1) % (len(e.rows) * blocks)
		row, start := e.rows[c/blocks], (c%blocks)*4
		in["seatIds"] = row[start : start+n]
	}
	return in
}

// tokens are minted before the runs, so the load generator does not sign a
// JWT per request on the cores it shares with the server; each is a distinct
// user, reused only after all the others (well within maxTicketsPerUser).
var (
	tokens    []string
	tokenNext atomic.Uint64
)

func mintTokens() {
	tokens = make([]string, 50000)
	for i := range tokens {
		var err error
		tokens[i], err = auth.Mint(secret, "ticketing-dev", "ticketing", fmt.Sprintf("bench-user-%d", i), nil, 2*time.Hour)
		check(err)
	}
}

type result struct {
	rate              float64
	p50, p99          time.Duration
	conflicts, errors int64
	cpu               string // CPU per hold by process (perHold)
}

var meter *cpuMeter

const mutation = `mutation($in: CreateHoldInput!) { createHold(input: $in) { id status expiresAt } }`

func run(endpoint string, evs []*benchEvent, clients int, d time.Duration) result {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	var (
		mu        sync.Mutex
		lat       []time.Duration
		ok        atomic.Int64
		conflicts atomic.Int64
		errs      atomic.Int64
		wg        sync.WaitGroup
	)
	before := meter.snap(context.Background())
	deadline := time.Now().Add(d)
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			var local []time.Duration
			for time.Now().Before(deadline) {
				ev := evs[rng.IntN(len(evs))]
				tok := tokens[tokenNext.Add(1)%uint64(len(tokens))]
				body, _ := json.Marshal(map[string]any{"query": mutation, "variables": map[string]any{"in": ev.next(rng)}})
				req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+tok)
				t0 := time.Now()
				res, err := hc.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				local = append(local, time.Since(t0))
				switch {
				case bytes.Contains(b, []byte(`"SEAT_UNAVAILABLE"`)):
					conflicts.Add(1)
				case bytes.Contains(b, []byte(`"errors"`)):
					if errs.Add(1) < 3 {
						log.Printf("error: %s", b)
					}
				default:
					ok.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	after := meter.snap(context.Background())
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	return result{rate: float64(ok.Load()) / el.Seconds(), p50: pct(0.50), p99: pct(0.99),
		conflicts: conflicts.Load(), errors: errs.Load(), cpu: perHold(before, after, float64(ok.Load()))}
}

// pgbenchScript is one transaction of the bare hold: the conditional UPDATE
// of one random inventory row of the hot event (expiring at once, so the row
// is holdable again next time) and the outbox INSERT.
func pgbenchScript(ctx context.Context, pool *pgxpool.Pool, eventID string) string {
	var lo, hi int64
	check(pool.QueryRow(ctx, `SELECT min(id), max(id) FROM inventory WHERE event_id = $1`, eventID).Scan(&lo, &hi))
	return fmt.Sprintf(`\set id random(%d, %d)
BEGIN;
UPDATE inventory SET status = 'HELD', hold_id = gen_random_uuid(), owner = 'pgbench', expires_at = now(),
  version = nextval('inventory_version_seq'), updated_at = now()
WHERE event_id = '%s' AND id = :id AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()));
INSERT INTO outbox (event_id, topic, payload) VALUES ('%s', 'inventory', '{"kind":"hold","seats":[]}');
END;
`, lo, hi, eventID, eventID)
}

// pgbenchHoldScript is one createHold of one explicit seat of the hot event
// through hold_create, as the app sends it. Each client walks its own slice
// of the seats in order (n starts at 0: runPgbench passes -D n=0), so holds
// never collide (a refusal would abort the client).
func pgbenchHoldScript(ctx context.Context, pool *pgxpool.Pool, eventID string, clients int) string {
	var lo, hi int64
	check(pool.QueryRow(ctx, `SELECT min(id), max(id) FROM inventory WHERE event_id = $1 AND seat_id IS NOT NULL`, eventID).Scan(&lo, &hi))
	per := (hi - lo + 1) / int64(clients)
	return fmt.Sprintf(`\set n :n + 1
\set id %[1]d + :client_id * %[3]d + (:n %% %[3]d)
\set u random(1, 1000000000)
SELECT o_outcome FROM hold_create('pgbench-' || :u, md5(random()::text), '\x00', gen_random_uuid(), '%[2]s',
  ARRAY(SELECT seat_id FROM inventory WHERE event_id = '%[2]s' AND id = :id), 0, NULL, false, 3, '{}', '{}', false, NULL);
`, lo, eventID, per)
}

var tpsRe = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

func runPgbench(u *url.URL, script string, clients int) float64 {
	host := u.Query().Get("host")
	user := u.Query().Get("user")
	args := []string{"-n", "-M", "prepared", "-D", "n=0", "-f", script, "-c", strconv.Itoa(clients), "-j", "2",
		"-T", strconv.Itoa(int(duration.Seconds())), "-h", host, "-U", user, strings.TrimPrefix(u.Path, "/")}
	out, err := exec.Command(*pgbench, args...).CombinedOutput()
	m := tpsRe.FindSubmatch(out)
	if err != nil || m == nil {
		log.Printf("pgbench failed: %v\n%s", err, out)
		return 0
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	return tps
}
