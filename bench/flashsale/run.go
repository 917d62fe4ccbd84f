package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// Run is one flash sale: its processes, clients and records.
type Run struct {
	Cfg          Config
	C            *Client
	S            *Stats
	H            *History
	Map          *LiveMap
	EventID      string
	HoldDuration time.Duration
	Capacity     int

	id, dir, bin, root         string
	dbName, dbURL, redisURL    string
	paysimURL                  string
	apis                       []*Proc
	worker, paysim, redis      *Proc
	pg                         *PrivatePostgres
	pool                       *pgxpool.Pool
	stopDoor                   func()
	lb                         *Proc // HAProxy (-lb haproxy)
	extra                      []*Proc
	joined, admitted, finished atomic.Int64
	inCheckout, ordersCreated  atomic.Int64
	streams                    chan struct{} // a slot per subscription open at once (-streams)
	debugURL                   string        // api0's pprof listener
	profile                    string        // the CPU profile taken during the sale

	notesMu sync.Mutex
	notes   []string

	pagesMu   sync.Mutex
	lastPages []metricsPage // the APIs' last /metrics scrape (sample)
}

// Note records a timestamped line for the report (faults, chaos actions).
func (r *Run) Note(format string, args ...any) {
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf("t+%5.1fs ", time.Since(r.S.start).Seconds())+fmt.Sprintf(format, args...))
}

// Result is what a run proved.
type Result struct {
	Check          CheckResult
	StrictIllegal  int
	Anomalies      []audit.Anomaly
	AuditExit      int
	Settled        bool
	MapMismatches  int
	Outcomes       map[string]int
	Report, HTML   string
	ClientAnomalie int
	Figures        saleFigures
	// Faulted: the run injected faults (paysim's fault phases or a chaos
	// scenario), which may leave a paid order unconfirmed.
	Faulted bool
}

// Clean is true when the audit, the CLI audit and the checker all agree
// that nothing illegal happened.
func (r Result) Clean() bool {
	return len(r.Check.Illegal) == 0 && len(r.Check.Unknown) == 0 && len(r.Anomalies) == 0 && r.AuditExit == 0 && r.ClientAnomalie == 0 &&
		(r.Faulted || r.Figures.PaidNotConfirmed == 0)
}

// Execute runs a whole sale and writes the report.
func Execute(ctx context.Context, cfg Config, stdout, stderr io.Writer) (Result, error) {
	sc, err := scenarioFor(cfg.Scenario)
	if err != nil {
		return Result{}, err
	}
	sc.setup(&cfg)
	r := &Run{Cfg: cfg, S: NewStats(), H: &History{}, id: uuid.NewString()[:8], streams: make(chan struct{}, max(0, cfg.Streams))}
	defer r.teardown()
	if err := r.start(ctx, stderr); err != nil {
		return Result{}, err
	}
	fmt.Fprintf(stderr, "event %s: %d seats + %d GA, %d buyers, scenario %q; logs in %s\n", r.EventID, cfg.Seats, cfg.GA, cfg.Buyers, cfg.Scenario, r.dir)
	r.S = NewStats() // the sale's clock starts now
	saleCtx, stopSale := context.WithTimeout(ctx, cfg.MaxDuration)
	defer stopSale()
	bg, stopBG := context.WithCancel(ctx)
	var bgwg sync.WaitGroup
	bgwg.Add(3)
	go func() { defer bgwg.Done(); r.Map.Follow(bg, r.C, r.EventID) }()
	go func() { defer bgwg.Done(); r.sample(bg) }()
	go func() {
		defer bgwg.Done()
		if cfg.Faults {
			r.faultPhases(saleCtx)
		}
	}()
	if cfg.Profile > 0 {
		bgwg.Add(1)
		go func() { defer bgwg.Done(); r.takeProfile(saleCtx) }()
	}
	chaosDone := make(chan struct{})
	go func() { defer close(chaosDone); sc.run(saleCtx, r) }()

	stopBar := make(chan struct{})
	barDone := make(chan struct{})
	if cfg.Progress {
		fi, _ := os.Stderr.Stat()
		tty := fi != nil && fi.Mode()&os.ModeCharDevice != 0
		go func() {
			defer close(barDone)
			progress(stderr, tty, cfg.Buyers, func() (int, string) {
				seats, ga := r.Map.Counts()
				return int(r.finished.Load()), fmt.Sprintf("joined %d admitted %d in-checkout %d orders %d confirmed %d | map: %d seats %d GA left",
					r.joined.Load(), r.admitted.Load(), r.inCheckout.Load(), r.ordersCreated.Load(), r.S.Get("outcome confirmed"), seats, ga)
			}, stopBar)
		}()
	} else {
		close(barDone)
	}
	var wg sync.WaitGroup
	for i := range cfg.Buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("fs-%s-%d", r.id, i)
			tok, _ := auth.Mint(cfg.Secret, "ticketing-dev", "ticketing", user, nil, 2*time.Hour)
			b := &buyer{r: r, id: i, user: user, token: tok, rng: rand.New(rand.NewPCG(uint64(i), 42)), avoid: map[string]bool{}}
			out := b.run(saleCtx)
			r.S.Count("outcome "+out, 1)
			r.finished.Add(1)
		}()
	}
	wg.Wait()
	saleTook := time.Since(r.S.start)
	stopSale()
	<-chaosDone
	close(stopBar)
	<-barDone
	r.Note("sale over after %s; settling", saleTook.Round(time.Second))
	res := r.settle(ctx, stderr)
	stopBG()
	bgwg.Wait()
	res.Outcomes = r.S.Counters()
	for k, v := range res.Outcomes {
		if strings.HasPrefix(k, "ANOMALY") {
			res.ClientAnomalie += v
		}
	}
	res.Faulted = cfg.Faults || cfg.Scenario != ""
	if res.Figures, err = r.saleFigures(context.WithoutCancel(ctx)); err != nil { // an interrupted run still reports
		r.Note("sale figures: %v", err)
	}
	err = r.report(&res, saleTook, stdout)
	return res, err
}

