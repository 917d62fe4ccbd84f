package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The SQL of seat holds. Every availability decision is one conditional
// UPDATE of inventory rows judged by the database clock: a row is holdable
// when inventory_holdable (migrations/functions/inventory_holdable.sql).

// HoldEvent is what a hold needs to know about its event. SaleOpen and
// ExpiresAt are decided by the database clock of the current transaction.
type HoldEvent struct {
	ID                  string
	VenueID             string
	MaxTicketsPerUser   int
	HoldDurationSeconds int
	QueueRequired       bool
	SaleOpen            bool
	// ExpiresAt is now() + hold_duration_seconds: the expiry of a hold made
	// in this transaction.
	ExpiresAt time.Time
}

// Hold is a row of holds; Status reads EXPIRED for an ACTIVE hold past its
// expires_at.
type Hold struct {
	ID          string
	EventID     string
	Owner       string
	Status      string
	ExpiresAt   time.Time
	CreatedAt   time.Time
	TotalAmount int64
	Currency    string
}

// HoldItem is one seat or GA unit of a hold with its captured price.
type HoldItem struct {
	InventoryID int64
	SectionID   string
	SeatID      *string // nil for general admission
	PriceAmount int64
	Currency    string
}

// InventoryUnit is an inventory row after a transition, for the outbox.
type InventoryUnit struct {
	InventoryID int64
	SectionID   string
	SeatID      *string // nil for general admission
	Version     int64
}

const sqlHoldEvent = `
SELECT id::text, venue_id::text, max_tickets_per_user, hold_duration_seconds, queue_required,
       event_sale_open(sale_starts_at, sale_ends_at),
       now() + make_interval(secs => hold_duration_seconds)
FROM events WHERE id = $1`

// HoldEvent reads the event's sale conditions (ErrNotFound if absent).
func (s *Store) HoldEvent(ctx context.Context, eventID string) (HoldEvent, error) {
	var e HoldEvent
	err := s.db.QueryRow(ctx, sqlHoldEvent, eventID).Scan(&e.ID, &e.VenueID, &e.MaxTicketsPerUser,
		&e.HoldDurationSeconds, &e.QueueRequired, &e.SaleOpen, &e.ExpiresAt)
	return e, wrap("hold event", err)
}

// CreateHoldArgs is one createHold decision for hold_create (migrations
// 00010, 00013 and 00014). Slices may be empty; BestQty 0 means no best-available part.
type CreateHoldArgs struct {
	Owner, Key string
	Hash       []byte
	HoldID     string
	EventID    string
	SeatIDs    []string
	BestQty    int
	// BestSection is optional; BestAdjacent asks for one run in one row,
	// re-picked up to BestRetries times when a run is taken meanwhile.
	BestSection  *string
	BestAdjacent bool
	BestRetries  int
	// BestFrom is a hint: the row_index where a recent best-available
	// search of the event found seats; the rows from it on are searched
	// first, then those before it (nil: from the front).
	BestFrom     *int
	GASections   []string
	GAQuantities []int32
	// Admitted: the caller presented a valid queue admission for this
	// event (checked offline before the call); needed when the event has
	// queue_required.
	Admitted bool
}

// CreateHoldResult is a hold made (Outcome "created"), or the id of the hold
// an earlier request with the same key made (Outcome "replay" with the same
// arguments, "reused" with others); only Hold.ID is set then.
type CreateHoldResult struct {
	Outcome string
	Hold    Hold
	// SeatIDs are the explicit and best-available seats held (for leases).
	SeatIDs []string
	// BestRow is the row_index where a best-available part found its seats
	// (nil without one).
	BestRow *int
}

// Refusal is why the database refused a hold: the MESSAGE of hold_create's
// (and its trigger's) RAISE ... ERRCODE 'TKH00' (migrations/functions;
// TestRefusalsAreTheSQLs checks the two lists agree).
type Refusal string

