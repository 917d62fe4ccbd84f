package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// cmdAudit explains every seat and payment of an event and lists the
// anomalies; it exits 1 if there is any. The provider (PAYMENTS_PROVIDER)
// is asked for each payment's state unless --provider=false.
func cmdAudit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	event := fs.String("event", "", "event id (required)")
	grace := fs.Duration("refund-grace", 15*time.Minute, "a refund pending longer than this is an anomaly")
	ask := fs.Bool("provider", true, "ask the payment provider for each payment's state")
	if err := fs.Parse(args); err != nil || *event == "" {
		if *event == "" {
			fmt.Fprintln(stderr, "audit: --event ID is required")
		}
		return exitCode(2)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer pool.Close()
	opt := audit.Options{RefundGrace: *grace}
	if *ask {
		p, err := payments.NewProvider(cfg.PaymentsProvider, cfg.PaymentsBaseURL, cfg.PaymentsSecret, cfg.StripeSecretKey)
		if err != nil {
			log.Warn("audit without the provider", "err", err)
		} else {
			opt.Provider = p
		}
	}
	r, err := audit.Run(ctx, store.New(pool), *event, opt)
	if errors.Is(err, audit.ErrNoEvent) {
		fmt.Fprintf(stderr, "audit: no event %s\n", *event)
		return exitCode(2)
	}
	if err != nil {
		return err
	}
	r.Write(stdout)
	if len(r.Anomalies) > 0 {
		return exitCode(1)
	}
	return nil
}
