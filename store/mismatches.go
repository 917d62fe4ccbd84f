package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Mismatch is a row of payment_mismatches: a provider payment whose amount
// or currency differ from the attempt it named.
type Mismatch struct {
	Provider          string
	ProviderPaymentID string
	PaymentID         *string
	Amount            int64
	Currency          string
	ProviderStatus    string
	Reason            string
	Resolution        *string
	CreatedAt         time.Time
	ResolvedAt        *time.Time
}

const mismatchColumns = `provider, provider_payment_id, payment_id::text, amount, currency, provider_status, reason,
       resolution, created_at, resolved_at`

func scanMismatch(r pgx.Row) (Mismatch, error) {
	var m Mismatch
	err := r.Scan(&m.Provider, &m.ProviderPaymentID, &m.PaymentID, &m.Amount, &m.Currency, &m.ProviderStatus, &m.Reason,
		&m.Resolution, &m.CreatedAt, &m.ResolvedAt)
	return m, err
}

// RecordMismatch records (or updates with the latest status) a provider
// payment that disagrees with an attempt; fresh is true the first time.
func (s *Store) RecordMismatch(ctx context.Context, m Mismatch) (fresh bool, err error) {
	err = s.db.QueryRow(ctx, `INSERT INTO payment_mismatches (provider, provider_payment_id, payment_id, amount, currency, provider_status, reason)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (provider, provider_payment_id) DO UPDATE
SET provider_status = excluded.provider_status, updated_at = now(),
    payment_id = coalesce(payment_mismatches.payment_id, excluded.payment_id)
RETURNING xmax = 0`, m.Provider, m.ProviderPaymentID, m.PaymentID, m.Amount, m.Currency, m.ProviderStatus, m.Reason).Scan(&fresh)
	return fresh, wrap("record mismatch", err)
}

// IsMismatched reports whether a provider payment once disagreed with our
// attempt (it then never confirms anything).
func (s *Store) IsMismatched(ctx context.Context, provider, providerPaymentID string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payment_mismatches WHERE provider = $1 AND provider_payment_id = $2)`,
		provider, providerPaymentID).Scan(&ok)
	return ok, wrap("is mismatched", err)
}

// GetMismatch reads a mismatch (ErrNotFound if absent).
func (s *Store) GetMismatch(ctx context.Context, provider, providerPaymentID string) (Mismatch, error) {
	m, err := scanMismatch(s.db.QueryRow(ctx, `SELECT `+mismatchColumns+` FROM payment_mismatches
WHERE provider = $1 AND provider_payment_id = $2`, provider, providerPaymentID))
	return m, wrap("get mismatch", err)
}

// ResolveMismatch records how a mismatch was settled at the provider.
func (s *Store) ResolveMismatch(ctx context.Context, provider, providerPaymentID, resolution, providerStatus string) error {
	_, err := s.db.Exec(ctx, `UPDATE payment_mismatches SET resolution = $3, resolved_at = now(), updated_at = now(), provider_status = $4
WHERE provider = $1 AND provider_payment_id = $2 AND resolved_at IS NULL`, provider, providerPaymentID, resolution, providerStatus)
	return wrap("resolve mismatch", err)
}

// OpenMismatches lists unresolved mismatches of provider, oldest first.
func (s *Store) OpenMismatches(ctx context.Context, provider string, limit int) ([]Mismatch, error) {
	rows, err := s.db.Query(ctx, `SELECT `+mismatchColumns+` FROM payment_mismatches
WHERE resolved_at IS NULL AND provider = $1 ORDER BY created_at LIMIT $2`, provider, limit)
	if err != nil {
		return nil, wrap("open mismatches", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Mismatch, error) { return scanMismatch(r) })
	return out, wrap("open mismatches", err)
}

// PaymentByReference reads a payment by id when id is one of ours, whatever its
// provider id (ErrNotFound otherwise): a notification naming our reference
// but another provider payment.
func (s *Store) PaymentByReference(ctx context.Context, provider, reference string) (Payment, error) {
	p, err := scanPayment(s.db.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE provider = $1 AND id = $2::uuid`, provider, reference))
	return p, wrap("payment by reference", err)
}
