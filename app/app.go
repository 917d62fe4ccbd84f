// Package app wires the product together: configuration, connections,
// domain services, the GraphQL/REST handler and the background workers.
// server.go (package main) parses the command line and calls into it; tests
// build the same App against their own database.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/redisstore"
	"github.com/ticketing/ticketing/resolvers"
	"github.com/ticketing/ticketing/rest"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/seatmap"
	"github.com/ticketing/ticketing/store"
	"github.com/ticketing/ticketing/web"
)

// App holds every long-lived dependency of one process.
type App struct {
	Cfg   config.Config
	Log   *slog.Logger
	Pool  *pgxpool.Pool
	Store *store.Store
	// PrimaryHealth tracks the primary (DATABASE_URL): while it is down,
	// Store (and the orders' store) fail at once with SERVICE_UNAVAILABLE.
	PrimaryHealth *store.Health
	// Reads routes browsing reads to the replica (DATABASE_READ_URL) or the
	// primary (store.Reads); Mode says which.
	Reads         *store.Reads
	replicaPool   *pgxpool.Pool
	replicaHealth *store.Health
	stopHealth    func()
	// Redis is one server (REDIS_URL) or a Redis Cluster
	// (REDIS_CLUSTER_ADDRS); see NewRedis.
	Redis redis.UniversalClient
	// Now is the application clock (the database clock still decides expiry).
	Now func() time.Time

	// Catalog is the catalog service (venues, artists, events, inventory).
	Catalog *catalog.Service
	// Holds is the seat-hold service.
	Holds *holds.Service
	// Queue is the virtual waiting room (joins, admissions, permits).
	Queue *queue.Service
	// Orders is the orders engine (orders, payments, webhooks, refunds).
	Orders *orders.Service

	// SeatMap is the live seat map (outbox sink, snapshots, subscriptions).
	SeatMap *seatmap.Service
	// Projections receive the event ids the search indexer claimed from
	// search_pending (the relay itself only records them there); set them
	// before RunWorkers.
	Projections []outbox.Sink
	// Search is the search projection (searchEvents, outbox projector); nil
	// when its engine could not be opened.
	Search     *search.Service
	searchStop func()
	stopNotify func()
	outboxKick func()
	ordersPool *pgxpool.Pool
	notifyPool *pgxpool.Pool // provider notifications (initOrders)
	// checkout is what the adaptive admission controller reads besides the
	// hold path (pressure.go).
	checkout checkoutGauges

	Resolver *resolvers.Resolver

	// Auth verifies bearer tokens (HTTP middleware and WebSocket init).
	Auth *auth.Verifier
	// Metrics is the process's Prometheus registry, served on /metrics;
	// register collectors named ticketing_* on it.
	Metrics *prometheus.Registry
	// BodyReadTimeout bounds reading a request body (default 30 s); set it
	// before Handler.
	BodyReadTimeout time.Duration
	platform        platform
}

// New connects to Postgres and Redis, applies the migrations and builds the
// services. Close releases what it opened.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	pool, err := openMigrated(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	rdb, err := NewRedis(cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	primary := store.NewHealth(pool)
	a := &App{
		Cfg:           cfg,
		Log:           log,
		Pool:          pool,
		PrimaryHealth: primary,
		Store:         store.New(pool).WithHealth(primary),
		Redis:         rdb,
		Now:           time.Now,
	}
	if err := a.initReads(ctx); err != nil {
		a.Close()
		return nil, err
	}
	// Relays of every instance are woken after each commit that wrote
	// outbox rows (the NOTIFY is kept out of the business transactions).
	notifyCtx, stopNotify := context.WithCancel(context.WithoutCancel(ctx))
	a.stopNotify = stopNotify
	notifier := outbox.NewNotifier(pool, log)
	a.Store.SetOutboxHook(notifier.Kick)
	a.outboxKick = notifier.Kick
	go notifier.Run(notifyCtx)
	if err := a.initPlatform(); err != nil {
		a.Close()
		return nil, err
	}
	a.addReadChecks()
	a.Catalog = catalog.New(a.Store, a.Now)
	a.Catalog.UseReads(a.Reads)
	if err := a.initQueue(); err != nil {
		a.Close()
		return nil, err
	}
	holdCfg := holds.Config{Leases: redisstore.NewLeases(a.Redis, ""), Admission: a.Queue, Log: log,
		RedisTimeout: cfg.HoldsRedisTimeout, // HOLDS_REDIS_TIMEOUT (0: holds' default, 100ms)
		// The hold lane takes three quarters of the main pool, so catalog
		// reads, seat map snapshots and the sweeper always find a connection.
		Concurrency: max(4, int(pool.Config().MaxConns)*3/4)}
	if cfg.AbuseLimits && cfg.HoldLimitPerAddress > 0 { // HOLD_LIMIT_PER_ADDRESS
		holdCfg.AddressCap = redisstore.NewHoldCaps(a.Redis, cfg.SeatMapRedisPrefix)
		holdCfg.AddressLimit = cfg.HoldLimitPerAddress
		holdCfg.ClientAddr = queue.ClientAddr
	}
	a.Holds = holds.New(a.Store, holdCfg)
	a.Metrics.MustRegister(a.Holds.Collectors()...)
	a.AddReadinessCheck("holds_redis_leases", func(context.Context) error {
		if a.Holds.Degraded() {
			return errors.New("degraded: holds run on Postgres alone with bounded concurrency")
		}
		return nil
	}, false)
	a.initSeatMap(cfg.SeatMapRedisPrefix)
	a.initSearch()
	if a.Search != nil {
		a.Search.Catalog = a.Catalog.EventsByIDs // the events of a page of hits
	}
	if err := a.initOrders(); err != nil {
		a.Close()
		return nil, err
	}
	a.Resolver = &resolvers.Resolver{Catalog: a.Catalog, Holds: a.Holds, Queue: a.Queue, SeatMaps: a.SeatMap, Search: a.Search, Orders: a.Orders}
	return a, nil
}

