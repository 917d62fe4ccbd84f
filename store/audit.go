package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The SQL of `ticketing audit`: read-only explanations of an event's
// inventory and money, and the anomaly checks.

// AuditUnit is one seat or GA unit of an event with who has it.
type AuditUnit struct {
	InventoryID  int64
	SectionID    string
	SectionName  string
	SeatID       *string
	SeatLabel    *string // "row-number"
	UnitNo       *int
	Status       string // AVAILABLE, HELD, SOLD; a HELD row past expiry reads AVAILABLE
	HoldID       *string
	Owner        *string
	ExpiresAt    *time.Time
	OrderID      *string
	OrderStatus  *string
	PaymentID    *string // the order's succeeded (or refunded) attempt, if any
	TicketID     *string
	TicketStatus *string
}

const sqlAuditUnits = `
SELECT i.id, i.section_id::text, sec.name, i.seat_id::text,
       CASE WHEN s.id IS NULL THEN NULL ELSE s.row_label || '-' || s.number END, i.unit_no,
       inventory_status(i.status, i.expires_at),
       i.hold_id::text, i.owner, i.expires_at, o.id::text, o.status,
       (SELECT p.id::text FROM payments p WHERE p.order_id = o.id AND p.status IN ('SUCCEEDED', 'REFUND_PENDING', 'REFUNDED')
        ORDER BY (p.status = 'SUCCEEDED') DESC, p.attempt LIMIT 1),
       t.id::text, t.status
FROM inventory i
JOIN sections sec ON sec.id = i.section_id
LEFT JOIN seats s ON s.id = i.seat_id
LEFT JOIN orders o ON o.id = coalesce(i.order_id, (SELECT id FROM orders WHERE hold_id = i.hold_id))
LEFT JOIN LATERAL (SELECT id, status FROM tickets WHERE event_id = i.event_id AND inventory_id = i.id
                   ORDER BY (status IN ('VALID', 'USED')) DESC, issued_at DESC LIMIT 1) t ON true
WHERE i.event_id = $1
ORDER BY sec.name, s.row_index NULLS LAST, s.number, i.unit_no`

// AuditUnits lists every seat and GA unit of the event.
func (s *Store) AuditUnits(ctx context.Context, eventID string) ([]AuditUnit, error) {
	rows, err := s.db.Query(ctx, sqlAuditUnits, eventID)
	if err != nil {
		return nil, wrap("audit units", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditUnit, error) {
		var u AuditUnit
		err := r.Scan(&u.InventoryID, &u.SectionID, &u.SectionName, &u.SeatID, &u.SeatLabel, &u.UnitNo, &u.Status,
			&u.HoldID, &u.Owner, &u.ExpiresAt, &u.OrderID, &u.OrderStatus, &u.PaymentID, &u.TicketID, &u.TicketStatus)
		return u, err
	})
	return out, wrap("audit units", err)
}

// AuditPayment is a payment of the event with its order.
type AuditPayment struct {
	Payment
	OrderStatus string
	Owner       string
	LastReason  string
}

// AuditPayments lists the payments of the event's orders.
func (s *Store) AuditPayments(ctx context.Context, eventID string) ([]AuditPayment, error) {
	rows, err := s.db.Query(ctx, `
SELECT p.id::text, p.order_id::text, p.attempt, p.status, p.amount, p.currency, p.provider, p.provider_ref,
       p.idempotency_key, p.checkout_url, p.created_at, p.updated_at, o.status, o.owner,
       coalesce((SELECT reason FROM payment_events e WHERE e.payment_id = p.id ORDER BY e.id DESC LIMIT 1), '')
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 ORDER BY p.created_at, p.id`, eventID)
	if err != nil {
		return nil, wrap("audit payments", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditPayment, error) {
		var a AuditPayment
		p := &a.Payment
		err := r.Scan(&p.ID, &p.OrderID, &p.Attempt, &p.Status, &p.Amount, &p.Currency, &p.Provider, &p.ProviderRef,
			&p.IdempotencyKey, &p.CheckoutURL, &p.CreatedAt, &p.UpdatedAt, &a.OrderStatus, &a.Owner, &a.LastReason)
		return a, err
	})
	return out, wrap("audit payments", err)
}