// The refusals, in hold_create's order.
const (
	RefusalEventNotFound          Refusal = "event_not_found"
	RefusalSaleNotOpen            Refusal = "sale_not_open"
	RefusalQueueAdmissionRequired Refusal = "queue_admission_required"
	RefusalHoldLimit              Refusal = "hold_limit"        // Limit set
	RefusalUnknownSeats           Refusal = "unknown_seats"     // IDs: the seats
	RefusalSeatsUnavailable       Refusal = "seats_unavailable" // IDs: the seats, in request order
	RefusalBestUnavailable        Refusal = "best_unavailable"  // IDs: the section asked for, if any
	RefusalGAUnavailable          Refusal = "ga_unavailable"    // IDs: the section
	RefusalUnpriced               Refusal = "unpriced"
)

// Refusals lists every Refusal.
var Refusals = []Refusal{RefusalEventNotFound, RefusalSaleNotOpen, RefusalQueueAdmissionRequired,
	RefusalHoldLimit, RefusalUnknownSeats, RefusalSeatsUnavailable, RefusalBestUnavailable,
	RefusalGAUnavailable, RefusalUnpriced}

// HoldRefusedError is a hold the database refused; nothing was written.
type HoldRefusedError struct {
	Reason Refusal
	IDs    []string
	Limit  int
}

func (e *HoldRefusedError) Error() string { return "hold refused: " + string(e.Reason) }

// sqlCreateHold calls hold_create: the whole hold transaction (idempotency
// claim, per-(user, event) lock, sale and limit checks, seat locks in id
// order, the conditional transitions, holds + hold_items + outbox) in one
// statement and one round trip.
const sqlCreateHold = `
SELECT o_outcome, o_resource::text, o_expires_at, o_created_at, o_total, o_currency, o_seats::text[], o_best_row
FROM hold_create($1, $2, $3, $4, $5, $6::uuid[], $7, $8::uuid, $9, $10, $11::uuid[], $12::int[], $13, $14::int)`

// CreateHold runs the hold decision. Outside a transaction (the normal
// case) the call is its own transaction and has committed when it returns.
// A refusal is a *HoldRefusedError.
func (s *Store) CreateHold(ctx context.Context, a CreateHoldArgs) (CreateHoldResult, error) {
	var (
		r        CreateHoldResult
		resource string
		expires  *time.Time
		created  *time.Time
		total    *int64
		currency *string
	)
	nonNil := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	qty := a.GAQuantities
	if qty == nil {
		qty = []int32{}
	}
	call := func() error {
		return s.db.QueryRow(ctx, sqlCreateHold, a.Owner, a.Key, a.Hash, a.HoldID, a.EventID, nonNil(a.SeatIDs),
			a.BestQty, a.BestSection, a.BestAdjacent, a.BestRetries, nonNil(a.GASections), qty, a.Admitted, a.BestFrom).
			Scan(&r.Outcome, &resource, &expires, &created, &total, &currency, &r.SeatIDs, &r.BestRow)
	}
	err := call()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "holds_owner_key" {
		// The same key, committed meanwhile by a request for another event
		// (which did not share our per-(user, event) lock): nothing of ours
		// was written; run again, and read it as 'reused' or 'replay'.
		err = call()
	}
	if errors.As(err, &pgErr) && pgErr.Code == "TKH00" {
		e := &HoldRefusedError{Reason: Refusal(pgErr.Message), IDs: []string{}}
		if e.Reason == RefusalHoldLimit {
			e.Limit, _ = strconv.Atoi(pgErr.Detail)
		} else if pgErr.Detail != "" {
			e.IDs = strings.Split(pgErr.Detail, ",")
		}
		return r, e
	}
	if err != nil {
		return r, wrap("create hold", err)
	}
	r.Hold.ID = resource
	if r.Outcome == "created" {
		r.Hold = Hold{ID: resource, EventID: a.EventID, Owner: a.Owner, Status: "ACTIVE",
			ExpiresAt: *expires, CreatedAt: *created, TotalAmount: *total, Currency: *currency}
		s.markOutbox() // after the commit when not inside a transaction
	}
	return r, nil
}

func (s *Store) ids(ctx context.Context, op, sql string, args ...any) ([]int64, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, wrap(op, err)
}