// redisPoolSize is the client's connections per Redis node. go-redis's
// default, 10 per CPU, is 20 on this machine: in the 20,000-buyer sale the
// queue's reads, the leases and the seat map's stream reads shared them,
// and lease calls missed their 100 ms deadline (938 holds fell back to
// Postgres alone) while Redis itself used a tenth of a core.
const redisPoolSize = 128

// NewRedis is the Redis client of the configuration: a cluster client over
// REDIS_CLUSTER_ADDRS when set (every key of one event carries the hash tag
// {eventID}, so its leases, queue and seat-map stream and channel share a
// slot), else one server from REDIS_URL. Context deadlines bound socket
// I/O, so short per-call timeouts (hold leases: 100ms) hold even when
// Redis hangs.
func NewRedis(cfg config.Config) (redis.UniversalClient, error) {
	if len(cfg.RedisClusterAddrs) > 0 {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 cfg.RedisClusterAddrs,
			ContextTimeoutEnabled: true,
			// While a slot migrates, a script over several of the event's
			// keys answers ASK, then TRYAGAIN until the last of them has
			// moved: go-redis's default of 3 redirects gave up on some of
			// them (app TestRedisClusterSurvivesSlotMigrationAndFailover).
			// Each retry waits 8-512 ms, so 10 of them stay inside the
			// callers' deadlines.
			MaxRedirects: 10,
			// After a primary fails over, a pipeline to the dead node fails
			// to dial without reloading the slot map (only MOVED does), so
			// the client used the dead node until its state aged out: 60 s
			// by default. Re-reading the slots (one CLUSTER SLOTS) each
			// second when in use bounds that to the failover's own time.
			ClusterStateReloadInterval: time.Second,
			PoolSize:                   redisPoolSize, // per node
		}), nil
	}
	ropt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	ropt.ContextTimeoutEnabled = true
	if ropt.PoolSize == 0 { // not set in REDIS_URL (pool_size=)
		ropt.PoolSize = redisPoolSize
	}
	return redis.NewClient(ropt), nil
}

// RunWorkers runs the background workers until ctx ends: the hold sweeper
// (every 5 s; correctness never depends on it).
func (a *App) RunWorkers(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.Holds.RunSweeper(ctx, 5*time.Second) }()
	wg.Add(1)
	go func() { defer wg.Done(); a.runRelay(ctx) }()
	wg.Add(1) // the queue's admission controller (safe on every instance)
	go func() { defer wg.Done(); _ = a.Queue.Run(ctx) }()
	wg.Add(1) // payment compensations and reconciliation (river)
	go func() { defer wg.Done(); a.runOrders(ctx) }()
	wg.Wait()
}

// Close releases connections.
func (a *App) Close() {
	if a.stopHealth != nil {
		a.stopHealth()
	}
	if a.replicaPool != nil {
		a.replicaPool.Close()
	}
	if a.stopNotify != nil {
		a.stopNotify()
	}
	if a.searchStop != nil {
		a.searchStop()
	}
	if a.SeatMap != nil {
		_ = a.SeatMap.Close()
	}
	if a.Queue != nil {
		a.Queue.Close()
	}
	if a.Redis != nil {
		_ = a.Redis.Close()
	}
	if a.ordersPool != nil {
		a.ordersPool.Close()
	}
	if a.notifyPool != nil {
		a.notifyPool.Close()
	}
	a.Pool.Close()
}

// Handler returns the HTTP handler of `ticketing serve`.
func (a *App) Handler() http.Handler {
	_ = a.initPlatform() // no-op after New; covers Apps built by hand in tests
	mux := http.NewServeMux()
	mux.Handle("/graphql", resolvers.LoaderMiddleware(a.Catalog)(a.graphqlHandler()))
	mux.Handle("GET /playground", web.Playground()) // GraphiQL, embedded (web/playground.go)
	mux.Handle("GET /playground/", web.Playground())
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	a.mountSeatMap(mux)
	rest.New(rest.Services{Catalog: a.Catalog, Holds: a.Holds, Orders: a.Orders, Queue: a.Queue,
		Search: a.Search, SeatMap: a.SeatMap, Log: a.Log}).Mount(mux) // the REST interface, /api/... (rest/)
	a.mountOrders(mux)
	mux.Handle("GET /metrics", a.metricsHandler())
	a.mountDevSignIn(mux)          // GET /api/dev/config, POST /api/dev/token (app/devsignin.go)
	mux.Handle("/", web.Handler()) // the web app; every more specific route above wins
	return a.withClientAddr(a.wrap(mux))
}
