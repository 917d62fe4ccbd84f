package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/paysim"
)

// cmdPaysim runs the sandbox payment provider: its HTTP API on PAYSIM_ADDR
// and its webhook delivery worker, with state in the paysim schema of
// PAYSIM_DATABASE_URL. It stops gracefully when ctx ends.
func cmdPaysim(ctx context.Context, getenv func(string) string, log *slog.Logger) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	pcfg, err := pgxpool.ParseConfig(cfg.PaysimDatabaseURL)
	if err != nil {
		return fmt.Errorf("PAYSIM_DATABASE_URL: %w", err)
	}
	if !strings.Contains(cfg.PaysimDatabaseURL, "pool_max_conns") {
		// pgx's default (4 here: max(4, CPUs)) is less than the delivery
		// worker's payments in flight, each recording its attempts: the
		// API's payment creates waited seconds behind them in a sale.
		pcfg.MaxConns = 16
	}
	if _, set := pcfg.ConnConfig.RuntimeParams["synchronous_commit"]; !set {
		// The sandbox provider's commits do not wait for the WAL to reach
		// the disk: a crash of the database server (not a clean stop)
		// could lose its last ones, the sandbox's records, never the
		// product's. Its commits, about ten per payment, otherwise wait
		// for WAL flushes beside the API's on the shared development
		// server: in the 20,000-buyer sale a third of the active backends
		// waited on WALWrite (bench/RESULTS.md 2026-12-03).
		// PAYSIM_DATABASE_URL may set it otherwise.
		pcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("PAYSIM_DATABASE_URL: %w", err)
	}
	defer pool.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = pool.Ping(pingCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("paysim: postgres: %w", err)
	}
	if err := paysim.Migrate(ctx, pool); err != nil {
		return err
	}
	sim := paysim.New(pool, paysim.Options{
		WebhookSecret: cfg.PaymentsSecret,
		PublicBaseURL: cfg.PublicBaseURL,
		Log:           log,
	})
	srv := &http.Server{
		Addr:              cfg.PaysimAddr,
		Handler:           sim.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = sim.Run(workCtx)
	}()
	defer func() {
		stopWork()
		wg.Wait()
	}()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("paysim listening", "addr", cfg.PaysimAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("paysim shutting down")
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		// e.g. a create_timeout request still hanging: cut it.
		_ = srv.Close()
	}
	return nil
}
