// Package app wires the product together: configuration, connections,
// domain services, the GraphQL/REST handler and the background workers.
// server.go (package main) parses the command line and calls into it; tests
// build the same App against their own database.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/graph"
	"github.com/ticketing/ticketing/resolvers"
	"github.com/ticketing/ticketing/store"
)

// App holds every long-lived dependency of one process.
type App struct {
	Cfg   config.Config
	Log   *slog.Logger
	Pool  *pgxpool.Pool
	Store *store.Store
	Redis *redis.Client
	// Now is the application clock (the database clock still decides expiry).
	Now func() time.Time

	Resolver *resolvers.Resolver
}

// New connects to Postgres and Redis, applies the migrations and builds the
// services. Close releases what it opened.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := store.Migrate(ctx, pool, log); err != nil {
		pool.Close()
		return nil, err
	}
	ropt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	a := &App{
		Cfg:   cfg,
		Log:   log,
		Pool:  pool,
		Store: store.New(pool),
		Redis: redis.NewClient(ropt),
		Now:   time.Now,
	}
	a.Resolver = &resolvers.Resolver{}
	return a, nil
}

// Close releases connections.
func (a *App) Close() {
	if a.Redis != nil {
		_ = a.Redis.Close()
	}
	a.Pool.Close()
}

// Handler returns the HTTP handler of `ticketing serve`.
func (a *App) Handler() http.Handler {
	srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: a.Resolver}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})

	mux := http.NewServeMux()
	mux.Handle("/graphql", srv)
	mux.Handle("GET /playground", playground.Handler("Ticketing", "/graphql"))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	return mux
}
