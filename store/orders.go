package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The SQL of orders and their confirmation. Lock order everywhere:
// order -> payment -> hold -> inventory rows (createOrder locks the hold and
// then inserts a new order row, which waits on nothing).

// Order is a row of orders.
type Order struct {
	ID          string
	HoldID      string
	EventID     string
	Owner       string
	Status      string
	TotalAmount int64
	Currency    string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ConfirmedAt *time.Time
}

// Ticket is a row of tickets.
type Ticket struct {
	ID          string
	OrderID     string
	EventID     string
	InventoryID int64
	SectionID   string
	SeatID      *string
	UnitNo      *int
	Code        string
	Status      string
	IssuedAt    time.Time
}

// SoldUnit is an inventory row just sold, with what its ticket needs.
type SoldUnit struct {
	InventoryUnit
	UnitNo *int
}

// Tx returns the transaction the store is bound to (InTx), for libraries
// that insert in the caller's transaction (river's InsertTx).
func (s *Store) Tx() (pgx.Tx, bool) {
	tx, ok := s.db.(pgx.Tx)
	return tx, ok
}

const orderColumns = `id::text, hold_id::text, event_id::text, owner, status, total_amount, currency,
       created_at, updated_at, confirmed_at`

func scanOrder(r pgx.Row) (Order, error) {
	var o Order
	err := r.Scan(&o.ID, &o.HoldID, &o.EventID, &o.Owner, &o.Status, &o.TotalAmount, &o.Currency,
		&o.CreatedAt, &o.UpdatedAt, &o.ConfirmedAt)
	return o, err
}

const sqlInsertOrder = `
INSERT INTO orders (id, hold_id, event_id, owner, status, total_amount, currency)
VALUES ($1, $2, $3, $4, 'AWAITING_PAYMENT', $5, $6)
RETURNING ` + orderColumns

// InsertOrder records an AWAITING_PAYMENT order; a second order of one hold
// is a *ConflictError on orders_hold_id_key.
func (s *Store) InsertOrder(ctx context.Context, o Order) (Order, error) {
	o, err := scanOrder(s.db.QueryRow(ctx, sqlInsertOrder, o.ID, o.HoldID, o.EventID, o.Owner, o.TotalAmount, o.Currency))
	return o, wrap("insert order", err)
}

// GetOrder reads an order (ErrNotFound if absent).
func (s *Store) GetOrder(ctx context.Context, id string) (Order, error) {
	o, err := scanOrder(s.db.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE id = $1`, id))
	return o, wrap("get order", err)
}

var sqlLockOrder = `SELECT ` + orderColumns + ` FROM orders WHERE id = $1 FOR UPDATE`

// GetOrderForUpdate reads and locks an order (ErrNotFound if absent).
func (s *Store) GetOrderForUpdate(ctx context.Context, id string) (Order, error) {
	o, err := scanOrder(s.db.QueryRow(ctx, sqlLockOrder, id))
	return o, wrap("lock order", err)
}

// LockOrderPayment locks an order, then one of its payments (the lock
// order), in one round trip (pipelined), and returns both as locked
// (ErrNotFound if either is absent).
func (s *Store) LockOrderPayment(ctx context.Context, orderID, paymentID string) (Order, Payment, error) {
	var o Order
	var p Payment
	b := &pgx.Batch{}
	b.Queue(sqlLockOrder, orderID).QueryRow(func(r pgx.Row) (err error) {
		o, err = scanOrder(r)
		return err
	})
	b.Queue(sqlLockPayment, paymentID).QueryRow(func(r pgx.Row) (err error) {
		p, err = scanPayment(r)
		return err
	})
	return o, p, wrap("lock order and payment", s.db.SendBatch(ctx, b).Close())
}

// OrderByHold reads the order of a hold (ErrNotFound if none).
func (s *Store) OrderByHold(ctx context.Context, holdID string) (Order, error) {
	o, err := scanOrder(s.db.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE hold_id = $1`, holdID))
	return o, wrap("order by hold", err)
}

const sqlListOrders = `
SELECT ` + orderColumns + ` FROM orders
WHERE owner = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $4`

// ListOrders lists the owner's orders newest first, after the (createdAt,
// id) cursor when afterAt is not nil.
func (s *Store) ListOrders(ctx context.Context, owner string, afterAt *time.Time, afterID string, limit int) ([]Order, error) {
	var id *string
	if afterAt != nil {
		id = &afterID
	}
	rows, err := s.db.Query(ctx, sqlListOrders, owner, afterAt, id, limit)
	if err != nil {
		return nil, wrap("list orders", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) { return scanOrder(r) })
	return out, wrap("list orders", err)
}