// AuditCheck is one anomaly query: each row it returns is one anomaly,
// described in one line of text. $1 is the event; $2 the refund grace in
// seconds.
type AuditCheck struct {
	Kind string
	SQL  string
}

// The provider payment id and our reference in a webhook_inbox payload
// (paysim: data.id, data.reference; Stripe: data.object's payment_intent
// or id, metadata.reference; a body that was not JSON:
// orders.ApplyNotification's payment.id, payment.reference).
const (
	inboxPaymentID = `coalesce(w.payload->'data'->>'id', w.payload->'data'->'object'->>'payment_intent', w.payload->'data'->'object'->>'id', w.payload->'payment'->>'id')`
	inboxReference = `coalesce(w.payload->'data'->>'reference', w.payload->'data'->'object'->'metadata'->>'reference', w.payload->'payment'->>'reference')`
)

// AuditChecks are the anomaly checks of an event.
var AuditChecks = []AuditCheck{
	{"SEAT_SOLD_TWICE", `
SELECT 'inventory ' || hi.inventory_id || ' sold by ' || count(*) || ' confirmed orders: ' || string_agg(o.id::text, ', ')
FROM hold_items hi JOIN orders o ON o.hold_id = hi.hold_id AND o.status = 'CONFIRMED'
WHERE hi.event_id = $1 AND $2::float8 >= 0
GROUP BY hi.inventory_id HAVING count(*) > 1
UNION ALL
SELECT 'inventory ' || inventory_id || ' has ' || count(*) || ' valid or used tickets'
FROM tickets WHERE event_id = $1 AND status IN ('VALID', 'USED') GROUP BY inventory_id HAVING count(*) > 1`},
	{"SOLD_WITHOUT_TICKET", `
SELECT 'inventory ' || i.id || ' is SOLD to order ' || coalesce(i.order_id::text, '?') || ' without a valid ticket'
FROM inventory i
WHERE i.event_id = $1 AND $2::float8 >= 0 AND i.status = 'SOLD'
  AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.event_id = i.event_id AND t.inventory_id = i.id AND t.status IN ('VALID', 'USED'))`},
	{"TICKET_WITHOUT_SALE", `
SELECT 'ticket ' || t.id || ' (order ' || t.order_id || ') is ' || t.status || ' but inventory ' || t.inventory_id || ' is ' ||
       i.status || coalesce(' to order ' || i.order_id::text, '')
FROM tickets t JOIN inventory i ON i.event_id = t.event_id AND i.id = t.inventory_id
WHERE t.event_id = $1 AND $2::float8 >= 0 AND t.status IN ('VALID', 'USED')
  AND (i.status <> 'SOLD' OR i.order_id IS DISTINCT FROM t.order_id)`},
	{"CONFIRMED_WITHOUT_PAYMENT", `
SELECT 'order ' || o.id || ' is CONFIRMED without a succeeded payment'
FROM orders o WHERE o.event_id = $1 AND $2::float8 >= 0 AND o.status = 'CONFIRMED'
  AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id AND p.status = 'SUCCEEDED')`},
	{"PAYMENT_WITHOUT_ORDER", `
SELECT 'payment ' || p.id || ' SUCCEEDED (' || p.amount || ' ' || p.currency || ') but order ' || o.id || ' is ' || o.status || ' and no refund is under way'
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND $2::float8 >= 0 AND p.status = 'SUCCEEDED' AND o.status <> 'CONFIRMED'`},
	{"REDUNDANT_CHARGE", `
SELECT 'order ' || o.id || ' has ' || count(*) || ' SUCCEEDED payments kept: ' || string_agg(p.id::text, ', ')
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND $2::float8 >= 0 AND p.status = 'SUCCEEDED'
GROUP BY o.id HAVING count(*) > 1`},
	{"REFUND_OVERDUE", `
SELECT 'payment ' || p.id || ' REFUND_PENDING since ' || p.updated_at
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND p.status = 'REFUND_PENDING' AND p.updated_at < now() - $2::float8 * interval '1 second'`},
	{"PARTIAL_REFUND", `
SELECT 'payment ' || p.id || ' of order ' || o.id || ' (' || o.status || '): the provider reports ' ||
       coalesce(p.refunded_amount::text, '?') || ' of ' || p.amount || ' ' || p.currency || ' refunded: decide (refund the rest, or keep the order)'
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND $2::float8 >= 0 AND p.reversal = 'partial_refund' AND p.status = 'SUCCEEDED'`},
	{"PAYMENT_MISMATCH", `
SELECT 'provider payment ' || m.provider_payment_id || ' (' || m.provider_status || ', ' || m.amount || ' ' || m.currency ||
       ') names attempt ' || p.id || ' (' || p.amount || ' ' || p.currency || ') of order ' || o.id || ': never confirms; not yet voided or refunded'
FROM payment_mismatches m JOIN payments p ON p.id = m.payment_id JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND $2::float8 >= 0 AND m.resolved_at IS NULL`},
	{"OPEN_ATTEMPT_ON_ENDED_ORDER", `
SELECT 'payment ' || p.id || ' is still ' || p.status || ' on order ' || o.id || ' (' || o.status || ') since ' || p.updated_at || ': void it'
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND o.status IN ('EXPIRED', 'CANCELLED', 'CONFIRMED', 'REFUNDED')
  AND p.status IN ('PENDING', 'UNKNOWN') AND p.updated_at < now() - $2::float8 * interval '1 second'`},
	// Stripe keeps a declined PaymentIntent payable (payments.FailedMaySucceed).
	{"PAYABLE_FAILED_ATTEMPT", `
SELECT 'payment ' || p.id || ' (' || p.provider || ' ' || coalesce(p.provider_ref, '?') || ') is FAILED but still payable on order ' ||
       o.id || ' (' || o.status || '): void it'
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND o.status IN ('EXPIRED', 'CANCELLED', 'CONFIRMED', 'REFUNDED')
  AND p.status = 'FAILED' AND p.provider = 'stripe' AND p.provider_ref IS NOT NULL
  AND p.updated_at < now() - $2::float8 * interval '1 second'`},
	{"CONFIRMED_WITHOUT_SALE", `
SELECT 'order ' || o.id || ' is CONFIRMED with ' ||
       (SELECT count(*) FROM inventory i WHERE i.event_id = o.event_id AND i.order_id = o.id AND i.status = 'SOLD') || ' seats sold and ' ||
       (SELECT count(*) FROM tickets t WHERE t.order_id = o.id AND t.status IN ('VALID', 'USED')) || ' tickets'
FROM orders o
WHERE o.event_id = $1 AND $2::float8 >= 0 AND o.status = 'CONFIRMED'
  AND (NOT EXISTS (SELECT 1 FROM inventory i WHERE i.event_id = o.event_id AND i.order_id = o.id AND i.status = 'SOLD')
       OR NOT EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = o.id AND t.status IN ('VALID', 'USED')))`},
	{"SOLD_WITHOUT_CONFIRMED_ORDER", `
SELECT 'inventory ' || i.id || ' is SOLD to order ' || o.id || ' which is ' || o.status
FROM inventory i JOIN orders o ON o.id = i.order_id
WHERE i.event_id = $1 AND $2::float8 >= 0 AND i.status = 'SOLD' AND o.status <> 'CONFIRMED'`},
	{"UNMATCHED_NOTIFICATION", `
SELECT 'notification ' || w.id || ' (' || w.provider || ' ' || w.type || ') names attempt ' || p.id || ' by reference but provider payment ' ||
       coalesce(` + inboxPaymentID + `, '?') || ', which is neither the attempt''s nor a recorded mismatch'
FROM webhook_inbox w
JOIN payments p ON p.id::text = ` + inboxReference + `
JOIN orders o ON o.id = p.order_id
WHERE o.event_id = $1 AND $2::float8 >= 0 AND w.provider = p.provider
  AND ` + inboxPaymentID + ` IS DISTINCT FROM p.provider_ref
  AND NOT EXISTS (SELECT 1 FROM payment_mismatches m WHERE m.provider = w.provider AND m.provider_payment_id = ` + inboxPaymentID + `)`},
	// Of no event: every event's audit reports them. (A payload naming
	// no payment at all, which no provider sends, is left out.)
	{"UNKNOWN_NOTIFICATION", `
SELECT 'notification ' || w.id || ' (' || w.provider || ' ' || w.type || ', provider payment ' || coalesce(` + inboxPaymentID + `, '?') ||
       ') matched no payment of any event (of no event: every event''s audit reports it)'
FROM webhook_inbox w
WHERE $1::uuid IS NOT NULL AND $2::float8 >= 0 AND w.processed_at IS NOT NULL
  AND coalesce(` + inboxPaymentID + `, ` + inboxReference + `) IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.provider = w.provider
                  AND (p.provider_ref = ` + inboxPaymentID + ` OR p.id::text = ` + inboxReference + `))
  AND NOT EXISTS (SELECT 1 FROM payment_mismatches m WHERE m.provider = w.provider AND m.provider_payment_id = ` + inboxPaymentID + `)
UNION ALL
SELECT 'provider payment ' || m.provider_payment_id || ' (' || m.provider || ', ' || m.provider_status || ', ' || m.amount || ' ' || m.currency ||
       ') is a mismatch bound to no attempt, not yet voided or refunded (of no event: every event''s audit reports it)'
FROM payment_mismatches m
WHERE $1::uuid IS NOT NULL AND m.payment_id IS NULL AND m.resolved_at IS NULL`},
	{"ACTIVE_HOLD_NOT_HELD", `
SELECT 'hold ' || h.id || ' is ACTIVE until ' || h.expires_at || ' but inventory ' || i.id || ' is ' || i.status ||
       coalesce(' by hold ' || i.hold_id::text, '')
FROM holds h JOIN hold_items hi ON hi.hold_id = h.id
JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
WHERE h.event_id = $1 AND $2::float8 >= 0 AND hold_status(h.status, h.expires_at) = 'ACTIVE'
  AND NOT (i.status = 'HELD' AND i.hold_id = h.id)`},
	{"CAPACITY_MISMATCH", `
SELECT 'section ' || sec.name || ' (' || sec.id || '): held ' || count(i.id) FILTER (WHERE inventory_status(i.status, i.expires_at) = 'HELD') ||
       ' + sold ' || count(i.id) FILTER (WHERE i.status = 'SOLD') ||
       ' + available ' || count(i.id) FILTER (WHERE inventory_holdable(i.status, i.expires_at)) ||
       ' <> capacity ' || sec.capacity
FROM events e JOIN sections sec ON sec.venue_id = e.venue_id
LEFT JOIN inventory i ON i.event_id = e.id AND i.section_id = sec.id
WHERE e.id = $1 AND $2::float8 >= 0
GROUP BY sec.id, sec.name, sec.capacity
HAVING count(i.id) <> sec.capacity`},
}

// AuditRun runs one check and returns its anomaly lines.
func (s *Store) AuditRun(ctx context.Context, c AuditCheck, eventID string, refundGrace time.Duration) ([]string, error) {
	return s.strings(ctx, "audit "+c.Kind, c.SQL, eventID, refundGrace.Seconds())
}

// EventExists reports whether the event exists.
func (s *Store) EventExists(ctx context.Context, eventID string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, eventID).Scan(&ok)
	return ok, wrap("event exists", err)
}
