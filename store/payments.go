package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Payment is a row of payments: one attempt to pay an order.
type Payment struct {
	ID             string
	OrderID        string
	Attempt        int
	Status         string
	Amount         int64
	Currency       string
	Provider       string
	ProviderRef    *string
	IdempotencyKey string
	CheckoutURL    *string
	// Request is what the attempt was created with at the provider (nil on
	// rows older than migration 00011): every repeated create of the
	// attempt sends exactly this, whatever instance repeats it.
	Request   *PaymentRequest
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PaymentRequest is the persisted provider request of an attempt (with the
// row's amount and currency).
type PaymentRequest struct {
	Reference  string
	WebhookURL string
	ReturnURL  string
	// Simulate is the sandbox's fault-injection object as sent (JSON), or
	// empty.
	Simulate string
}

// PaymentEvent is one recorded transition of a payment.
type PaymentEvent struct {
	PaymentID  string
	FromStatus *string
	ToStatus   string
	Reason     string
	CreatedAt  time.Time
}

const paymentColumns = `id::text, order_id::text, attempt, status, amount, currency, provider, provider_ref,
       idempotency_key, checkout_url, created_at, updated_at,
       request_reference, request_webhook_url, request_return_url, request_simulate`

func scanPayment(r pgx.Row) (Payment, error) {
	var (
		p                      Payment
		ref, hook, ret, simul8 *string
	)
	err := r.Scan(&p.ID, &p.OrderID, &p.Attempt, &p.Status, &p.Amount, &p.Currency, &p.Provider, &p.ProviderRef,
		&p.IdempotencyKey, &p.CheckoutURL, &p.CreatedAt, &p.UpdatedAt, &ref, &hook, &ret, &simul8)
	if err == nil && ref != nil && hook != nil {
		p.Request = &PaymentRequest{Reference: *ref, WebhookURL: *hook}
		if ret != nil {
			p.Request.ReturnURL = *ret
		}
		if simul8 != nil {
			p.Request.Simulate = *simul8
		}
	}
	return p, err
}

func (s *Store) payments(ctx context.Context, op, sql string, args ...any) ([]Payment, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Payment, error) { return scanPayment(r) })
	return out, wrap(op, err)
}

const sqlInsertPayment = `
WITH p AS (
    INSERT INTO payments (id, order_id, attempt, status, amount, currency, provider, idempotency_key,
                          request_reference, request_webhook_url, request_return_url, request_simulate)
    SELECT $1, $2, coalesce(max(attempt), 0) + 1, 'UNKNOWN', $3, $4, $5, $6, $8, $9, $10, $11
    FROM payments WHERE order_id = $2
    RETURNING ` + paymentColumns + `
), e AS (
    INSERT INTO payment_events (payment_id, from_status, to_status, reason) VALUES ($1, NULL, 'UNKNOWN', $7)
)
SELECT * FROM p`

// InsertPayment opens the next attempt of an order in status UNKNOWN (the
// provider has not answered yet) with the provider request it is created
// with (p.Request, if set), and records it in payment_events. A second open
// attempt is a *ConflictError on payments_one_open.
func (s *Store) InsertPayment(ctx context.Context, p Payment, reason string) (Payment, error) {
	var ref, hook, ret, simul8 *string
	if r := p.Request; r != nil {
		ref, hook = &r.Reference, &r.WebhookURL
		if r.ReturnURL != "" {
			ret = &r.ReturnURL
		}
		if r.Simulate != "" {
			simul8 = &r.Simulate
		}
	}
	p, err := scanPayment(s.db.QueryRow(ctx, sqlInsertPayment, p.ID, p.OrderID, p.Amount, p.Currency, p.Provider, p.IdempotencyKey, reason,
		ref, hook, ret, simul8))
	return p, wrap("insert payment", err)
}