// start creates the database, starts the processes and the hot event.
func (r *Run) start(ctx context.Context, log io.Writer) error {
	cfg := r.Cfg
	var err error
	if r.root, err = repoRoot(); err != nil {
		return err
	}
	if r.dir, err = os.MkdirTemp("", "flashsale-"); err != nil {
		return err
	}
	r.bin = cfg.Bin
	if r.bin == "" {
		fmt.Fprintln(log, "building ticketing ...")
		if r.bin, err = buildBinary(r.root, r.dir); err != nil {
			return err
		}
	}
	// Redis: always a private one (never the shared server).
	rport := freePort()
	r.redis = redisServer(r.dir, rport)
	if err := r.redis.Start(); err != nil {
		return err
	}
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", rport), 10*time.Second); err != nil {
		return err
	}
	r.redisURL = fmt.Sprintf("redis://127.0.0.1:%d/0", rport)
	// Postgres: a fresh database on the given server (or a private cluster).
	base := cfg.DBBase
	if cfg.Scenario == "postgres" {
		r.pg = &PrivatePostgres{Dir: filepath.Join(r.dir, "pg"), Bin: "/usr/lib/postgresql/15/bin", Port: freePort()}
		_ = os.Chmod(r.dir, 0o755) // the postgres user must reach its data directory
		_ = os.MkdirAll(r.pg.Dir, 0o755)
		if err := r.pg.Start(); err != nil {
			return err
		}
		base = r.pg.URL()
	}
	r.dbName = "flashsale_" + strings.ReplaceAll(r.id, "-", "")
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+r.dbName)
	admin.Close(ctx)
	if err != nil {
		return err
	}
	u, _ := url.Parse(base)
	u.Path = "/" + r.dbName
	r.dbURL = u.String()
	q := u.Query()
	q.Set("pool_max_conns", "16")
	u.RawQuery = q.Encode()
	serverDB := u.String()

	pport := freePort()
	r.paysimURL = fmt.Sprintf("http://127.0.0.1:%d", pport)
	var bases []string
	ports := make([]int, cfg.APIs)
	for i := range ports {
		ports[i] = freePort()
		bases = append(bases, fmt.Sprintf("http://127.0.0.1:%d", ports[i]))
	}
	var public, hooks string
	if cfg.LB == "haproxy" {
		// A real load balancer (HAProxy from Debian, scripts/lib.sh
		// haproxy_config) in front of the instances; the buyers go through
		// it, paysim's notifications through its frontend of their own.
		if public, hooks, err = r.startHAProxy(ports); err != nil {
			return err
		}
	} else {
		var stopDoor func()
		if public, stopDoor, err = frontDoor(bases); err != nil {
			return err
		}
		r.stopDoor = stopDoor
	}
	env := func(port int) []string {
		if cfg.PublicPerInstance {
			public, hooks = fmt.Sprintf("http://127.0.0.1:%d", port), ""
		}
		e := []string{
			"DATABASE_URL=" + serverDB, "REDIS_URL=" + r.redisURL, "JWT_HS256_SECRET=" + cfg.Secret,
			"QUEUE_SIGNING_KEY=flashsale-queue-key", "TICKET_SIGNING_KEY=flashsale-ticket-key",
			"PAYMENTS_BASE_URL=" + r.paysimURL, "PAYMENTS_WEBHOOK_SECRET=whsec_flashsale",
			"PUBLIC_BASE_URL=" + public, fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", port),
			fmt.Sprintf("PAYSIM_ADDR=127.0.0.1:%d", pport), "PAYSIM_DATABASE_URL=" + r.dbURL,
			"SEARCH_DIR=" + filepath.Join(r.dir, "search-"+strconv.Itoa(port)),
			"QUEUE_ADMISSION_TTL=" + cfg.AdmissionTTL.String(), "QUEUE_JOIN_RATE_ADDR=0", "QUEUE_JOIN_RATE_USER=0",
			"ABUSE_LIMITS=off", // every buyer is one address
			"PAYMENTS_RECONCILE_AFTER=" + cfg.ReconcileAfter.String(), "PAYMENTS_RECONCILE_INTERVAL=" + (cfg.ReconcileAfter / 2).String(),
		}
		if hooks != "" {
			e = append(e, "PAYMENTS_WEBHOOK_BASE_URL="+hooks)
		}
		// The queue's settings are the server's defaults (the adaptive
		// controller under its default ceilings) unless given.
		if cfg.AdmitRate > 0 {
			e = append(e, "QUEUE_ADMIT_RATE="+strconv.FormatFloat(cfg.AdmitRate, 'f', -1, 64))
		}
		if cfg.Window > 0 {
			e = append(e, "QUEUE_WINDOW="+strconv.Itoa(cfg.Window))
		}
		return e
	}
	r.paysim = &Proc{Name: "paysim", Path: r.bin, Args: []string{"paysim"}, Env: env(ports[0]),
		Log: filepath.Join(r.dir, "paysim.log"), Health: r.paysimURL + "/healthz"}
	if err := r.paysim.Start(); err != nil {
		return err
	}
	for i := 1; i < cfg.Paysims; i++ { // more webhook delivery workers on the same database
		port := freePort()
		p := &Proc{Name: fmt.Sprintf("paysim%d", i), Path: r.bin, Args: []string{"paysim"},
			Env: append(env(ports[0]), fmt.Sprintf("PAYSIM_ADDR=127.0.0.1:%d", port)),
			Log: filepath.Join(r.dir, fmt.Sprintf("paysim%d.log", i)), Health: fmt.Sprintf("http://127.0.0.1:%d/healthz", port)}
		if err := p.Start(); err != nil {
			return err
		}
		r.extra = append(r.extra, p)
	}
	for i, p := range ports {
		args := []string{"serve"}
		if cfg.SplitWorkers {
			args = append(args, "--workers=false")
		}
		e := env(p)
		if i == 0 {
			// Profiles of the first instance during the sale (-profile).
			r.debugURL = fmt.Sprintf("http://127.0.0.1:%d", freePort())
			e = append(e, "DEBUG_ADDR="+strings.TrimPrefix(r.debugURL, "http://"))
		}
		r.apis = append(r.apis, &Proc{Name: fmt.Sprintf("api%d", i), Path: r.bin, Args: args, Env: e,
			Log: filepath.Join(r.dir, fmt.Sprintf("api%d.log", i)), Health: bases[i] + "/healthz"})
		if err := r.apis[i].Start(); err != nil {
			return err
		}
	}
	if cfg.SplitWorkers {
		wp := freePort()
		r.worker = &Proc{Name: "worker", Path: r.bin, Args: []string{"serve"}, Env: env(wp),
			Log: filepath.Join(r.dir, "worker.log"), Health: fmt.Sprintf("http://127.0.0.1:%d/healthz", wp)}
		if err := r.worker.Start(); err != nil {
			return err
		}
	}
	if cfg.LB == "haproxy" {
		if err := waitHealthy(public+"/healthz", 60*time.Second); err != nil {
			return fmt.Errorf("haproxy: %w (see %s)", err, r.lb.Log)
		}
		r.C = NewClient([]string{public}, 30*time.Second)
	} else {
		r.C = NewClient(bases, 30*time.Second)
	}
	_ = r.C.JSON(ctx, http.MethodDelete, r.paysimURL+"/v1/faults", nil)
	if r.pool, err = pgxpool.New(ctx, r.dbURL); err != nil {
		return err
	}
	return r.createEvent(ctx)
}

