package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The SQL of what happens after a sale: refunds (an order's tickets void
// and its seats back on sale), an event's cancellation, and admission at
// the door. Lock order as in orders.go: order -> payment -> hold ->
// inventory rows (in id order) -> tickets.

const sqlLockOrderRows = `
SELECT id FROM inventory WHERE event_id = $1 AND order_id = $2 AND status = 'SOLD'
ORDER BY id
FOR UPDATE`

const sqlReturnOrderRows = `
UPDATE inventory
SET status = 'AVAILABLE', hold_id = NULL, owner = NULL, expires_at = NULL, order_id = NULL,
    version = nextval('inventory_version_seq'), updated_at = now()
WHERE event_id = $1 AND id = ANY($3::bigint[]) AND order_id = $2 AND status = 'SOLD'
RETURNING id, section_id::text, seat_id::text, version`

// sqlCloseSoldItems ends the open-ended periods of a sold hold's items, so
// that the exclusion constraint lets a new hold take them.
const sqlCloseSoldItems = `
UPDATE hold_items SET period = tstzrange(lower(period), greatest(lower(period), clock_timestamp()))
WHERE hold_id = $1 AND upper_inf(period)`

// ReturnOrderSeats puts the inventory rows SOLD to an order back on sale
// (AVAILABLE, new versions; locked in id order) and closes its hold's item
// periods. It returns the rows freed; the caller writes the outbox.
func (s *Store) ReturnOrderSeats(ctx context.Context, eventID, holdID, orderID string) ([]InventoryUnit, error) {
	ids, err := s.ids(ctx, "lock order rows", sqlLockOrderRows, eventID, orderID)
	if err != nil {
		return nil, err
	}
	var units []InventoryUnit
	if len(ids) > 0 {
		if units, err = s.units(ctx, "return order seats", sqlReturnOrderRows, eventID, orderID, ids); err != nil {
			return nil, err
		}
	}
	_, err = s.db.Exec(ctx, sqlCloseSoldItems, holdID)
	return units, wrap("close sold items", err)
}

// VoidOrderTickets voids an order's VALID and USED tickets; it returns how
// many it voided.
func (s *Store) VoidOrderTickets(ctx context.Context, orderID string) (int64, error) {
	tag, err := s.db.Exec(ctx, `UPDATE tickets SET status = 'VOID' WHERE order_id = $1 AND status IN ('VALID', 'USED')`, orderID)
	return tag.RowsAffected(), wrap("void order tickets", err)
}

// RefundOrder marks a CONFIRMED order REFUNDED now; false if it was not
// CONFIRMED.
func (s *Store) RefundOrder(ctx context.Context, id string) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE orders SET status = 'REFUNDED', refunded_at = now(), updated_at = now()
WHERE id = $1 AND status = 'CONFIRMED'`, id)
	return tag.RowsAffected() == 1, wrap("refund order", err)
}

// EventForUpdate reads and locks an event row.
func (s *Store) EventForUpdate(ctx context.Context, id string) (Event, error) {
	rows, err := s.db.Query(ctx, `SELECT `+eventCols+` FROM events e WHERE e.id = $1 FOR UPDATE`, id)
	if err != nil {
		return Event{}, wrap("lock event", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Event])
	return e, wrap("lock event", err)
}

// CancelEvent records an event's cancellation (once: a repeat keeps the
// first time and reason) with a new catalog version for the search
// projection; it returns the cancellation time and whether this call
// cancelled it.
func (s *Store) CancelEvent(ctx context.Context, id, reason string) (time.Time, bool, error) {
	var at time.Time
	err := s.db.QueryRow(ctx, `UPDATE events SET cancelled_at = now(), cancel_reason = $2, version = version + 1
WHERE id = $1 AND cancelled_at IS NULL RETURNING cancelled_at`, id, reason).Scan(&at)
	if err == pgx.ErrNoRows {
		err = s.db.QueryRow(ctx, `SELECT cancelled_at FROM events WHERE id = $1`, id).Scan(&at)
		return at, false, wrap("cancel event", err)
	}
	if err != nil {
		return at, false, wrap("cancel event", err)
	}
	s.markOutbox()
	_, err = s.db.Exec(ctx, `INSERT INTO outbox (event_id, topic, payload)
SELECT id, 'catalog', jsonb_build_object('eventId', id, 'version', version) FROM events WHERE id = $1`, id)
	return at, true, wrap("cancel event outbox", err)
}

// ActiveHoldsOfEvent lists the ids of an event's ACTIVE holds.
func (s *Store) ActiveHoldsOfEvent(ctx context.Context, eventID string) ([]string, error) {
	return s.strings(ctx, "active holds of event", `SELECT id::text FROM holds WHERE event_id = $1 AND status = 'ACTIVE' ORDER BY id`, eventID)
}

// OrdersOfEvent lists the ids of an event's orders in one of statuses.
func (s *Store) OrdersOfEvent(ctx context.Context, eventID string, statuses []string) ([]string, error) {
	return s.strings(ctx, "orders of event", `SELECT id::text FROM orders WHERE event_id = $1 AND status = ANY($2) ORDER BY created_at, id`,
		eventID, statuses)
}

const ticketColumns = `t.id::text, t.order_id::text, t.event_id::text, t.inventory_id, t.section_id::text, t.seat_id::text,
       i.unit_no, t.code, t.status, t.issued_at`

func scanTicket(r pgx.Row) (Ticket, error) {
	var t Ticket
	err := r.Scan(&t.ID, &t.OrderID, &t.EventID, &t.InventoryID, &t.SectionID, &t.SeatID, &t.UnitNo,
		&t.Code, &t.Status, &t.IssuedAt)
	return t, err
}

// GetTicket reads a ticket (ErrNotFound if absent).
func (s *Store) GetTicket(ctx context.Context, id string) (Ticket, error) {
	t, err := scanTicket(s.db.QueryRow(ctx, `SELECT `+ticketColumns+`
FROM tickets t JOIN inventory i ON i.event_id = t.event_id AND i.id = t.inventory_id WHERE t.id = $1`, id))
	return t, wrap("get ticket", err)
}

// AdmitTicket marks a VALID ticket of the event USED; false if it is not
// VALID (or not of that event). Concurrent calls for one ticket: the row
// lock makes the second see USED, so exactly one is admitted.
func (s *Store) AdmitTicket(ctx context.Context, id, eventID string) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE tickets SET status = 'USED', used_at = now()
WHERE id = $1 AND event_id = $2 AND status = 'VALID'`, id, eventID)
	return tag.RowsAffected() == 1, wrap("admit ticket", err)
}

// AwaitTransactionsInFlight waits until every transaction running when it
// is called (those in the xip list of a snapshot taken now) has committed
// or aborted, polling every 20 ms, or until ctx ends. A transaction that
// has not got an id yet will take its snapshots after this call.
func (s *Store) AwaitTransactionsInFlight(ctx context.Context) error {
	var snap string
	if err := s.db.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		return wrap("snapshot", err)
	}
	for {
		var done bool
		err := s.db.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM pg_snapshot_xip($1::pg_snapshot) x
WHERE pg_xact_status(x) = 'in progress')`, snap).Scan(&done)
		if err != nil || done {
			return wrap("transactions in flight", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
