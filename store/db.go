// Package store is the Postgres data layer (pgx/v5). It owns every SQL
// statement of the product and maps driver errors to the sentinels below, so
// that domain packages never see a pgconn error.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/apperr"
)

// ErrNotFound reports that a row does not exist.
var ErrNotFound = errors.New("not found")

// ConflictError reports a violated unique or exclusion constraint.
type ConflictError struct {
	Constraint string
	Err        error
}

func (e *ConflictError) Error() string { return "conflict on " + e.Constraint }
func (e *ConflictError) Unwrap() error { return e.Err }

// ErrConflict matches any *ConflictError with errors.Is.
var ErrConflict = errors.New("conflict")

// Is lets errors.Is(err, ErrConflict) match a *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// DBTX is what both *pgxpool.Pool and pgx.Tx offer.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store runs queries on a pool, or on one transaction when made by InTx.
type Store struct {
	db   DBTX
	pool *pgxpool.Pool
	// onOutbox is called after the commit of a transaction that wrote outbox
	// rows (see SetOutboxHook); outboxDirty is set inside such a transaction.
	onOutbox    func()
	outboxDirty *bool
}

// New returns a store over the pool.
func New(pool *pgxpool.Pool) *Store { return &Store{db: pool, pool: pool} }

// SetOutboxHook registers fn to run after every commit that wrote outbox
// rows (the relay's wake-up). It is called outside the transaction, so a
// slow or failing fn never lengthens or fails a business transaction.
// Set it once, before the store is used.
func (s *Store) SetOutboxHook(fn func()) { s.onOutbox = fn }

// markOutbox records that the current statement wrote outbox rows.
func (s *Store) markOutbox() {
	if s.outboxDirty != nil {
		*s.outboxDirty = true
	} else if s.onOutbox != nil {
		s.onOutbox()
	}
}

// Pool returns the underlying pool (for LISTEN and health checks).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// InTx runs fn in a transaction with a copy of the store bound to it. Inside
// a transaction it opens a savepoint. fn must not keep the store after it
// returns, and must not share it between goroutines: a pgx connection is not
// safe for concurrent use.
func (s *Store) InTx(ctx context.Context, fn func(*Store) error) error {
	if s.outboxDirty != nil { // a savepoint: the outermost commit decides
		return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			return fn(&Store{db: tx, pool: s.pool, onOutbox: s.onOutbox, outboxDirty: s.outboxDirty})
		})
	}
	dirty := false
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		return fn(&Store{db: tx, pool: s.pool, onOutbox: s.onOutbox, outboxDirty: &dirty})
	})
	if err == nil && dirty && s.onOutbox != nil {
		s.onOutbox()
	}
	if unavailable(err) { // BEGIN or COMMIT could not reach Postgres
		err = fmt.Errorf("%w: %w", apperr.ErrServiceUnavailable, err)
	}
	return err
}

// Exec runs a statement on the store's connection (for tests and tools).
func (s *Store) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := s.db.Exec(ctx, sql, args...)
	return mapErr(err)
}

// mapErr turns driver errors into the package's sentinels.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505", "23P01":
			return &ConflictError{Constraint: pgErr.ConstraintName, Err: err}
		}
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", apperr.ErrServiceUnavailable, err)
	}
	return err
}

// unavailable reports errors that mean "Postgres cannot be reached or is
// shutting down", as opposed to a failed statement: clients get
// SERVICE_UNAVAILABLE and may retry, instead of INTERNAL.
func unavailable(err error) bool {
	if errors.Is(err, apperr.ErrServiceUnavailable) {
		return false // already mapped
	}
	var (
		connErr *pgconn.ConnectError
		pgErr   *pgconn.PgError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	case errors.As(err, &pgErr):
		// 08: connection exception; 57P01-03: shutting down or starting;
		// 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300"
	}
	return false
}

// wrap names the failing operation and maps the error.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, mapErr(err))
}
