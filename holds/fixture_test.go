package holds_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/redisstore"
	"github.com/ticketing/ticketing/store"
)

// eventSpec describes a test event: a seated section of rows x perRow seats
// (row_index 0 is the front) and a GA section of gaCapacity units.
type eventSpec struct {
	rows, perRow   int
	gaCapacity     int
	maxPerUser     int
	holdSeconds    int
	saleNotOpen    bool
	queueRequired  bool
	seatPrice      int64
	gaPrice        int64
	noGA, noSeated bool
}

type event struct {
	ID      string
	Seated  string     // section id
	GA      string     // section id
	Seats   [][]string // [row][number-1] seat id
	AllSeat []string
}

func defaults(s eventSpec) eventSpec {
	if s.rows == 0 {
		s.rows = 3
	}
	if s.perRow == 0 {
		s.perRow = 10
	}
	if s.gaCapacity == 0 {
		s.gaCapacity = 10
	}
	if s.maxPerUser == 0 {
		s.maxPerUser = 8
	}
	if s.holdSeconds == 0 {
		s.holdSeconds = 600
	}
	if s.seatPrice == 0 {
		s.seatPrice = 5000
	}
	if s.gaPrice == 0 {
		s.gaPrice = 2500
	}
	return s
}

// createEvent writes a venue, its sections and seats, an event with prices
// and its inventory with plain SQL (test fixture).
func createEvent(t tb, pool *pgxpool.Pool, spec eventSpec) event {
	t.Helper()
	spec = defaults(spec)
	ctx := context.Background()
	venue, ev := uuid.NewString(), uuid.NewString()
	e := event{ID: ev, Seated: uuid.NewString(), GA: uuid.NewString()}
	saleStart := "now() - interval '1 hour'"
	if spec.saleNotOpen {
		saleStart = "now() + interval '1 hour'"
	}
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO venues (id, name, address, city, country, lat, lon) VALUES ($1, 'Hall', 'Street 1', 'Madrid', 'ES', 40.4, -3.7)`, []any{venue}},
		{`INSERT INTO sections (id, venue_id, position, name, kind, capacity) VALUES ($1, $2, 1, 'Stalls', 'SEATED', $3)`, []any{e.Seated, venue, spec.rows * spec.perRow}},
		{`INSERT INTO sections (id, venue_id, position, name, kind, capacity) VALUES ($1, $2, 2, 'Floor', 'GENERAL_ADMISSION', $3)`, []any{e.GA, venue, spec.gaCapacity}},
		{`INSERT INTO seats (id, section_id, row_label, row_index, number, x, y)
		  SELECT gen_random_uuid(), $1, chr(65 + r), r, n, n, r FROM generate_series(0, $2 - 1) r, generate_series(1, $3) n`, []any{e.Seated, spec.rows, spec.perRow}},
		{`INSERT INTO events (id, venue_id, name, category, starts_at, sale_starts_at, max_tickets_per_user, hold_duration_seconds, queue_required)
		  VALUES ($1, $2, 'Show', 'music', now() + interval '30 days', ` + saleStart + `, $3, $4, $5)`, []any{ev, venue, spec.maxPerUser, spec.holdSeconds, spec.queueRequired}},
		{`INSERT INTO event_prices VALUES ($1, $2, $3, 'EUR'), ($1, $4, $5, 'EUR')`, []any{ev, e.Seated, spec.seatPrice, e.GA, spec.gaPrice}},
	}
	if !spec.noSeated {
		stmts = append(stmts, struct {
			sql  string
			args []any
		}{`INSERT INTO inventory (event_id, section_id, seat_id) SELECT $1, section_id, id FROM seats WHERE section_id = $2 ORDER BY row_index, number`, []any{ev, e.Seated}})
	}
	if !spec.noGA {
		stmts = append(stmts, struct {
			sql  string
			args []any
		}{`INSERT INTO inventory (event_id, section_id, unit_no) SELECT $1, $2, g FROM generate_series(1, $3) g`, []any{ev, e.GA, spec.gaCapacity}})
	}
	for _, s := range stmts {
		_, err := pool.Exec(ctx, s.sql, s.args...)
		require.NoError(t, err, s.sql)
	}
	e.Seats = make([][]string, spec.rows)
	rows, err := pool.Query(ctx, `SELECT row_index, id::text FROM seats WHERE section_id = $1 ORDER BY row_index, number`, e.Seated)
	require.NoError(t, err)
	for rows.Next() {
		var r int
		var id string
		require.NoError(t, rows.Scan(&r, &id))
		e.Seats[r] = append(e.Seats[r], id)
		e.AllSeat = append(e.AllSeat, id)
	}
	require.NoError(t, rows.Err())
	return e
}

// tb is what fixtures need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	FailNow()
}

type env struct {
	pool   *pgxpool.Pool
	st     *store.Store
	svc    *holds.Service
	rdb    redis.UniversalClient
	leases *redisstore.Leases
	prefix string
}

// newEnv gives a fresh database and a service, with Redis leases (shared
// test Redis, per-test prefix) unless noRedis.
func newEnv(t testing.TB, noRedis bool, cfg holds.Config) *env {
	t.Helper()
	pool := testdb.NewPool(t)
	e := &env{pool: pool, st: store.New(pool)}
	if !noRedis {
		e.rdb = testdb.NewRedis(t) // one Redis, or the cluster (testdb.RedisCluster)
		e.prefix = testdb.RedisPrefix(t)
		e.leases = redisstore.NewLeases(e.rdb, e.prefix)
		cfg.Leases = e.leases
	}
	if cfg.Concurrency == 0 {
		// These tests are about contention in Postgres (hundreds of
		// racing buyers on a loaded machine): a lane wide enough that
		// shedding never answers for them (TestSaturatedHoldLane tests it).
		cfg.Concurrency = 1000
	}
	e.svc = holds.New(e.st, cfg)
	t.Cleanup(e.svc.Wait)
	return e
}

func user(i int) auth.User { return auth.User{ID: fmt.Sprintf("user-%d", i)} }

func key() string { return uuid.NewString() }

func seatsReq(ev event, seats ...string) holds.CreateRequest {
	return holds.CreateRequest{EventID: ev.ID, SeatIDs: seats, IdempotencyKey: key()}
}

func isUnavailable(err error) bool {
	var su *apperr.SeatUnavailableError
	return errors.As(err, &su)
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
