package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/apperr"
)

// Health tracks whether one Postgres server (the primary, or the read
// replica) answers. A statement that finds the server unreachable marks it
// down at once; while it is down, a store gated by it (Store.WithHealth)
// fails every statement immediately with apperr.ErrServiceUnavailable
// instead of waiting for a connection, and Run's probe (every 200 ms while
// down) marks it up again as soon as a ping succeeds.
type Health struct {
	pool *pgxpool.Pool
	down atomic.Bool
	err  atomic.Pointer[string]
	// changes counts transitions (tests, metrics).
	changes atomic.Int64
}

// NewHealth tracks the server behind pool; it starts up.
func NewHealth(pool *pgxpool.Pool) *Health { return &Health{pool: pool} }

// Up reports whether the server answered the last probe or statement. A nil
// Health is always up.
func (h *Health) Up() bool { return h == nil || !h.down.Load() }

// Err is nil while up, else an error wrapping apperr.ErrServiceUnavailable
// that says why.
func (h *Health) Err() error {
	if h.Up() {
		return nil
	}
	why := "unreachable"
	if p := h.err.Load(); p != nil {
		why = *p
	}
	return fmt.Errorf("%w: postgres is down (%s)", apperr.ErrServiceUnavailable, why)
}

// Changes is the number of up/down transitions so far.
func (h *Health) Changes() int64 { return h.changes.Load() }

func (h *Health) set(up bool, err error) {
	if err != nil {
		s := err.Error()
		h.err.Store(&s)
	}
	if h.down.Swap(!up) == up { // it was the other way round
		h.changes.Add(1)
	}
}

// observe marks the server down when err says it cannot be reached (and
// not merely that the caller gave up).
func (h *Health) observe(ctx context.Context, err error) {
	if err == nil || h == nil || ctx.Err() != nil {
		return
	}
	if unavailable(err) || (errors.Is(err, apperr.ErrServiceUnavailable) && h.Up()) {
		h.set(false, err)
	}
}

// Probe pings the server once (bounded by timeout) and records the outcome.
func (h *Health) Probe(ctx context.Context, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := h.pool.Ping(pctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	h.set(err == nil, err)
	return err
}

// Run probes until ctx ends: every second while up, every 200 ms while down,
// each ping bounded by one second.
func (h *Health) Run(ctx context.Context) {
	for {
		every := time.Second
		if !h.Up() {
			every = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		_ = h.Probe(ctx, time.Second)
	}
}

// WithHealth returns a store over the same pool whose statements fail at
// once while h says the server is down, and report unreachable errors to h.
func (s *Store) WithHealth(h *Health) *Store {
	return &Store{db: gatedDB{p: s.pool, h: h}, pool: s.pool, onOutbox: s.onOutbox}
}

// gatedDB is the pool behind a health gate.
type gatedDB struct {
	p *pgxpool.Pool
	h *Health
}

func (g gatedDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := g.h.Err(); err != nil {
		return pgconn.CommandTag{}, err
	}
	t, err := g.p.Exec(ctx, sql, args...)
	g.h.observe(ctx, err)
	return t, err
}

func (g gatedDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := g.h.Err(); err != nil {
		return nil, err
	}
	r, err := g.p.Query(ctx, sql, args...)
	g.h.observe(ctx, err)
	if err != nil {
		return r, err
	}
	return observedRows{Rows: r, ctx: ctx, h: g.h}, nil
}

// observedRows reports the error that ends the rows (a connection cut
// mid-result surfaces there, not from Query).
type observedRows struct {
	pgx.Rows
	ctx context.Context
	h   *Health
}

func (r observedRows) Err() error {
	err := r.Rows.Err()
	r.h.observe(r.ctx, err)
	return err
}

func (g gatedDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := g.h.Err(); err != nil {
		return errRow{err}
	}
	return observedRow{Row: g.p.QueryRow(ctx, sql, args...), ctx: ctx, h: g.h}
}

func (g gatedDB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := g.h.Err(); err != nil {
		return errBatch{err}
	}
	return g.p.SendBatch(ctx, b)
}

func (g gatedDB) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := g.h.Err(); err != nil {
		return 0, err
	}
	n, err := g.p.CopyFrom(ctx, table, cols, src)
	g.h.observe(ctx, err)
	return n, err
}

func (g gatedDB) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := g.h.Err(); err != nil {
		return nil, err
	}
	tx, err := g.p.Begin(ctx)
	g.h.observe(ctx, err)
	return tx, err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type observedRow struct {
	pgx.Row
	ctx context.Context
	h   *Health
}

func (r observedRow) Scan(dst ...any) error {
	err := r.Row.Scan(dst...)
	r.h.observe(r.ctx, err)
	return err
}

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }

