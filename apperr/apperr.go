// Package apperr defines the expected failures of the product, one per
// ErrorCode of the API contract, and the single table that maps them to the
// contract's code, extensions and HTTP status. Domain packages return these
// (wrapped with %w); GraphQL and REST both present them through Describe.
package apperr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinels without extra data.
var (
	ErrUnauthenticated        = errors.New("authentication required")
	ErrForbidden              = errors.New("forbidden")
	ErrNotFound               = errors.New("not found")
	ErrHoldExpired            = errors.New("the hold has expired or was cancelled")
	ErrIdempotencyKeyReused   = errors.New("idempotency key already used with other arguments")
	ErrQueueAdmissionRequired = errors.New("this sale is queue-protected: a valid admission token is required")
	ErrSaleNotOpen            = errors.New("the sale is not open")
	ErrPaymentInProgress      = errors.New("another payment attempt of this order is still open")
	ErrRefundNotAllowed       = errors.New("the order cannot be refunded on request: not CONFIRMED, past the event's refund deadline, or the event has no refunds")
	ErrServiceUnavailable     = errors.New("a dependency is unavailable; try again shortly")
)

// InvalidInputError is a validation failure of one input field.
type InvalidInputError struct {
	Field   string
	Message string
}

func (e *InvalidInputError) Error() string { return e.Field + ": " + e.Message }

// Invalid returns an InvalidInputError for field.
func Invalid(field, format string, args ...any) error {
	return &InvalidInputError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// SeatUnavailableError names the requested seats (or GA sections) that are
// held or sold.
type SeatUnavailableError struct{ SeatIDs []string }

func (e *SeatUnavailableError) Error() string {
	return "seats unavailable: " + strings.Join(e.SeatIDs, ", ")
}

// HoldLimitError reports the per-user ticket limit of the event, or (with
// PerAddress) HOLD_LIMIT_PER_ADDRESS, the tickets held at once from one
// client address for one event.
type HoldLimitError struct {
	Limit      int
	PerAddress bool
}

func (e *HoldLimitError) Error() string {
	if e.PerAddress {
		return fmt.Sprintf("at most %d tickets held at once from one client address for this event", e.Limit)
	}
	return fmt.Sprintf("at most %d tickets per user for this event", e.Limit)
}

// HoldAlreadyOrderedError names the order that already owns the hold.
type HoldAlreadyOrderedError struct{ OrderID string }

func (e *HoldAlreadyOrderedError) Error() string {
	return "the hold already belongs to order " + e.OrderID
}

// RateLimitedError asks the caller to come back later.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string { return "rate limited" }

// RetryAfterSeconds rounds RetryAfter up to whole seconds, at least 1.
func (e *RateLimitedError) RetryAfterSeconds() int {
	s := int((e.RetryAfter + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// Description is how an error is shown to clients.
type Description struct {
	Code       string
	Message    string
	Extensions map[string]any
	HTTPStatus int
}

// Describe maps err to the contract. Unknown errors become INTERNAL with a
// generic message (the caller logs the cause); known is false for those.
func Describe(err error) (d Description, known bool) {
	var (
		inv   *InvalidInputError
		seats *SeatUnavailableError
		limit *HoldLimitError
		ord   *HoldAlreadyOrderedError
		rate  *RateLimitedError
	)
	switch {
	case errors.As(err, &inv):
		return Description{"BAD_USER_INPUT", inv.Error(), map[string]any{"field": inv.Field}, http.StatusBadRequest}, true
	case errors.As(err, &seats):
		ids := seats.SeatIDs
		if ids == nil {
			ids = []string{}
		}
		return Description{"SEAT_UNAVAILABLE", seats.Error(), map[string]any{"unavailableSeatIds": ids}, http.StatusConflict}, true
	case errors.As(err, &limit):
		return Description{"HOLD_LIMIT_EXCEEDED", limit.Error(), map[string]any{"limit": limit.Limit}, http.StatusConflict}, true
	case errors.As(err, &ord):
		return Description{"HOLD_ALREADY_ORDERED", ord.Error(), map[string]any{"orderId": ord.OrderID}, http.StatusConflict}, true
	case errors.As(err, &rate):
		return Description{"RATE_LIMITED", rate.Error(), map[string]any{"retryAfterSeconds": rate.RetryAfterSeconds()}, http.StatusTooManyRequests}, true
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return Description{s.code, s.err.Error(), map[string]any{}, s.status}, true
		}
	}
	return Description{"INTERNAL", "internal error", map[string]any{}, http.StatusInternalServerError}, false
}

var sentinels = []struct {
	err    error
	code   string
	status int
}{
	{ErrUnauthenticated, "UNAUTHENTICATED", http.StatusUnauthorized},
	{ErrForbidden, "FORBIDDEN", http.StatusForbidden},
	{ErrNotFound, "NOT_FOUND", http.StatusNotFound},
	{ErrHoldExpired, "HOLD_EXPIRED", http.StatusGone},
	{ErrIdempotencyKeyReused, "IDEMPOTENCY_KEY_REUSED", http.StatusUnprocessableEntity},
	{ErrQueueAdmissionRequired, "QUEUE_ADMISSION_REQUIRED", http.StatusPreconditionRequired},
	{ErrSaleNotOpen, "SALE_NOT_OPEN", http.StatusConflict},
	{ErrPaymentInProgress, "PAYMENT_IN_PROGRESS", http.StatusConflict},
	{ErrRefundNotAllowed, "REFUND_NOT_ALLOWED", http.StatusConflict},
	{ErrServiceUnavailable, "SERVICE_UNAVAILABLE", http.StatusServiceUnavailable},
}

// Abandoned reports whether err is only the end of a request its client
// gave up on (navigated away, closed the socket): the request's context is
// done and err is that cancellation. Such an error is no fault of the
// server: GraphQL and REST log it at debug level, not as an internal error.
func Abandoned(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}

// MaxIdempotencyKeyLen is the longest idempotency key accepted, in bytes.
const MaxIdempotencyKeyLen = 200

// CheckIdempotencyKey is the one rule of an idempotency key (createHold,
// createOrder, retryPayment, requestRefund, and REST's Idempotency-Key
// header, whose optional surrounding whitespace net/http already strips): 1
// to MaxIdempotencyKeyLen bytes, taken as given, never trimmed. field names
// the key in the BAD_USER_INPUT error.
func CheckIdempotencyKey(field, key string) error {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return Invalid(field, "must be 1 to %d characters", MaxIdempotencyKeyLen)
	}
	return nil
}
