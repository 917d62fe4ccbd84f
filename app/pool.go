package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/store"
)

// OpenPool opens the primary's pool (DATABASE_URL) with the server's
// settings (poolConfig). It does not connect: the first query does. New
// serves with it; the commands (migrate, reindex, audit) use it too.
func OpenPool(ctx context.Context, cfg config.Config) (*pgxpool.Pool, error) {
	pcfg, err := poolConfig("DATABASE_URL", cfg.DatabaseURL, 32)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return pool, nil
}

// Migrate applies the migrations (store.Migrate) to DATABASE_URL, opening
// nothing but a pool: `ticketing migrate`.
func Migrate(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	pool, err := openMigrated(ctx, cfg, log)
	if err != nil {
		return err
	}
	pool.Close()
	return nil
}

// openMigrated opens the pool, checks that Postgres answers within 10 s and
// applies the migrations.
func openMigrated(ctx context.Context, cfg config.Config, log *slog.Logger) (*pgxpool.Pool, error) {
	pool, err := OpenPool(ctx, cfg)
	if err != nil {
		return nil, err
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
	return pool, nil
}
