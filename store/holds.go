package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The SQL of seat holds. Every availability decision is one conditional
// UPDATE of inventory rows judged by the database clock: a row is holdable
// when AVAILABLE or when HELD with expires_at <= now().

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
       sale_starts_at <= now() AND (sale_ends_at IS NULL OR now() < sale_ends_at),
       now() + make_interval(secs => hold_duration_seconds)
FROM events WHERE id = $1`

// HoldEvent reads the event's sale conditions (ErrNotFound if absent).
func (s *Store) HoldEvent(ctx context.Context, eventID string) (HoldEvent, error) {
	var e HoldEvent
	err := s.db.QueryRow(ctx, sqlHoldEvent, eventID).Scan(&e.ID, &e.VenueID, &e.MaxTicketsPerUser,
		&e.HoldDurationSeconds, &e.QueueRequired, &e.SaleOpen, &e.ExpiresAt)
	return e, wrap("hold event", err)
}

const sqlLockUserEvent = `SELECT pg_advisory_xact_lock(hashtextextended($1::text || ':' || $2::text, 0))`

const sqlCountUserTickets = `
SELECT count(*) FROM inventory
WHERE event_id = $1 AND owner = $2
  AND (status = 'SOLD' OR (status = 'HELD' AND expires_at > now()))`

// HoldStart is the outcome of the first round trip of a hold transaction.
type HoldStart struct {
	// Claimed is false when the idempotency key already existed.
	Claimed bool
	// EventFound is false when the event does not exist.
	EventFound bool
	Event      HoldEvent
	// Tickets counts the owner's active held plus sold units of the event,
	// after the (event, owner) lock.
	Tickets int
}

// BeginHold runs, in one round trip and in this order: the claim of the
// idempotency key (owner, "createHold", key) for holdID (a concurrent claim
// of the same key waits for this transaction), the read of the event with
// pg_advisory_xact_lock on (event, owner) (serialising one user's holds of
// one event until the transaction ends), and the count of the owner's
// active held plus sold units, a new statement after the lock, so it sees
// every transaction that held the lock before.
func (s *Store) BeginHold(ctx context.Context, owner, key string, hash []byte, holdID, eventID string) (HoldStart, error) {
	var st HoldStart
	b := &pgx.Batch{}
	b.Queue(sqlClaimIdempotencyKey, owner, "createHold", key, hash, holdID).Exec(func(tag pgconn.CommandTag) error {
		st.Claimed = tag.RowsAffected() == 1
		return nil
	})
	b.Queue(sqlLockUserEvent, eventID, owner)
	b.Queue(sqlHoldEvent, eventID).QueryRow(func(row pgx.Row) error {
		e := &st.Event
		err := row.Scan(&e.ID, &e.VenueID, &e.MaxTicketsPerUser, &e.HoldDurationSeconds, &e.QueueRequired, &e.SaleOpen, &e.ExpiresAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		st.EventFound = err == nil
		return err
	})
	b.Queue(sqlCountUserTickets, eventID, owner).QueryRow(func(row pgx.Row) error { return row.Scan(&st.Tickets) })
	return st, wrap("begin hold", s.db.SendBatch(ctx, b).Close())
}

const sqlLockSeats = `
SELECT id, seat_id::text FROM inventory
WHERE event_id = $1 AND seat_id = ANY($2::uuid[])
ORDER BY id
FOR UPDATE`

const sqlHoldSeats = `
UPDATE inventory
SET status = 'HELD', hold_id = $3, owner = $4, expires_at = $5,
    version = nextval('inventory_version_seq'), updated_at = now()
