// Package payments holds the payment provider adapters and nothing else:
// the Provider interface (this file), the sandbox (paysim) client over HTTP
// (sandbox.go), Stripe (stripe.go), the signing and verification of the
// sandbox's notifications (webhook.go) and the currencies' exponents
// (currency.go). The payments themselves (attempts, their state machine,
// the webhook endpoint) live in package orders, which calls these adapters.
package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Provider is what the orders engine needs from a card processor. Every
// write carries an idempotency key, so a call that ended in
// ErrUnknownOutcome can be retried safely with the same key.
type Provider interface {
	// CreatePayment opens a payment (status pending) that the buyer
	// completes at its CheckoutURL. The same IdempotencyKey with the same
	// request returns the same payment (within 24 h); with a different
	// request it fails with ErrIdempotencyKeyReused.
	CreatePayment(ctx context.Context, req CreateRequest) (ProviderPayment, error)
	// GetPayment returns the current state of a payment (reconciliation).
	GetPayment(ctx context.Context, id string) (ProviderPayment, error)
	// CancelPayment voids a pending payment. A payment that is no longer
	// pending fails with ErrNotPending, and the returned payment is its
	// current state.
	CancelPayment(ctx context.Context, id string) (ProviderPayment, error)
	// Refund fully refunds a succeeded payment, idempotently by key. A
	// payment that is not succeeded (including already refunded with another
	// key) fails with ErrNotRefundable, and Refund.Payment is its current
	// state.
	Refund(ctx context.Context, paymentID, idempotencyKey string) (Refund, error)
	// VerifyWebhook authenticates a notification (before parsing it) and
	// decodes it. Any failure wraps ErrInvalidSignature or ErrBadNotification.
	VerifyWebhook(header http.Header, body []byte, now time.Time) (Notification, error)
}

// CreateRequest is a payment to open.
type CreateRequest struct {
	Amount         int64  // minor units, > 0
	Currency       string // ISO 4217, e.g. "EUR"
	Reference      string // e.g. the order or attempt id
	WebhookURL     string // where notifications go
	ReturnURL      string // optional: where the checkout page sends the browser back
	IdempotencyKey string // required; one per payment attempt
	// Simulate is the provider's fault injection for this payment (sandbox
	// only), e.g. {"auto_outcome": "succeed"}; see paysim.Faults.
	Simulate map[string]any
}

// Status is a payment's state at the provider.
type Status string

// The payment states.
const (
	StatusPending   Status = "pending"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusRefunded  Status = "refunded"
)

// Final reports whether the provider has answered (the payment is no
// longer pending). Only a refund can follow, except a failure at a provider
// whose failed payments may still succeed (FailedMaySucceed).
func (s Status) Final() bool { return s != StatusPending }

// KeyWindow is how long a create may be repeated with its idempotency key:
// the providers keep keys for 24 h (paysim, Stripe), less an hour of margin.
// After it a repeat could open a second payment.
const KeyWindow = 23 * time.Hour

// FailureReopener is a Provider whose failed payments can still succeed
// later. With Stripe, the buyer may confirm the same PaymentIntent again
// with another card after a decline.
type FailureReopener interface {
	FailedMaySucceed() bool
}

// FailedMaySucceed reports whether a failed payment at p can still
// succeed, so the reconciler keeps asking about it for a while in case the
// notification of that success is lost.
func FailedMaySucceed(p Provider) bool {
	r, ok := p.(FailureReopener)
	return ok && r.FailedMaySucceed()
}

// ProviderPayment is a payment as the provider reports it.
type ProviderPayment struct {
	ID          string `json:"id"`
	Status      Status `json:"status"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Reference   string `json:"reference"`
	CheckoutURL string `json:"checkout_url"`
	ReturnURL   string `json:"return_url,omitempty"`
	FailureCode string `json:"failure_code,omitempty"`
	RefundID    string `json:"refund_id,omitempty"`
	// RefundedAmount is what the provider reports refunded of a payment
	// that stays succeeded (a partial refund made at its dashboard).
	RefundedAmount int64     `json:"-"`
	Created        time.Time `json:"-"`
	Updated        time.Time `json:"-"`
	// Replayed is true when the answer is an idempotent replay of an
	// earlier request with the same key.
	Replayed bool `json:"-"`
}

// Refund is a (full) refund of a payment.
type Refund struct {
	ID        string
	PaymentID string
	Status    string // "succeeded"
	Amount    int64
	Currency  string
	Created   time.Time
	Payment   ProviderPayment // the payment after the refund
	Replayed  bool
}

// Notification types.
const (
	EventPaymentSucceeded = "payment.succeeded"
	EventPaymentFailed    = "payment.failed"
	EventPaymentCancelled = "payment.cancelled"
	EventRefundSucceeded  = "refund.succeeded"
	// EventPaymentDisputed: the cardholder's bank took the money back (a
	// chargeback: paysim's payment.disputed, Stripe's
	// charge.dispute.created). The payment reads refunded with
	// FailureCode FailureDisputed.
	EventPaymentDisputed = "payment.disputed"
	// EventRefundPartial: part of a succeeded payment was refunded at the
	// provider (Stripe's charge.refunded with amount_refunded < amount);
	// the payment stays succeeded.
	EventRefundPartial = "refund.partial"
)

// FailureDisputed is the FailureCode of a payment refunded by a dispute.
const FailureDisputed = "disputed"

// Notification is a verified webhook from the provider. ID is stable across
// redeliveries and duplicates: deduplicate on it.
type Notification struct {
	ID      string
	Type    string
	Created time.Time
	Payment ProviderPayment
}

// Errors. Definite failures (the request was refused and had no effect)
// wrap ErrRejected; ErrUnknownOutcome means the request may or may not have
// taken effect.
var (
	// ErrUnknownOutcome: timeout, connection failure or provider 5xx on a
	// write. Retry with the same idempotency key, or query the payment.
	ErrUnknownOutcome = errors.New("payments: outcome unknown")
	// ErrUnavailable: a read failed for a transient reason; retry later.
	ErrUnavailable = errors.New("payments: provider unavailable")
	// ErrRejected: the provider refused the request; it had no effect.
	ErrRejected = errors.New("payments: rejected by provider")
	// ErrIdempotencyKeyReused: the key was used with a different request
	// (HTTP 422). Also matches ErrRejected.
	ErrIdempotencyKeyReused = errors.New("payments: idempotency key reused with a different request")
	// ErrNotFound: no such payment. Also matches ErrRejected.
	ErrNotFound = errors.New("payments: no such payment")
	// ErrNotPending: the payment is no longer pending (cancel). Also
	// matches ErrRejected.
	ErrNotPending = errors.New("payments: payment not pending")
	// ErrNotRefundable: the payment is not succeeded (refund). Also
	// matches ErrRejected.
	ErrNotRefundable = errors.New("payments: payment not refundable")
	// ErrInvalidSignature: a webhook's signature is missing, malformed,
	// stale or wrong.
	ErrInvalidSignature = errors.New("payments: invalid webhook signature")
	// ErrBadNotification: a correctly signed webhook whose body is not a
	// notification.
	ErrBadNotification = errors.New("payments: malformed notification")
)

// APIError is a definite error answer of the provider.
type APIError struct {
	StatusCode int
	Code       string // provider error code, e.g. "idempotency_key_reused"
	Message    string
	Param      string
	kind       error // one of the sentinels above
}

func (e *APIError) Error() string {
	return fmt.Sprintf("payments: provider answered %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Is matches ErrRejected and the specific sentinel of the error.
func (e *APIError) Is(target error) bool {
	return target == ErrRejected || (e.kind != nil && target == e.kind)
}