const sqlSectionKind = `
SELECT s.kind FROM sections s JOIN events e ON e.venue_id = s.venue_id
WHERE e.id = $1 AND s.id = $2`

// SectionKind returns the kind of a section of the event's venue
// (ErrNotFound if the section is not in that venue).
func (s *Store) SectionKind(ctx context.Context, eventID, sectionID string) (string, error) {
	var kind string
	err := s.db.QueryRow(ctx, sqlSectionKind, eventID, sectionID).Scan(&kind)
	return kind, wrap("section kind", err)
}

// sqlBestBounds: the seats of the event's venue that a best-available
// pick of $2's section (or of any section) could take: the most in one row
// (a run of adjacent seats is never longer) and in all;
// EventFound false when there is no such event.
const sqlBestBounds = `
SELECT (SELECT count(*) FROM events WHERE id = $1) > 0, coalesce(max(n), 0)::int, coalesce(sum(n), 0)::int
FROM (SELECT count(*) AS n
      FROM events e JOIN sections sc ON sc.venue_id = e.venue_id JOIN seats s ON s.section_id = sc.id
      WHERE e.id = $1 AND ($2::uuid IS NULL OR sc.id = $2::uuid)
      GROUP BY s.section_id, s.row_index, s.row_label) r`

// BestBounds are the upper bounds of a best-available pick (sqlBestBounds).
type BestBounds struct {
	EventFound        bool
	LongestRow, Seats int
}

// BestAvailableBounds reads BestBounds of an event (sectionID "" for every
// section of its venue).
func (s *Store) BestAvailableBounds(ctx context.Context, eventID, sectionID string) (BestBounds, error) {
	var b BestBounds
	var sec *string
	if sectionID != "" {
		sec = &sectionID
	}
	err := s.db.QueryRow(ctx, sqlBestBounds, eventID, sec).Scan(&b.EventFound, &b.LongestRow, &b.Seats)
	return b, wrap("best available bounds", err)
}

func (s *Store) units(ctx context.Context, op, sql string, args ...any) ([]InventoryUnit, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, scanUnit)
	return out, wrap(op, err)
}

func scanUnit(r pgx.CollectableRow) (InventoryUnit, error) {
	var u InventoryUnit
	err := r.Scan(&u.InventoryID, &u.SectionID, &u.SeatID, &u.Version)
	return u, err
}

const holdColumns = `id::text, event_id::text, owner,
       hold_status(status, expires_at),
       expires_at, created_at, total_amount, currency`

const sqlGetHold = `SELECT ` + holdColumns + ` FROM holds WHERE id = $1`

// GetHold reads a hold (ErrNotFound if absent).
func (s *Store) GetHold(ctx context.Context, id string) (Hold, error) {
	return s.hold(ctx, sqlGetHold, id)
}

// GetHoldForUpdate reads and locks a hold (ErrNotFound if absent).
func (s *Store) GetHoldForUpdate(ctx context.Context, id string) (Hold, error) {
	return s.hold(ctx, sqlGetHold+" FOR UPDATE", id)
}

func (s *Store) hold(ctx context.Context, sql, id string) (Hold, error) {
	h, err := scanHold(s.db.QueryRow(ctx, sql, id))
	return h, wrap("get hold", err)
}

// scanHold reads a row of holdColumns.
func scanHold(r pgx.Row) (Hold, error) {
	var h Hold
	err := r.Scan(&h.ID, &h.EventID, &h.Owner, &h.Status, &h.ExpiresAt, &h.CreatedAt, &h.TotalAmount, &h.Currency)
	return h, err
}

const sqlHoldItems = `
SELECT inventory_id, section_id::text, seat_id::text, price_amount, currency
FROM hold_items WHERE hold_id = $1 ORDER BY inventory_id`

// HoldItems lists the items of a hold.
func (s *Store) HoldItems(ctx context.Context, holdID string) ([]HoldItem, error) {
	rows, err := s.db.Query(ctx, sqlHoldItems, holdID)
	if err != nil {
		return nil, wrap("hold items", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HoldItem, error) {
		var it HoldItem
		err := r.Scan(&it.InventoryID, &it.SectionID, &it.SeatID, &it.PriceAmount, &it.Currency)
		return it, err
	})
	return out, wrap("hold items", err)
}