func (r *Run) teardown() {
	for _, p := range append(append(r.apis, r.worker, r.paysim, r.lb), r.extra...) {
		if p != nil {
			p.Stop()
		}
	}
	if r.pool != nil {
		r.pool.Close()
	}
	if r.stopDoor != nil {
		r.stopDoor()
	}
	if !r.Cfg.Keep && r.dbName != "" {
		base := r.Cfg.DBBase
		if r.pg != nil {
			base = r.pg.URL()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if admin, err := pgx.Connect(ctx, base); err == nil {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+r.dbName+" WITH (FORCE)")
			admin.Close(ctx)
		}
		cancel()
	}
	if r.pg != nil {
		_ = r.pg.Stop("fast")
	}
	if r.redis != nil {
		r.redis.Stop()
	}
	if !r.Cfg.Keep && r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}

// createEvent creates the venue and the hot event through the admin API.
func (r *Run) createEvent(ctx context.Context) error {
	cfg := r.Cfg
	admin, err := auth.Mint(cfg.Secret, "ticketing-dev", "ticketing", "flashsale-admin", []string{"admin"}, 2*time.Hour)
	if err != nil {
		return err
	}
	var sections []map[string]any
	per := cfg.Seats / max(cfg.Sections, 1)
	for s := range cfg.Sections {
		n := per
		if s == cfg.Sections-1 {
			n = cfg.Seats - per*(cfg.Sections-1)
		}
		var rows []map[string]any
		for i := 0; n > 0; i++ {
			k := min(n, 100)
			rows = append(rows, map[string]any{"label": strconv.Itoa(i + 1), "seats": k})
			n -= k
		}
		sections = append(sections, map[string]any{"name": fmt.Sprintf("Grada %d", s+1), "kind": "SEATED", "rows": rows})
	}
	if cfg.GA > 0 {
		sections = append(sections, map[string]any{"name": "Pista", "kind": "GENERAL_ADMISSION", "capacity": cfg.GA})
	}
	var v struct {
		CreateVenue struct {
			ID       string
			Sections []struct {
				ID, Name, Kind string
				Capacity       int
				Seats          []struct {
					ID, Row string
					Number  int
				}
			}
		}
	}
	err = r.C.Do(ctx, admin, `mutation($in: CreateVenueInput!) { createVenue(input: $in) { id sections { id name kind capacity seats { id row number } } } }`,
		map[string]any{"in": map[string]any{"name": "Estadio Flash " + r.id, "address": "Calle 1", "city": "Madrid", "country": "ES",
			"location": map[string]any{"lat": 40.4, "lon": -3.7}, "sections": sections}}, &v)
	if err != nil {
		return fmt.Errorf("createVenue: %w", err)
	}
	var seats []SeatInfo
	var prices []map[string]any
	for _, s := range v.CreateVenue.Sections {
		prices = append(prices, map[string]any{"sectionId": s.ID, "amount": 5000, "currency": "EUR"})
		r.Capacity += s.Capacity
		row, idx := "", -1
		for _, st := range s.Seats {
			if st.Row != row {
				row, idx = st.Row, idx+1
			}
			seats = append(seats, SeatInfo{ID: st.ID, Section: s.ID, Row: st.Row, Num: st.Number, RowIdx: idx})
		}
	}
	now := time.Now()
	var e struct{ CreateEvent struct{ ID string } }
	err = r.C.Do(ctx, admin, `mutation($in: CreateEventInput!) { createEvent(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": "Flash sale " + r.id, "category": "music", "venueId": v.CreateVenue.ID,
			"startsAt": now.Add(30 * 24 * time.Hour).Format(time.RFC3339), "saleStartsAt": now.Add(3 * time.Second).Format(time.RFC3339Nano),
			"prices": prices, "maxTicketsPerUser": 4, "holdDurationSeconds": cfg.HoldSeconds, "queueRequired": true}}, &e)
	if err != nil {
		return fmt.Errorf("createEvent: %w", err)
	}
	r.EventID = e.CreateEvent.ID
	r.HoldDuration = time.Duration(cfg.HoldSeconds) * time.Second
	r.Map = NewLiveMap(seats)
	return r.Map.Snapshot(ctx, r.C, r.EventID)
}

var faultPhases = []struct {
	name string
	set  map[string]any
}{
	{"no faults", nil},
	{"duplicate_webhooks=3", map[string]any{"duplicate_webhooks": 3}},
	{"webhook_delay_ms=4000 + reorder_webhooks", map[string]any{"webhook_delay_ms": 4000, "reorder_webhooks": true}},
	{"drop_webhooks", map[string]any{"drop_webhooks": true}},
	{"create_timeout", map[string]any{"create_timeout": true}},
}

// faultPhases cycles paysim's global faults until ctx ends, then resets.
func (r *Run) faultPhases(ctx context.Context) {
	defer func() { _ = r.C.JSON(context.Background(), http.MethodDelete, r.paysimURL+"/v1/faults", nil) }()
	for i := 0; ctx.Err() == nil; i++ {
		p := faultPhases[i%len(faultPhases)]
		_ = r.C.JSON(ctx, http.MethodDelete, r.paysimURL+"/v1/faults", nil)
		if p.set != nil {
			if err := r.C.JSON(ctx, http.MethodPost, r.paysimURL+"/v1/faults", p.set); err != nil {
				r.Note("paysim faults: %v", err)
			}
		}
		r.Note("paysim: %s", p.name)
		d := r.Cfg.FaultPhase
		if p.name == "create_timeout" {
			d /= 3 // each create then costs the API's provider timeout
		}
		sleep(ctx, d)
	}
}

// sample scrapes the servers' signals and the database's outbox lag every
// second onto the timeline.
func (r *Run) sample(ctx context.Context) {
	hc := &http.Client{Timeout: 2 * time.Second}
	st := store.New(r.pool)
	metrics := []string{"ticketing_projection_lag_seconds", "ticketing_queue_length", "ticketing_queue_active_admitted", "ticketing_queue_admit_rate",
		"ticketing_pending_compensations", "ticketing_payments_without_order", "ticketing_redis_lease_fallback",
		"ticketing_reconciliation_actions_total", "ticketing_hold_conflicts_total", "ticketing_queue_completions_per_second",
		`ticketing_queue_pressure_seconds{signal="hold"}`, `ticketing_queue_pressure_seconds{signal="confirm"}`,
		`ticketing_queue_pressure_seconds{signal="provider"}`, `ticketing_queue_pressure_seconds{signal="pool_wait"}`}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		procs := r.apis
		if r.worker != nil {
			procs = append(append([]*Proc(nil), r.apis...), r.worker)
		}
		pages := make([]metricsPage, 0, len(procs))
		for _, p := range procs {
			if m, ok := scrapeAll(ctx, hc, strings.TrimSuffix(p.Health, "/healthz")+"/metrics"); ok {
				pages = append(pages, m)
			}
		}
		if len(pages) > 0 {
			r.pagesMu.Lock()
			r.lastPages = pages
			r.pagesMu.Unlock()
		}
		for _, pg := range pages {
			if why := pg.label("ticketing_queue_admit_rate_reason", "reason"); why != "" {
				r.S.Note("admission reason", why)
				break
			}
		}
		for _, m := range metrics {
			best, seen := 0.0, false
			for _, pg := range pages {
				if v, ok := pg.value(m); ok {
					if strings.HasSuffix(m, "_total") { // counters add up over instances; gauges are shared views
						best, seen = best+v, true
					} else {
						best, seen = max(best, v), true
					}
				}
			}
			if seen {
				r.S.Gauge(m, best)
			}
		}
		if lag, err := st.OutboxLag(ctx); err == nil {
			r.S.Gauge("outbox lag (database)", lag.Seconds())
		}
		r.S.Gauge("buyers in checkout", float64(r.inCheckout.Load()))
		seats, ga := r.Map.Counts()
		r.S.Gauge("map: seats available", float64(seats))
		r.S.Gauge("map: GA available", float64(ga))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// settle waits for the audit to come out clean (compensations and
// reconciliation finishing), then runs the CLI audit, compares the live map
// with the inventory and checks the history.
func (r *Run) settle(ctx context.Context, log io.Writer) Result {
	var res Result
	_ = r.C.JSON(ctx, http.MethodDelete, r.paysimURL+"/v1/faults", nil)
	st := store.New(r.pool)
	prov := payments.NewSandbox(r.paysimURL, "whsec_flashsale", nil)
	start := time.Now()
	deadline := start.Add(r.Cfg.Settle)
	for {
		rep, err := audit.Run(ctx, st, r.EventID, audit.Options{Provider: prov, ProviderTimeout: 10 * time.Second})
		open := 0
		for _, p := range rep.Payments {
			if p.Status == "UNKNOWN" || p.Status == "REFUND_PENDING" || (p.Status == "SUCCEEDED" && p.OrderStatus != "CONFIRMED") {
				open++
			}
		}
		if err == nil && len(rep.Anomalies) == 0 && open == 0 {
			res.Settled = true
			r.Note("audit clean after %s of settling (%d payments)", time.Since(start).Round(time.Second), len(rep.Payments))
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			res.Anomalies = rep.Anomalies
			r.Note("audit NOT clean after %s: %d anomalies, %d payments still open (err %v)", r.Cfg.Settle, len(rep.Anomalies), open, err)
			break
		}
		fmt.Fprintf(log, "\rsettling: %d anomalies, %d payments open ...\033[K", len(rep.Anomalies), open)
		sleep(ctx, 3*time.Second)
	}
	fmt.Fprintln(log)
	// The command line audit, as an operator would run it.
	cmd := exec.CommandContext(ctx, r.bin, "audit", "--event", r.EventID)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+r.dbURL, "PAYMENTS_BASE_URL="+r.paysimURL, "PAYMENTS_WEBHOOK_SECRET=whsec_flashsale",
		"REDIS_URL="+r.redisURL, "JWT_HS256_SECRET="+r.Cfg.Secret)
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.AuditExit = ee.ExitCode()
	case err != nil:
		res.AuditExit = -1
	}
	if i := strings.LastIndex(string(out), "\nanomalies ("); i >= 0 {
		r.Note("ticketing audit --event %s: exit %d;%s", r.EventID, res.AuditExit, strings.ReplaceAll(string(out[i:]), "\n", "\n    "))
	}
	_ = os.WriteFile(filepath.Join(r.outDir(), "audit-"+r.id+".txt"), out, 0o644)
	// The live map must converge to the inventory once the relay caught up.
	for i := 0; i < 30; i++ {
		units, err := st.AuditUnits(ctx, r.EventID)
		if err != nil {
			break
		}
		view := r.Map.Status()
		res.MapMismatches = 0
		for _, u := range units {
			if u.SeatID != nil && view[*u.SeatID] != u.Status[0] {
				res.MapMismatches++
			}
		}
		if res.MapMismatches == 0 {
			break
		}
		sleep(ctx, time.Second)
	}
	ops := r.H.Ops()
	_ = WriteJSON(filepath.Join(r.outDir(), "history-"+r.id+".json"), ops)
	res.Check = Checker{Slack: time.Millisecond}.Check(ops, time.Minute, r.outDir())
	res.StrictIllegal = len(Checker{Slack: time.Millisecond, StrictConflicts: true}.Check(ops, 10*time.Second, "").Illegal)
	return res
}

func (r *Run) outDir() string {
	d := r.Cfg.Out
	if !filepath.IsAbs(d) {
		d = filepath.Join(r.root, d)
	}
	_ = os.MkdirAll(d, 0o755)
	return d
}