// SetOrderStatus changes an order's status (and touches updated_at).
func (s *Store) SetOrderStatus(ctx context.Context, id, status string) error {
	_, err := s.db.Exec(ctx, `UPDATE orders SET status = $2, updated_at = now() WHERE id = $1`, id, status)
	return wrap("set order status", err)
}

const sqlTouchOrder = `UPDATE orders SET updated_at = now() WHERE id = $1`

// TouchOrder bumps updated_at so that subscribers see a payment change.
func (s *Store) TouchOrder(ctx context.Context, id string) error {
	_, err := s.db.Exec(ctx, sqlTouchOrder, id)
	return wrap("touch order", err)
}

const sqlExpirableOrders = `
SELECT o.id::text FROM orders o JOIN holds h ON h.id = o.hold_id
WHERE o.status IN ('AWAITING_PAYMENT', 'PAYMENT_FAILED')
  AND hold_status(h.status, h.expires_at) <> 'ACTIVE'
ORDER BY o.created_at
LIMIT $1`

// ExpirableOrders lists orders still awaiting payment whose hold is no
// longer active (by the database clock).
func (s *Store) ExpirableOrders(ctx context.Context, limit int) ([]string, error) {
	return s.strings(ctx, "expirable orders", sqlExpirableOrders, limit)
}

func (s *Store) strings(ctx context.Context, op, sql string, args ...any) ([]string, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, wrap(op, err)
}

const sqlLockHoldRows = `
SELECT i.id FROM inventory i JOIN hold_items hi ON hi.event_id = i.event_id AND hi.inventory_id = i.id
WHERE hi.hold_id = $2 AND i.event_id = $1
ORDER BY i.id
FOR UPDATE OF i`

// heldItems are a hold's items with their inventory rows (hi, i; $1 the
// event, $2 the hold), and stillHeld says a row is still HELD by that very
// hold, unexpired by the database clock: the confirmation's rule, once.
const (
	heldItems = `FROM hold_items hi JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
WHERE hi.hold_id = $2 AND hi.event_id = $1`
	stillHeld = `i.hold_id = $2 AND inventory_status(i.status, i.expires_at) = 'HELD'`
)

// sqlHeldCount counts a hold's items and those its rows still hold (to
// explain a refused sale).
const sqlHeldCount = `SELECT count(*), count(*) FILTER (WHERE ` + stillHeld + `) ` + heldItems

// sqlSellHold is the confirmation's inventory transition, all or nothing:
// the hold's rows become SOLD to the order only if the hold is ACTIVE and
// its items are as many as its rows still held (the subquery's hi and i
// are its own); otherwise nothing changes.
const sqlSellHold = `
UPDATE inventory i
SET status = 'SOLD', order_id = $3, version = nextval('inventory_version_seq'), updated_at = now()
FROM hold_items hi
WHERE hi.hold_id = $2 AND hi.event_id = $1 AND i.event_id = $1 AND i.id = hi.inventory_id
  AND EXISTS (SELECT 1 FROM holds h WHERE h.id = $2 AND h.status = 'ACTIVE')
  AND (SELECT count(*) = count(*) FILTER (WHERE ` + stillHeld + `) ` + heldItems + `)
RETURNING i.id, i.section_id::text, i.seat_id::text, i.version, i.unit_no`

// Sale is what SellHold found and did.
type Sale struct {
	Hold Hold // as locked
	// Items is the number of the hold's items, Held how many of their rows
	// the hold still held, unexpired, before the sale.
	Items, Held int
	// Sold is the rows sold: all of the hold's, or none.
	Sold []SoldUnit
}

// SellHold is a confirmation's sale, in one round trip (four statements
// pipelined, each seeing what the one before it did): it locks the hold,
// then its inventory rows in id order, counts them, and sells them to the
// order, all or none (sqlSellHold). The caller reads why from the Sale
// when nothing was sold.
func (s *Store) SellHold(ctx context.Context, eventID, holdID, orderID string) (Sale, error) {
	var sale Sale
	b := &pgx.Batch{}
	b.Queue(sqlGetHold+" FOR UPDATE", holdID).QueryRow(func(r pgx.Row) (err error) {
		sale.Hold, err = scanHold(r)
		return err
	})
	b.Queue(sqlLockHoldRows, eventID, holdID)
	b.Queue(sqlHeldCount, eventID, holdID).QueryRow(func(r pgx.Row) error {
		return r.Scan(&sale.Items, &sale.Held)
	})
	b.Queue(sqlSellHold, eventID, holdID, orderID).Query(func(rows pgx.Rows) error {
		var err error
		sale.Sold, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SoldUnit, error) {
			var u SoldUnit
			err := r.Scan(&u.InventoryID, &u.SectionID, &u.SeatID, &u.Version, &u.UnitNo)
			return u, err
		})
		return err
	})
	return sale, wrap("sell hold", s.db.SendBatch(ctx, b).Close())
}

