package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/store"
)

// connectTimeout bounds a new Postgres connection when the URL does not say
// (connect_timeout): an unreachable server answers SERVICE_UNAVAILABLE in
// seconds, never hangs a request.
const connectTimeout = 2 * time.Second

// poolConfig parses a Postgres URL of the setting name with the service's
// defaults: maxConns unless the URL sets pool_max_conns, connectTimeout
// unless it sets connect_timeout.
func poolConfig(name, url string, maxConns int32) (*pgxpool.Config, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgxpool's default (max(4, CPUs)) is far too small for a server
		// with workers, subscriptions and river; the URL can override.
		pcfg.MaxConns = maxConns
	}
	if !strings.Contains(url, "connect_timeout") {
		pcfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	return pcfg, nil
}

// initReads opens the replica pool (DATABASE_READ_URL; a replica that is
// down at start is only logged: it is probed like the primary), builds
// a.Reads and starts the health probes of both servers. /readyz reports
// the replica (not critical) and the mode (store.Reads.Mode).
func (a *App) initReads(ctx context.Context) error {
	var replica *store.Store
	var rh *store.Health
	if u := a.Cfg.DatabaseReadURL; u != "" {
		rcfg, err := poolConfig("DATABASE_READ_URL", u, 32)
		if err != nil {
			return err
		}
		if a.replicaPool, err = pgxpool.NewWithConfig(ctx, rcfg); err != nil {
			return fmt.Errorf("postgres replica: %w", err)
		}
		rh = store.NewHealth(a.replicaPool)
		if err := rh.Probe(ctx, connectTimeout); err != nil {
			a.Log.Warn("postgres replica is down at start; reads use the primary", "err", err)
		}
		replica = store.New(a.replicaPool).WithHealth(rh)
	}
	a.Reads = store.NewReads(a.Store, a.PrimaryHealth, replica, rh)
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if rh != nil {
			go rh.Run(hctx)
		}
		a.PrimaryHealth.Run(hctx)
	}()
	a.stopHealth = func() { cancel(); <-done }
	a.replicaHealth = rh
	return nil
}

// addReadChecks registers the database checks of /readyz (after
// initPlatform's defaults).
func (a *App) addReadChecks() {
	rh := a.replicaHealth
	// /readyz probes the primary through its health, so a ready answer
	// also ends a fail-fast period at once.
	a.AddReadinessCheck("postgres", func(ctx context.Context) error {
		return a.PrimaryHealth.Probe(ctx, checkTimeout)
	}, true)
	if rh != nil {
		a.AddReadinessCheck("postgres_replica", func(ctx context.Context) error {
			return rh.Probe(ctx, checkTimeout)
		}, false)
	}
}
