package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/ticketing/ticketing/migrations"
)

// Migrate applies the embedded numbered migrations, then the SQL functions
// (migrations/functions, see applyFunctions), then river's. A Postgres session advisory lock
// makes it safe when several instances start at once: one migrates, the
// others wait and then find nothing left to do.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	return migrate(ctx, pool, log, migrations.FS)
}

// migrate is Migrate with the numbered migrations read from numbered (a
// test adds a later one).
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, numbered fs.FS) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	if err := migrateDB(ctx, db, log, numbered); err != nil {
		return err
	}
	if err := applyFunctions(ctx, pool); err != nil {
		return err
	}
	return migrateRiver(ctx, pool, log)
}

// FunctionFiles lists migrations/functions/*.sql in the order they are
// applied: by name, so a file whose view or SQL function uses another
// file's function must sort after it (inventory_views.sql after
// inventory_holdable.sql).
func FunctionFiles() ([]string, error) {
	return fs.Glob(migrations.Functions, "functions/*.sql")
}

// applyFunctions runs every functions/*.sql file (CREATE OR REPLACE) in one
// transaction, after the numbered migrations: a function's body is its file.
// The transaction-scoped advisory lock serialises instances starting at
// once (two concurrent CREATE OR REPLACE of one function can fail with
// "tuple concurrently updated").
func applyFunctions(ctx context.Context, pool *pgxpool.Pool) error {
	names, err := FunctionFiles()
	if err != nil {
		return fmt.Errorf("migrate functions: %w", err)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7274748)"); err != nil {
			return fmt.Errorf("migrate functions: %w", err)
		}
		for _, n := range names {
			b, err := fs.ReadFile(migrations.Functions, n)
			if err != nil {
				return fmt.Errorf("migrate functions: %w", err)
			}
			// No arguments: pgx sends it by the simple protocol, so a file
			// may hold several statements.
			if _, err := tx.Exec(ctx, string(b)); err != nil {
				return fmt.Errorf("migrate functions: %s: %w", n, err)
			}
		}
		return nil
	})
}

// migrateRiver applies the job queue's own migrations (river, used by the
// orders engine for compensations and reconciliation).
func migrateRiver(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	// Serialise instances starting together (goose's lock is released).
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7274747)"); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7274747)") //nolint:errcheck
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	for _, v := range res.Versions {
		if log != nil {
			log.Info("river migration applied", "version", v.Version, "duration", v.Duration)
		}
	}
	return nil
}

func migrateDB(ctx context.Context, db *sql.DB, log *slog.Logger, numbered fs.FS) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, numbered,
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range results {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	return nil
}
