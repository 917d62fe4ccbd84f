package paysim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// payment is a row of paysim.payments.
type payment struct {
	ID          string
	Status      string
	Amount      int64
	Currency    string
	Reference   string
	WebhookURL  string
	ReturnURL   string
	CheckoutURL string
	Simulate    []byte
	FailureCode string
	RefundID    *string
	Created     time.Time
	Updated     time.Time
}

const paymentCols = `id, status, amount, currency, reference, webhook_url, return_url, checkout_url,
	simulate, failure_code, refund_id, created_at, updated_at`

func scanPayment(row pgx.Row) (payment, error) {
	var p payment
	err := row.Scan(&p.ID, &p.Status, &p.Amount, &p.Currency, &p.Reference, &p.WebhookURL, &p.ReturnURL,
		&p.CheckoutURL, &p.Simulate, &p.FailureCode, &p.RefundID, &p.Created, &p.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, errNotFound
	}
	return p, err
}

// paymentView is the payment object of the API and of notifications.
type paymentView struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Reference   string `json:"reference"`
	CheckoutURL string `json:"checkout_url"`
	ReturnURL   string `json:"return_url,omitempty"`
	FailureCode string `json:"failure_code,omitempty"`
	RefundID    string `json:"refund_id,omitempty"`
	Created     int64  `json:"created"`
	Updated     int64  `json:"updated"`
}

func (p payment) view() paymentView {
	v := paymentView{ID: p.ID, Object: "payment", Status: p.Status, Amount: p.Amount, Currency: p.Currency,
		Reference: p.Reference, CheckoutURL: p.CheckoutURL, ReturnURL: p.ReturnURL, FailureCode: p.FailureCode,
		Created: p.Created.Unix(), Updated: p.Updated.Unix()}
	if p.RefundID != nil {
		v.RefundID = *p.RefundID
	}
	return v
}

// refundView is the answer of POST /v1/refunds (full refunds only).
type refundView struct {
	ID        string      `json:"id"`
	Object    string      `json:"object"`
	PaymentID string      `json:"payment_id"`
	Status    string      `json:"status"`
	Amount    int64       `json:"amount"`
	Currency  string      `json:"currency"`
	Created   int64       `json:"created"`
	Payment   paymentView `json:"payment"`
}