WHERE event_id = $1 AND seat_id = ANY($2::uuid[]) AND ` + holdable + `
RETURNING id, section_id::text, seat_id::text, version`

// HoldSeats holds explicit seats in one round trip: it locks their inventory
// rows in id order (a stable order, so no deadlock whatever order the client
// listed them in), then applies the hold transition (see HoldInventory) to
// those holdable. known lists the seats that have a row in the event.
func (s *Store) HoldSeats(ctx context.Context, eventID string, seatIDs []string, holdID, owner string, expiresAt time.Time) (known []string, units []InventoryUnit, err error) {
	b := &pgx.Batch{}
	b.Queue(sqlLockSeats, eventID, seatIDs).Query(func(rows pgx.Rows) error {
		var id int64
		var seat string
		_, err := pgx.ForEachRow(rows, []any{&id, &seat}, func() error { known = append(known, seat); return nil })
		return err
	})
	b.Queue(sqlHoldSeats, eventID, seatIDs, holdID, owner, expiresAt).Query(func(rows pgx.Rows) error {
		units, err = pgx.CollectRows(rows, scanUnit)
		return err
	})
	err = s.db.SendBatch(ctx, b).Close()
	return known, units, wrap("hold seats", err)
}

// holdable is the condition of a row that may be held now.
const holdable = `(status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()))`

const sqlPickAdjacent = `
WITH free AS (
    SELECT i.id, s.section_id, s.row_index, s.row_label, s.number,
           s.number - row_number() OVER (PARTITION BY s.section_id, s.row_index, s.row_label ORDER BY s.number) AS grp
    FROM inventory i JOIN seats s ON s.id = i.seat_id
    WHERE i.event_id = $1 AND i.seat_id IS NOT NULL
      AND ($2::uuid IS NULL OR i.section_id = $2)
      AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
      AND NOT (i.id = ANY($4::bigint[]))
), runs AS (
    SELECT section_id, row_index, row_label, number AS first,
           lead(number, $3 - 1) OVER (PARTITION BY section_id, row_index, row_label, grp ORDER BY number) AS last
    FROM free
), best AS (
    SELECT r.* FROM runs r
    CROSS JOIN LATERAL (
        SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
        WHERE section_id = r.section_id AND row_index = r.row_index AND row_label = r.row_label) c
    WHERE r.last IS NOT NULL
    ORDER BY r.row_index, abs((r.first + r.last) / 2.0 - c.center), r.section_id, r.first
    LIMIT 1
)
SELECT f.id FROM free f JOIN best b
  ON f.section_id = b.section_id AND f.row_index = b.row_index AND f.row_label = b.row_label
 AND f.number BETWEEN b.first AND b.last
ORDER BY f.id`

// PickAdjacent chooses the best run of qty consecutive holdable seats in one
// row (lowest row_index, then nearest the row's centre), optionally within a
// section, ignoring the excluded inventory ids. It does not lock; see
// LockHoldable. It returns nil when no run exists.
func (s *Store) PickAdjacent(ctx context.Context, eventID string, sectionID *string, qty int, exclude []int64) ([]int64, error) {
	if exclude == nil {
		exclude = []int64{}
	}
	return s.ids(ctx, "pick adjacent", sqlPickAdjacent, eventID, sectionID, qty, exclude)
}

const sqlPickBestSeats = `
SELECT i.id FROM inventory i JOIN seats s ON s.id = i.seat_id
CROSS JOIN LATERAL (
    SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
    WHERE section_id = s.section_id AND row_index = s.row_index AND row_label = s.row_label) c
WHERE i.event_id = $1 AND i.seat_id IS NOT NULL
  AND ($2::uuid IS NULL OR i.section_id = $2)
  AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