// GetPayment reads a payment (ErrNotFound if absent).
func (s *Store) GetPayment(ctx context.Context, id string) (Payment, error) {
	p, err := scanPayment(s.db.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE id = $1`, id))
	return p, wrap("get payment", err)
}

var sqlLockPayment = `SELECT ` + paymentColumns + ` FROM payments WHERE id = $1 FOR UPDATE`

// GetPaymentForUpdate reads and locks a payment (ErrNotFound if absent).
func (s *Store) GetPaymentForUpdate(ctx context.Context, id string) (Payment, error) {
	p, err := scanPayment(s.db.QueryRow(ctx, sqlLockPayment, id))
	return p, wrap("lock payment", err)
}

var sqlPaymentForNotification = `SELECT ` + paymentColumns + ` FROM payments
WHERE provider = $1 AND (provider_ref = $2 OR (id = nullif($3, '')::uuid AND (provider_ref IS NULL OR provider_ref = $2)))
ORDER BY provider_ref IS NULL LIMIT 1`

// InboxPayment records a provider notification as InboxInsert does and
// finds the payment it is about, in one round trip (pipelined): by the
// provider's id, or else by our reference (the attempt id, when the
// create's answer never came) if that attempt has no provider id yet or
// this one. One statement, so one snapshot: an answer recorded
// concurrently cannot make the notification miss both ways. fresh is false
// for a duplicate, found false when no payment matches.
func (s *Store) InboxPayment(ctx context.Context, id, provider, typ string, payload []byte, ref, reference string) (fresh, found bool, p Payment, err error) {
	b := &pgx.Batch{}
	b.Queue(sqlInboxInsert, id, provider, typ, payload).Exec(func(tag pgconn.CommandTag) error {
		fresh = tag.RowsAffected() == 1
		return nil
	})
	b.Queue(sqlPaymentForNotification, provider, ref, reference).QueryRow(func(r pgx.Row) error {
		var err error
		p, err = scanPayment(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	return fresh, found, p, wrap("inbox insert", s.db.SendBatch(ctx, b).Close())
}

// OrderPayments lists an order's attempts, oldest first.
func (s *Store) OrderPayments(ctx context.Context, orderID string) ([]Payment, error) {
	return s.payments(ctx, "order payments", `SELECT `+paymentColumns+` FROM payments WHERE order_id = $1 ORDER BY attempt`, orderID)
}

// SetPaymentProviderRef records the provider's id and checkout page of an
// attempt (first answer wins).
func (s *Store) SetPaymentProviderRef(ctx context.Context, id, ref, checkoutURL string) error {
	_, err := s.db.Exec(ctx, `UPDATE payments SET provider_ref = coalesce(provider_ref, $2),
  checkout_url = coalesce(checkout_url, nullif($3, '')), updated_at = now() WHERE id = $1`, id, ref, checkoutURL)
	return wrap("set provider ref", err)
}

const sqlTransitionPayment = `
WITH u AS (
    UPDATE payments SET status = $3, updated_at = now() WHERE id = $1 AND status = $2 RETURNING id
)
INSERT INTO payment_events (payment_id, from_status, to_status, reason)
SELECT id, $2, $3, $4 FROM u`

// TransitionPayment is the only write of a payment's status: a
// compare-and-set from -> to (the status the caller read), recording reason
// in payment_events; ok is false (and nothing changes) if it was no longer
// in from, and the caller re-reads and re-decides.
func (s *Store) TransitionPayment(ctx context.Context, id, from, to, reason string) (bool, error) {
	tag, err := s.db.Exec(ctx, sqlTransitionPayment, id, from, to, reason)
	return tag.RowsAffected() == 1, wrap("transition payment", err)
}

// TransitionOrderPayment is TransitionPayment with its order's updated_at
// bumped (so that subscribers see the payment change), in one round trip;
// the order is bumped even when ok is false.
func (s *Store) TransitionOrderPayment(ctx context.Context, orderID, id, from, to, reason string) (ok bool, err error) {
	b := &pgx.Batch{}
	b.Queue(sqlTransitionPayment, id, from, to, reason).Exec(func(tag pgconn.CommandTag) error {
		ok = tag.RowsAffected() == 1
		return nil
	})
	b.Queue(sqlTouchOrder, orderID)
	return ok, wrap("transition payment", s.db.SendBatch(ctx, b).Close())
}

// RecordPaymentEvent records a note on a payment without changing it (for
// example an ignored out-of-order notification).
func (s *Store) RecordPaymentEvent(ctx context.Context, id, status, reason string) error {
	_, err := s.db.Exec(ctx, `INSERT INTO payment_events (payment_id, from_status, to_status, reason) VALUES ($1, $2, $2, $3)`, id, status, reason)
	return wrap("record payment event", err)
}

// PaymentEvents lists the transitions of a payment, oldest first.
func (s *Store) PaymentEvents(ctx context.Context, id string) ([]PaymentEvent, error) {
	rows, err := s.db.Query(ctx, `SELECT payment_id::text, from_status, to_status, reason, created_at
FROM payment_events WHERE payment_id = $1 ORDER BY id`, id)
	if err != nil {
		return nil, wrap("payment events", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentEvent, error) {
		var e PaymentEvent
		err := r.Scan(&e.PaymentID, &e.FromStatus, &e.ToStatus, &e.Reason, &e.CreatedAt)
		return e, err
	})
	return out, wrap("payment events", err)
}

// UnsettledPayments lists payments PENDING, UNKNOWN or REFUND_PENDING that
// neither changed nor were checked (MarkPaymentChecked) for olderThan, least
// recently looked at first, so that payments the provider keeps reporting
// unchanged never starve the others. UNKNOWN attempts older than keyWindow
// (the provider's idempotency window) are left out: they are not repeated.
func (s *Store) UnsettledPayments(ctx context.Context, olderThan, keyWindow time.Duration, limit int) ([]Payment, error) {
	return s.payments(ctx, "unsettled payments", `SELECT `+paymentColumns+` FROM payments
WHERE status IN ('PENDING', 'UNKNOWN', 'REFUND_PENDING')
  AND greatest(checked_at, updated_at) < now() - $1 * interval '1 second'
  AND NOT (status = 'UNKNOWN' AND provider_ref IS NULL AND created_at < now() - $3 * interval '1 second')
ORDER BY greatest(checked_at, updated_at) LIMIT $2`, olderThan.Seconds(), limit, keyWindow.Seconds())
}

// PaymentsToRecheck lists payments of provider in status (FAILED: it may
// still succeed, Stripe; SUCCEEDED: a refund or dispute may follow, its
// notification lost) that reached it within the last `within` and are due
// for another question to the provider: first `after` reaching it, then
// each time after waiting as long as the payment had been in it at the
// previous check (so about log2(within/after) checks in all), least
// recently looked at first.
func (s *Store) PaymentsToRecheck(ctx context.Context, status, provider string, after, within time.Duration, limit int) ([]Payment, error) {
	return s.payments(ctx, "payments to recheck", `SELECT `+paymentColumns+` FROM payments
WHERE status = $5 AND provider = $1 AND provider_ref IS NOT NULL
  AND updated_at > now() - $3 * interval '1 second'
  AND greatest(checked_at, updated_at) < now() - greatest($2 * interval '1 second', greatest(checked_at, updated_at) - updated_at)
ORDER BY greatest(checked_at, updated_at) LIMIT $4`, provider, after.Seconds(), within.Seconds(), limit, status)
}

// PaymentsToVoid lists attempts that must be voided at the provider but are
// still open (PENDING or UNKNOWN with a provider id) on an order that has
// ended (EXPIRED, CANCELLED, CONFIRMED by another attempt, REFUNDED), and,
// when payableFailedProvider is set (Stripe), FAILED attempts of that
// provider on such orders (their intent stays payable), untouched for
// olderThan. The reconciler enqueues their void again.
// UNKNOWN attempts without a provider id past keyWindow are left out (not
// repeated: a person resolves them).
func (s *Store) PaymentsToVoid(ctx context.Context, payableFailedProvider string, olderThan, keyWindow time.Duration, limit int) ([]string, error) {
	return s.strings(ctx, "payments to void", `SELECT p.id::text FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.status IN ('EXPIRED', 'CANCELLED', 'CONFIRMED', 'REFUNDED')
  AND (p.status = 'PENDING'
       OR (p.status = 'UNKNOWN' AND (p.provider_ref IS NOT NULL OR p.created_at >= now() - $4 * interval '1 second'))
       OR (p.status = 'FAILED' AND p.provider = nullif($1, '') AND p.provider_ref IS NOT NULL))
  AND greatest(p.checked_at, p.updated_at) < now() - $2 * interval '1 second'
ORDER BY greatest(p.checked_at, p.updated_at) LIMIT $3`, payableFailedProvider, olderThan.Seconds(), limit, keyWindow.Seconds())
}

// MarkPaymentChecked records that the reconciler looked at a payment (asked
// the provider, or re-enqueued its refund); updated_at stays the time of
// its last change.
func (s *Store) MarkPaymentChecked(ctx context.Context, id string) error {
	_, err := s.db.Exec(ctx, `UPDATE payments SET checked_at = now() WHERE id = $1`, id)
	return wrap("mark payment checked", err)
}

// SetPaymentReversal records a reversal the provider reported on a payment
// (kind refund, dispute or partial_refund; amount: what was refunded, 0 if
// unknown). A later report of a full refund or dispute replaces a partial
// one, never the other way round.
func (s *Store) SetPaymentReversal(ctx context.Context, id, kind string, amount int64) error {
	_, err := s.db.Exec(ctx, `UPDATE payments SET reversal = $2, refunded_amount = nullif($3, 0)
WHERE id = $1 AND (reversal IS NULL OR (reversal = 'partial_refund' AND $2 <> 'partial_refund')
                   OR (reversal = 'partial_refund' AND $2 = 'partial_refund' AND $3 > coalesce(refunded_amount, 0)))`, id, kind, amount)
	return wrap("set payment reversal", err)
}

// PaymentsAtRisk are the counts behind the money gauges.
type PaymentsAtRisk struct {
	// WithoutOrder: succeeded charges not backed by a confirmed order.
	WithoutOrder int
	// RefundsPending: payments REFUND_PENDING.
	RefundsPending int
	// UnknownStuck: attempts whose create was never answered within the
	// provider's idempotency window (no longer repeated).
	UnknownStuck int
	// Reversals: payments the provider reversed on its own, by kind
	// (refund, dispute, partial_refund).
	Reversals map[string]int
}

// CountPaymentsAtRisk counts the payments that need watching.
func (s *Store) CountPaymentsAtRisk(ctx context.Context, keyWindow time.Duration) (PaymentsAtRisk, error) {
	var c PaymentsAtRisk
	err := s.db.QueryRow(ctx, `SELECT
  (SELECT count(*) FROM payments p JOIN orders o ON o.id = p.order_id WHERE p.status = 'SUCCEEDED' AND o.status <> 'CONFIRMED'),
  (SELECT count(*) FROM payments WHERE status = 'REFUND_PENDING'),
  (SELECT count(*) FROM payments WHERE status = 'UNKNOWN' AND provider_ref IS NULL AND created_at < now() - $1 * interval '1 second')`,
		keyWindow.Seconds()).Scan(&c.WithoutOrder, &c.RefundsPending, &c.UnknownStuck)
	if err != nil {
		return c, wrap("count payments at risk", err)
	}
	c.Reversals = map[string]int{"refund": 0, "dispute": 0, "partial_refund": 0}
	rows, err := s.db.Query(ctx, `SELECT reversal, count(*) FROM payments WHERE reversal IS NOT NULL GROUP BY reversal`)
	if err != nil {
		return c, wrap("count reversals", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return c, wrap("count reversals", err)
		}
		c.Reversals[k] = n
	}
	return c, wrap("count reversals", rows.Err())
}

// sqlInboxInsert records a provider notification, processed: run it in the
// transaction that applies it (a rollback unrecords it); it inserts nothing
// when its id was already recorded for that provider (a duplicate: apply
// nothing).
const sqlInboxInsert = `
INSERT INTO webhook_inbox (id, provider, type, payload, processed_at) VALUES ($1, $2, $3, $4, now())
ON CONFLICT (provider, id) DO NOTHING`