func (p payment) refundView() refundView {
	v := refundView{Object: "refund", PaymentID: p.ID, Status: "succeeded", Amount: p.Amount,
		Currency: p.Currency, Created: p.Updated.Unix(), Payment: p.view()}
	if p.RefundID != nil {
		v.ID = *p.RefundID
	}
	return v
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (s *Server) globalFaults(ctx context.Context, q querier) (Faults, error) {
	var raw []byte
	if err := q.QueryRow(ctx, `SELECT value FROM paysim.faults`).Scan(&raw); err != nil {
		return Faults{}, err
	}
	return parseFaults(raw)
}

// mergeGlobalFaults merges raw into the global faults (null fields are
// removed); nil resets them.
func (s *Server) mergeGlobalFaults(ctx context.Context, raw []byte) (Faults, error) {
	var out []byte
	var err error
	if raw == nil {
		err = s.pool.QueryRow(ctx, `UPDATE paysim.faults SET value = '{}' RETURNING value`).Scan(&out)
	} else {
		err = s.pool.QueryRow(ctx, `UPDATE paysim.faults SET value = jsonb_strip_nulls(value || $1::jsonb) RETURNING value`, raw).Scan(&out)
	}
	if err != nil {
		return Faults{}, err
	}
	return parseFaults(out)
}

// effectiveFaults is the payment's simulate object over the global faults.
func (s *Server) effectiveFaults(ctx context.Context, q querier, simulate []byte) (Faults, error) {
	g, err := s.globalFaults(ctx, q)
	if err != nil {
		return Faults{}, err
	}
	p, err := parseFaults(simulate)
	if err != nil {
		return Faults{}, err
	}
	return g.over(p), nil
}

// claimKey records an idempotency key in tx. When the key is already known
// (and not older than 24h) it returns the payment id it produced, or
// errKeyReused if the fingerprint differs. A concurrent request with the
// same key waits on the unique index until the first one commits.
func claimKey(ctx context.Context, tx pgx.Tx, op, key, fp string) (existing string, err error) {
	if _, err := tx.Exec(ctx, `DELETE FROM paysim.idempotency_keys
		WHERE operation = $1 AND key = $2 AND created_at < now() - interval '24 hours'`, op, key); err != nil {
		return "", err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO paysim.idempotency_keys (operation, key, fingerprint)
		VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, op, key, fp)
	if err != nil || tag.RowsAffected() == 1 {
		return "", err
	}
	var oldFP string
	var id *string
	err = tx.QueryRow(ctx, `SELECT fingerprint, payment_id FROM paysim.idempotency_keys
		WHERE operation = $1 AND key = $2`, op, key).Scan(&oldFP, &id)
	if err != nil {
		return "", fmt.Errorf("idempotency key %q: %w", key, err)
	}
	if oldFP != fp || id == nil {
		return "", errKeyReused
	}
	return *id, nil
}

func (s *Server) createPayment(ctx context.Context, key, fp string, req createRequest, f Faults, base string) (p payment, eff Faults, created bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return p, eff, false, err
	}
	defer tx.Rollback(ctx)
	existing, err := claimKey(ctx, tx, "create_payment", key, fp)
	if err != nil {
		return p, eff, false, err
	}
	if existing != "" {
		p, err = scanPayment(tx.QueryRow(ctx, `SELECT `+paymentCols+` FROM paysim.payments WHERE id = $1`, existing))
		return p, eff, false, err
	}
	g, err := s.globalFaults(ctx, tx)
	if err != nil {
		return p, eff, false, err
	}
	eff = g.over(f)
	var settleMS *int64
	if eff.AutoOutcome != nil {
		ms := val(eff.AutoSettleMS)
		settleMS = &ms
	}
	id := newID("pay")
	p, err = scanPayment(tx.QueryRow(ctx, `INSERT INTO paysim.payments
		(id, amount, currency, reference, webhook_url, return_url, checkout_url, simulate, settle_at, auto_outcome)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + $9 * interval '1 millisecond', $10)
		RETURNING `+paymentCols,
		id, req.Amount, req.Currency, req.Reference, req.WebhookURL, req.ReturnURL,
		base+"/checkout/"+id, []byte(req.Simulate), settleMS, val(eff.AutoOutcome)))
	if err != nil {
		return p, eff, false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE paysim.idempotency_keys SET payment_id = $3
		WHERE operation = $1 AND key = $2`, "create_payment", key, id); err != nil {
		return p, eff, false, err
	}
	return p, eff, true, tx.Commit(ctx)
}

func (s *Server) getPayment(ctx context.Context, id string) (payment, error) {
	return scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentCols+` FROM paysim.payments WHERE id = $1`, id))
}

func lockPayment(ctx context.Context, tx pgx.Tx, id string) (payment, error) {
	return scanPayment(tx.QueryRow(ctx, `SELECT `+paymentCols+` FROM paysim.payments WHERE id = $1 FOR UPDATE`, id))
}

// setStatus moves a locked payment to status and records the notification.
func (s *Server) setStatus(ctx context.Context, tx pgx.Tx, p payment, status, failureCode, refundID, event string) (payment, error) {
	var rid *string
	if refundID != "" {
		rid = &refundID
	}
	p, err := scanPayment(tx.QueryRow(ctx, `UPDATE paysim.payments
		SET status = $2, failure_code = $3, refund_id = coalesce($4, refund_id), settle_at = NULL, updated_at = now()
		WHERE id = $1 RETURNING `+paymentCols, p.ID, status, failureCode, rid))
	if err != nil {
		return p, err
	}
	return p, s.emit(ctx, tx, p, event)
}

// withLockedPayment locks payment id in a transaction and commits what
// change does with it; an error from change rolls the transaction back.
func (s *Server) withLockedPayment(ctx context.Context, id string, change func(tx pgx.Tx, p payment) (payment, error)) (payment, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return payment{}, err
	}
	defer tx.Rollback(ctx)
	p, err := lockPayment(ctx, tx, id)
	if err != nil {
		return p, err
	}
	if p, err = change(tx, p); err != nil {
		return p, err
	}
	return p, tx.Commit(ctx)
}

// settle applies the buyer's (or auto_outcome's) choice to a pending
// payment. A payment that is no longer pending is returned unchanged with
// changed == false.
func (s *Server) settle(ctx context.Context, id, outcome string) (p payment, changed bool, err error) {
	p, err = s.withLockedPayment(ctx, id, func(tx pgx.Tx, p payment) (payment, error) {
		p, changed, err = s.settleTx(ctx, tx, p, outcome)
		return p, err
	})
	return p, changed && err == nil, err
}

// settleTx settles p, locked in tx, if it is still pending.
func (s *Server) settleTx(ctx context.Context, tx pgx.Tx, p payment, outcome string) (payment, bool, error) {
	if p.Status != "pending" {
		return p, false, nil
	}
	eff, err := s.effectiveFaults(ctx, tx, p.Simulate)
	if err != nil {
		return p, false, err
	}
	if outcome == "succeed" && !val(eff.Decline) && mrand.Float64() >= val(eff.FailRate) {
		p, err = s.setStatus(ctx, tx, p, "succeeded", "", "", "payment.succeeded")
	} else {
		p, err = s.setStatus(ctx, tx, p, "failed", "card_declined", "", "payment.failed")
	}
	return p, err == nil, err
}

func (s *Server) cancelPayment(ctx context.Context, id string) (payment, error) {
	return s.withLockedPayment(ctx, id, func(tx pgx.Tx, p payment) (payment, error) {
		if p.Status != "pending" {
			return p, notPending(p, "cancel")
		}
		return s.setStatus(ctx, tx, p, "cancelled", "", "", "payment.cancelled")
	})
}

// dispute moves a succeeded payment to refunded with failure_code
// "disputed" and emits payment.disputed; a payment already disputed is
// returned as it is; any other is 409 payment_not_refundable.
func (s *Server) dispute(ctx context.Context, id string) (payment, error) {
	return s.withLockedPayment(ctx, id, func(tx pgx.Tx, p payment) (payment, error) {
		if p.Status == "refunded" && p.FailureCode == "disputed" {
			return p, nil
		}
		if p.Status != "succeeded" {
			return p, &apiError{Status: 409, Code: "payment_not_refundable", Payment: &p,
				Message: fmt.Sprintf("cannot dispute a payment in status %s", p.Status)}
		}
		return s.setStatus(ctx, tx, p, "refunded", "disputed", newID("dp"), "payment.disputed")
	})
}

// refund fully refunds a succeeded payment, idempotently by key.
func (s *Server) refund(ctx context.Context, key, paymentID string) (p payment, created bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return p, false, err
	}
	defer tx.Rollback(ctx)
	existing, err := claimKey(ctx, tx, "refund", key, paymentID)
	if err != nil {
		return p, false, err
	}
	if existing != "" {
		p, err = lockPayment(ctx, tx, existing)
		return p, false, err
	}
	if p, err = lockPayment(ctx, tx, paymentID); err != nil {
		return p, false, err
	}
	if p.Status != "succeeded" {
		return p, false, &apiError{Status: 409, Code: "payment_not_refundable", Payment: &p,
			Message: fmt.Sprintf("cannot refund a payment in status %s", p.Status)}
	}
	if p, err = s.setStatus(ctx, tx, p, "refunded", "", newID("re"), "refund.succeeded"); err != nil {
		return p, false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE paysim.idempotency_keys SET payment_id = $3
		WHERE operation = 'refund' AND key = $1 AND fingerprint = $2`, key, paymentID, p.ID); err != nil {
		return p, false, err
	}
	return p, true, tx.Commit(ctx)
}