// Reads says where browsing reads go: the catalog (events, venues,
// sections, seats, artists, prices, listings, search hits) and the live
// inventory reads (availability counts, seat-map snapshots). Decisions
// (holds, orders, payments, audit) never use it: they use the primary's
// store directly. Without a replica both answer the primary.
type Reads struct {
	primary, replica *Store
	ph, rh           *Health
}

// NewReads routes between the primary and an optional replica (nil, nil
// without DATABASE_READ_URL); each store should be gated by its Health.
func NewReads(primary *Store, ph *Health, replica *Store, rh *Health) *Reads {
	return &Reads{primary: primary, ph: ph, replica: replica, rh: rh}
}

// Catalog is where catalog reads go: the replica while it answers (the
// catalog is read-mostly and may lag), else the primary.
func (r *Reads) Catalog() *Store {
	if r.replica != nil && (r.rh.Up() || !r.ph.Up()) {
		return r.replica
	}
	return r.primary
}

// Live is where inventory reads go: the primary while it answers (fresh,
// and a seat-map snapshot is then never older than the stream cursor read
// before it), else the replica.
func (r *Reads) Live() *Store {
	if r.replica != nil && !r.ph.Up() {
		return r.replica
	}
	return r.primary
}

// StaleFor bounds how old an answer kept in memory (the catalog's last good
// rows, the last seat-map snapshot) may be when it is served because
// Postgres, primary and replica, cannot be reached.
const StaleFor = 10 * time.Minute

// Read modes (Mode, /readyz "mode").
const (
	ModeReadWrite       = "read-write"
	ModeReadOnlyReplica = "read-only: replica"
	ModeReadOnlyCache   = "read-only: cache"
)

// Mode says how the service is answering: read-write while the primary is
// up; read-only from the replica while it is down and the replica answers;
// read-only from the last good answers cached in memory otherwise.
func (r *Reads) Mode() string {
	switch {
	case r.ph.Up():
		return ModeReadWrite
	case r.replica != nil && r.rh.Up():
		return ModeReadOnlyReplica
	}
	return ModeReadOnlyCache
}

func (r *Reads) healthOf(st *Store) *Health {
	if st == r.primary {
		return r.ph
	}
	return r.rh
}

// HasReplica reports whether a replica is configured.
func (r *Reads) HasReplica() bool { return r.replica != nil }

// Primary is the primary's store.
func (r *Reads) Primary() *Store { return r.primary }
func (b errBatch) Tx() pgx.Tx    { return nil }

// ReadCatalog runs read on r.Catalog(); when that server turns out to be
// unreachable and the other one is not known to be down, it runs read once
// more there (the failure has already marked the first one down).
func ReadCatalog[T any](r *Reads, read func(*Store) (T, error)) (T, error) {
	return readRetry(r, r.Catalog, read)
}

// ReadLive is ReadCatalog for r.Live().
func ReadLive[T any](r *Reads, read func(*Store) (T, error)) (T, error) {
	return readRetry(r, r.Live, read)
}

func readRetry[T any](r *Reads, pick func() *Store, read func(*Store) (T, error)) (T, error) {
	st := pick()
	v, err := read(st)
	if err != nil && r.replica != nil && errors.Is(err, apperr.ErrServiceUnavailable) {
		// The store's error mapping said unreachable: make sure its
		// health knows, whatever path the error took.
		if h := r.healthOf(st); h != nil && h.Up() {
			h.set(false, err)
		}
		if again := pick(); again != st {
			return read(again)
		}
	}
	return v, err
}