ORDER BY s.row_index, abs(s.number - c.center), i.id
LIMIT $3
FOR UPDATE OF i SKIP LOCKED`

// PickBestSeats locks up to qty of the best holdable seats (front rows, then
// central), skipping rows other transactions have locked.
func (s *Store) PickBestSeats(ctx context.Context, eventID string, sectionID *string, qty int) ([]int64, error) {
	return s.ids(ctx, "pick best seats", sqlPickBestSeats, eventID, sectionID, qty)
}

const sqlLockHoldable = `
SELECT id FROM inventory
WHERE event_id = $1 AND id = ANY($2::bigint[]) AND ` + holdable + `
ORDER BY id
FOR UPDATE SKIP LOCKED`

// LockHoldable locks those of ids that are holdable and not locked by
// another transaction, and returns them.
func (s *Store) LockHoldable(ctx context.Context, eventID string, ids []int64) ([]int64, error) {
	return s.ids(ctx, "lock holdable", sqlLockHoldable, eventID, ids)
}

const sqlHoldGA = `
WITH picked AS MATERIALIZED (
    SELECT id FROM inventory
    WHERE event_id = $1 AND section_id = $2 AND unit_no IS NOT NULL
      AND status IN ('AVAILABLE', 'HELD') AND ` + holdable + `
    ORDER BY status, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE inventory i
SET status = 'HELD', hold_id = $4, owner = $5, expires_at = $6,
    version = nextval('inventory_version_seq'), updated_at = now()
FROM picked
WHERE i.event_id = $1 AND i.id = picked.id
RETURNING i.id, i.section_id::text, i.seat_id::text, i.version`

// HoldGA applies the hold transition to up to qty holdable units of a
// general-admission section in one statement. Units are picked (in a
// materialised CTE: an IN (subquery LIMIT) may be re-scanned and take more)
// FOR UPDATE SKIP LOCKED (AVAILABLE first, in index order), so concurrent buyers of a
// hot floor take different units instead of queueing on one row. Fewer
// units returned than asked means the section has no more.
func (s *Store) HoldGA(ctx context.Context, eventID, sectionID string, qty int, holdID, owner string, expiresAt time.Time) ([]InventoryUnit, error) {
	return s.units(ctx, "hold ga", sqlHoldGA, eventID, sectionID, qty, holdID, owner, expiresAt)
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

const sqlHoldInventory = `
UPDATE inventory
SET status = 'HELD', hold_id = $3, owner = $4, expires_at = $5,
    version = nextval('inventory_version_seq'), updated_at = now()
WHERE event_id = $1 AND id = ANY($2::bigint[]) AND ` + holdable + `
RETURNING id, section_id::text, seat_id::text, version`

// HoldInventory is the hold transition: it sets the holdable rows among ids
// to HELD by holdID/owner until expiresAt with a new version, and returns
// the rows it changed. Rows not returned were not holdable.
func (s *Store) HoldInventory(ctx context.Context, eventID string, ids []int64, holdID, owner string, expiresAt time.Time) ([]InventoryUnit, error) {
	return s.units(ctx, "hold inventory", sqlHoldInventory, eventID, ids, holdID, owner, expiresAt)
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

// sqlInsertHold writes the hold, its items with the prices of event_prices
// captured now, and the outbox row, from the inventory rows HELD by the hold
// in this transaction. Item periods start at clock_timestamp(), which is
// after the commit of any cancellation this transaction waited for, so a
// cancelled item's cut period never overlaps the new one.
const sqlInsertHold = `
WITH items AS (
    SELECT i.id, i.section_id, i.seat_id, p.amount, p.currency
    FROM inventory i JOIN event_prices p ON p.event_id = i.event_id AND p.section_id = i.section_id
    WHERE i.event_id = $2 AND i.hold_id = $1 AND i.status = 'HELD'
), h AS (
    INSERT INTO holds (id, event_id, owner, status, expires_at, total_amount, currency)
    SELECT $1, $2, $3, 'ACTIVE', $4, coalesce(sum(amount), 0), coalesce(min(currency), 'XXX') FROM items
    RETURNING created_at, total_amount, currency
), hi AS (
    INSERT INTO hold_items (hold_id, event_id, inventory_id, section_id, seat_id, price_amount, currency, period)
    SELECT $1, $2, id, section_id, seat_id, amount, currency, tstzrange(least(clock_timestamp(), $4), $4)
    FROM items
    RETURNING 1
), o AS (
    INSERT INTO outbox (event_id, topic, payload) VALUES ($2, 'inventory', $5)
)
SELECT h.created_at, h.total_amount, h.currency,
       (SELECT count(*) FROM hi), (SELECT count(DISTINCT currency) FROM items)
FROM h`

// InsertHold records an ACTIVE hold of the rows HELD by h.ID in this
// transaction, its items and the outbox payload. It returns the stored hold
// and the number of items and currencies priced; fewer items than held rows
// means a section of the event has no price.
func (s *Store) InsertHold(ctx context.Context, h Hold, outbox []byte) (Hold, int, int, error) {
	var items, currencies int
	s.markOutbox()
	err := s.db.QueryRow(ctx, sqlInsertHold, h.ID, h.EventID, h.Owner, h.ExpiresAt, outbox).
		Scan(&h.CreatedAt, &h.TotalAmount, &h.Currency, &items, &currencies)
	h.Status = "ACTIVE"
	return h, items, currencies, wrap("insert hold", err)
}

const holdColumns = `id::text, event_id::text, owner,
       CASE WHEN status = 'ACTIVE' AND expires_at <= now() THEN 'EXPIRED' ELSE status END,
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
	var h Hold
	err := s.db.QueryRow(ctx, sql, id).Scan(&h.ID, &h.EventID, &h.Owner, &h.Status,
		&h.ExpiresAt, &h.CreatedAt, &h.TotalAmount, &h.Currency)
	return h, wrap("get hold", err)
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

const sqlLockHeldBy = `
SELECT id FROM inventory
WHERE event_id = $1 AND hold_id = $2 AND status = 'HELD'
ORDER BY id
FOR UPDATE`

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