// event is a notification as sent to webhook_url.
type event struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Type    string      `json:"type"`
	Created int64       `json:"created"`
	Data    paymentView `json:"data"`
}

// emit records a notification of p in tx and schedules its deliveries
// according to the payment's faults.
func (s *Server) emit(ctx context.Context, tx pgx.Tx, p payment, typ string) error {
	eff, err := s.effectiveFaults(ctx, tx, p.Simulate)
	if err != nil {
		return err
	}
	ev := event{ID: newID("evt"), Object: "event", Type: typ, Created: time.Now().Unix(), Data: p.view()}
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var first bool
	if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM paysim.events WHERE payment_id = $1)`, p.ID).Scan(&first); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO paysim.events (id, payment_id, type, body) VALUES ($1, $2, $3, $4)`,
		ev.ID, p.ID, typ, body); err != nil {
		return err
	}
	if val(eff.DropWebhooks) {
		return nil
	}
	delay := val(eff.WebhookDelayMS)
	if val(eff.ReorderWebhooks) && first {
		w := s.opt.ReorderWindow.Milliseconds()
		if eff.ReorderWindowMS != nil {
			w = *eff.ReorderWindowMS
		}
		delay += w
	}
	copies := 1
	if eff.DuplicateWebhooks != nil {
		copies = int(*eff.DuplicateWebhooks)
	}
	_, err = tx.Exec(ctx, `INSERT INTO paysim.deliveries (event_id, url, next_attempt_at)
		SELECT $1, $2, now() + $3 * interval '1 millisecond' FROM generate_series(1, $4)`,
		ev.ID, p.WebhookURL, delay, copies)
	return err
}

// eventInfo is one notification of a payment with its delivery record
// (GET /v1/payments/{id}/events).
type eventInfo struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Created    int64           `json:"created"`
	Body       json.RawMessage `json:"body"`
	Copies     int             `json:"copies"`
	Delivered  int             `json:"delivered"`
	Attempts   int             `json:"attempts"`
	GaveUp     int             `json:"gave_up"`
	LastStatus *int            `json:"last_status,omitempty"`
	LastError  string          `json:"last_error,omitempty"`
}

func (s *Server) listEvents(ctx context.Context, paymentID string) ([]eventInfo, error) {
	if _, err := s.getPayment(ctx, paymentID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT e.id, e.type, e.created_at, e.body,
			count(d.id), count(d.delivered_at), coalesce(sum(d.attempts), 0), count(d.gave_up_at),
			max(d.last_status), coalesce(max(d.last_error), '')
		FROM paysim.events e LEFT JOIN paysim.deliveries d ON d.event_id = e.id
		WHERE e.payment_id = $1 GROUP BY e.id ORDER BY e.seq`, paymentID)
	if err != nil {
		return nil, err
	}
	out := []eventInfo{}
	for rows.Next() {
		var e eventInfo
		var created time.Time
		var body []byte
		if err := rows.Scan(&e.ID, &e.Type, &created, &body, &e.Copies, &e.Delivered, &e.Attempts, &e.GaveUp,
			&e.LastStatus, &e.LastError); err != nil {
			return nil, err
		}
		e.Created, e.Body = created.Unix(), body
		out = append(out, e)
	}
	return out, rows.Err()
}