// sqlLockHeldBy reaches the hold's rows through its items (hold_items'
// key, then inventory's): inventory has no index on hold_id (migration
// 00014), and every row a hold took has an item of it.
const sqlLockHeldBy = `
SELECT i.id FROM hold_items hi JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
WHERE hi.hold_id = $2 AND hi.event_id = $1 AND i.event_id = $1 AND i.hold_id = $2 AND i.status = 'HELD'
ORDER BY i.id
FOR UPDATE OF i`

const sqlReleaseHeldBy = `
UPDATE inventory
SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, expires_at = NULL,
    version = nextval('inventory_version_seq'), updated_at = now()
WHERE event_id = $1 AND id = ANY($3::bigint[]) AND hold_id = $2 AND status = 'HELD'
RETURNING id, section_id::text, seat_id::text, version`

// ReleaseHold locks (in id order) and frees the inventory rows still HELD by
// the hold, with new versions; used by cancellation and expiry. With
// skipLocked it never waits: rows another transaction has locked (a buyer
// reclaiming an expired seat) are left alone. Call EndHold afterwards with
// the outbox payload built from the returned rows.
func (s *Store) ReleaseHold(ctx context.Context, eventID, holdID string, skipLocked bool) ([]InventoryUnit, error) {
	lock := sqlLockHeldBy
	if skipLocked {
		lock += " SKIP LOCKED"
	}
	ids, err := s.ids(ctx, "lock held rows", lock, eventID, holdID)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return s.units(ctx, "release hold", sqlReleaseHeldBy, eventID, holdID, ids)
}

// sqlHeldRowsLeft reaches the hold's rows through its items, as
// sqlLockHeldBy does (it counted the event's whole inventory: 17 ms a call
// on a 20,000-unit event, once per expired hold the sweeper ended).
const sqlHeldRowsLeft = `
SELECT count(*) FROM hold_items hi JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
WHERE hi.hold_id = $2 AND hi.event_id = $1 AND i.event_id = $1 AND i.hold_id = $2 AND i.status = 'HELD'`

// HeldRowsLeft counts the inventory rows still HELD by the hold (after a
// ReleaseHold that skipped locked rows).
func (s *Store) HeldRowsLeft(ctx context.Context, eventID, holdID string) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, sqlHeldRowsLeft, eventID, holdID).Scan(&n)
	return n, wrap("held rows left", err)
}

const sqlEndHold = `
WITH items AS (
    UPDATE hold_items SET period = tstzrange(lower(period), greatest(lower(period), least(upper(period), clock_timestamp())))
    WHERE hold_id = $1
), o AS (
    INSERT INTO outbox (event_id, topic, payload) SELECT event_id, 'inventory', $3 FROM holds WHERE id = $1
)
UPDATE holds SET status = $2, updated_at = now() WHERE id = $1`

// EndHold sets the hold's status (CANCELLED or EXPIRED), cuts its items'
// periods at the current time and writes the outbox payload.
func (s *Store) EndHold(ctx context.Context, holdID, status string, outbox []byte) error {
	s.markOutbox()
	_, err := s.db.Exec(ctx, sqlEndHold, holdID, status, outbox)
	return wrap("end hold", err)
}

// hold_status's rule written out (ACTIVE and past expires_at), so that
// holds_active_expiry serves the sweep.
const sqlLockExpiredHolds = `
SELECT id::text, event_id::text FROM holds
WHERE status = 'ACTIVE' AND expires_at <= now()
ORDER BY expires_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// LockExpiredHolds locks up to limit ACTIVE holds past their expiry, skipping
// holds another transaction has locked; it returns [id, eventID] pairs.
func (s *Store) LockExpiredHolds(ctx context.Context, limit int) ([][2]string, error) {
	rows, err := s.db.Query(ctx, sqlLockExpiredHolds, limit)
	if err != nil {
		return nil, wrap("lock expired holds", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var p [2]string
		err := r.Scan(&p[0], &p[1])
		return p, err
	})
	return out, wrap("lock expired holds", err)
}