const sqlPurchaseHold = `
WITH items AS (
    UPDATE hold_items SET period = tstzrange(lower(period), NULL) WHERE hold_id = $1
)
UPDATE holds SET status = 'PURCHASED', updated_at = now() WHERE id = $1`

const sqlConfirmOrder = `UPDATE orders SET status = 'CONFIRMED', confirmed_at = now(), updated_at = now()
WHERE id = $1 RETURNING ` + orderColumns

// CompleteSale writes the rest of a sale SellHold made, in one round trip
// (pipelined): the hold PURCHASED with its items' periods open-ended (the
// sale is forever), the tickets issued, the sale's outbox message, and the
// order CONFIRMED now, which it returns.
func (s *Store) CompleteSale(ctx context.Context, holdID, orderID, eventID string, ts []Ticket, message any) (Order, error) {
	outbox, err := s.outboxArgs(eventID, "inventory", message)
	if err != nil {
		return Order{}, err
	}
	var o Order
	b := &pgx.Batch{}
	b.Queue(sqlPurchaseHold, holdID)
	b.Queue(sqlInsertTickets, ticketArgs(ts)...)
	b.Queue(sqlOutboxInsert, outbox...)
	b.Queue(sqlConfirmOrder, orderID).QueryRow(func(r pgx.Row) error {
		o, err = scanOrder(r)
		return err
	})
	return o, wrap("complete sale", s.db.SendBatch(ctx, b).Close())
}

const sqlInsertTickets = `
INSERT INTO tickets (id, order_id, event_id, inventory_id, section_id, seat_id, code)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::bigint[], $5::uuid[], $6::uuid[], $7::text[])`

// ticketArgs are sqlInsertTickets' arguments: one array per column, so a
// sale's tickets cost one statement, not one each.
func ticketArgs(ts []Ticket) []any {
	n := len(ts)
	ids, orders, events, sections := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	inv, seats, codes := make([]int64, n), make([]*string, n), make([]string, n)
	for i, t := range ts {
		ids[i], orders[i], events[i], sections[i] = t.ID, t.OrderID, t.EventID, t.SectionID
		inv[i], seats[i], codes[i] = t.InventoryID, t.SeatID, t.Code
	}
	return []any{ids, orders, events, inv, sections, seats, codes}
}

const sqlOrderTickets = `
SELECT t.id::text, t.order_id::text, t.event_id::text, t.inventory_id, t.section_id::text, t.seat_id::text,
       i.unit_no, t.code, t.status, t.issued_at
FROM tickets t JOIN inventory i ON i.event_id = t.event_id AND i.id = t.inventory_id
WHERE t.order_id = $1 ORDER BY t.inventory_id`

// OrderTickets lists an order's tickets.
func (s *Store) OrderTickets(ctx context.Context, orderID string) ([]Ticket, error) {
	rows, err := s.db.Query(ctx, sqlOrderTickets, orderID)
	if err != nil {
		return nil, wrap("order tickets", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Ticket, error) {
		var t Ticket
		err := r.Scan(&t.ID, &t.OrderID, &t.EventID, &t.InventoryID, &t.SectionID, &t.SeatID, &t.UnitNo,
			&t.Code, &t.Status, &t.IssuedAt)
		return t, err
	})
	return out, wrap("order tickets", err)
}

// sqlOrderFingerprints: a cheap value per order that changes whenever the
// order or one of its payments changes.
const sqlOrderFingerprints = `SELECT o.id::text, o.status || '|' || o.updated_at::text || '|' ||
  coalesce((SELECT max(updated_at)::text || count(*)::text FROM payments WHERE order_id = o.id), '')
FROM orders o WHERE o.id = ANY($1::uuid[])`

// OrderFingerprint is the order's fingerprint (subscriptions compare it).
func (s *Store) OrderFingerprint(ctx context.Context, id string) (string, error) {
	fps, err := s.OrderFingerprints(ctx, []string{id})
	if err != nil {
		return "", err
	}
	f, ok := fps[id]
	if !ok {
		return "", wrap("order fingerprint", ErrNotFound)
	}
	return f, nil
}

// OrderFingerprints returns the fingerprint of each of the orders that
// exists (one query for every order an instance streams).
func (s *Store) OrderFingerprints(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, sqlOrderFingerprints, ids)
	if err != nil {
		return nil, wrap("order fingerprints", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, f string
		if err := rows.Scan(&id, &f); err != nil {
			return nil, wrap("order fingerprints", err)
		}
		out[id] = f
	}
	return out, wrap("order fingerprints", rows.Err())
}
