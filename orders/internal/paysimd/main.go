// Command paysimd runs the sandbox payment provider (package paysim) as its
// own process for the orders tests, exactly like `ticketing paysim` but
// without building the whole product: PAYSIM_ADDR, PAYSIM_DATABASE_URL,
// PAYMENTS_WEBHOOK_SECRET, PUBLIC_BASE_URL.
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/paysim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pool, err := pgxpool.New(ctx, os.Getenv("PAYSIM_DATABASE_URL"))
	if err != nil {
		log.Error("paysimd", "err", err)
		os.Exit(1)
	}
	defer pool.Close()
	if err := paysim.Migrate(ctx, pool); err != nil {
		log.Error("paysimd: migrate", "err", err)
		os.Exit(1)
	}
	sim := paysim.New(pool, paysim.Options{
		WebhookSecret: os.Getenv("PAYMENTS_WEBHOOK_SECRET"),
		PublicBaseURL: os.Getenv("PUBLIC_BASE_URL"),
		Log:           log,
		PollInterval:  50 * time.Millisecond,
		BackoffBase:   200 * time.Millisecond,
		BackoffMax:    2 * time.Second,
		// A hung create_timeout request gives up soon in tests.
		CreateTimeoutMax: 5 * time.Second,
	})
	srv := &http.Server{Addr: os.Getenv("PAYSIM_ADDR"), Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = sim.Run(ctx) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Error("paysimd", "err", err)
		os.Exit(1)
	}
}
