package paysim

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/ticketing/ticketing/paysim/migrations"
)

// migrateLockID is paysim's own advisory lock (the product's migrations use
// goose's default id), so the two never wait for each other.
const migrateLockID int64 = 0x7061_7973_696d // "paysim"

// Migrate creates the paysim schema and applies paysim's embedded
// migrations, recording them in paysim.goose_db_version. Several instances
// may start at once: an advisory lock serialises them.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("paysim migrate: %w", err)
	}
	defer tx.Rollback(ctx)
	// CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent twin.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockID); err != nil {
		return fmt.Errorf("paysim migrate: %w", err)
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS paysim"); err != nil {
		return fmt.Errorf("paysim migrate: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("paysim migrate: %w", err)
	}

	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrateLockID))
	if err != nil {
		return fmt.Errorf("paysim migrate: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithTableName("paysim.goose_db_version"),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("paysim migrate: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("paysim migrate: %w", err)
	}
	return nil
}
