// Package orders turns a hold into a paid order: orders and payment
// attempts, the provider's verified notifications, confirmation (seats sold,
// tickets issued), compensation of late or redundant charges, expiry and
// reconciliation.
//
// Postgres and the payment provider share no transaction, so every step is
// an explicit state with a safe retry:
//
//   - createOrder commits the order and its first attempt (payment UNKNOWN)
//     in one short transaction, then asks the provider OUTSIDE it with the
//     attempt's own idempotency key. A timeout leaves the attempt UNKNOWN;
//     it is resolved by repeating the create with the same key, which the
//     provider answers with the same payment.
//   - Only the provider's signed notification (or its API, queried by the
//     reconciler) moves a payment; a browser return never does.
//   - A charge that cannot confirm its order (hold expired or re-taken,
//     order already confirmed by another attempt) goes REFUND_PENDING and a
//     refund job is enqueued in the same transaction (river); it retries
//     until the provider confirms (REFUNDED).
//   - Every payment transition is recorded in payment_events with a reason,
//     and is one step of the state machine, advance (payment_state.go),
//     whatever brought the news: the webhook (webhook.go), an answer to
//     our call (provider_io.go), the reconciler (reconcile.go).
//
// Idempotency of createOrder: (owner, "createOrder", key) is claimed in the
// order's transaction. The same key for the same hold returns the same
// order; for another hold, IDEMPOTENCY_KEY_REUSED. One order per hold
// whatever the key (orders.hold_id is UNIQUE): a different key for a hold
// that already has an order gets HOLD_ALREADY_ORDERED with its orderId,
// even for the same user. retryPayment keys work the same way with
// (owner, "retryPayment", key).
package orders

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
	"github.com/ticketing/ticketing/tickets"
)

// Order, Payment and Ticket are the rows as stored.
type (
	Order   = store.Order
	Payment = store.Payment
	Ticket  = store.Ticket
)

// Queue is the virtual queue as the orders engine uses it (queue.Service
// implements it): Release frees the admission slot a confirmed order's
// hold was made under, at heldAt; EndEvent ends a cancelled event's queue.
type Queue interface {
	Release(ctx context.Context, eventID, userID string, heldAt time.Time) error
	EndEvent(ctx context.Context, eventID string) error
}

// Config configures the service; zero values get the defaults noted.
type Config struct {
	Provider payments.Provider
	// ProviderName is stored in payments.provider ("sandbox" or "stripe").
	ProviderName string
	// PublicBaseURL: the buyer returns to PublicBaseURL + "/orders/{id}".
	PublicBaseURL string
	// WebhookBaseURL: notifications go to WebhookBaseURL +
	// "/webhooks/payments" (default PublicBaseURL).
	WebhookBaseURL string
	// TicketKeys sign ticket codes (TICKET_SIGNING_KEY) and verify them at
	// checkIn.
	TicketKeys *tickets.Keys
	// Holds, if set, ends an event's active holds when it is cancelled and
	// frees a bought hold's place under HOLD_LIMIT_PER_ADDRESS.
	Holds HoldEnder
	// Queue, if set, releases the buyer's admission on confirmation and
	// ends a cancelled event's queue.
	Queue Queue
	// EventChanged, if set, is told of an event this instance has just
	// changed (a cancellation committed), so that what it keeps of the
	// event in memory (catalog.Service.ForgetEvents) is read again.
	EventChanged func(eventIDs ...string)
	// ProviderTimeout bounds one provider call (10s).
	ProviderTimeout time.Duration
	// ReconcileAfter: open attempts untouched this long are queried at the
	// provider by the reconciler (1m).
	ReconcileAfter time.Duration
	// ReconcileInterval between reconciliation runs (30s).
	ReconcileInterval time.Duration
	// CancelSweepAfter: cancelEvent sweeps the event again this long after
	// the cancellation (10s: past the queue's 5 s view of an event), once
	// the transactions in flight at the cancellation have ended.
	CancelSweepAfter time.Duration
	// ReconcileBatch is how many payments one reconciliation pass looks at
	// (200), least recently looked at first.
	ReconcileBatch int
	// RecheckFailedFor: with a provider whose failed payments may still
	// succeed (payments.FailedMaySucceed: Stripe), the reconciler asks about
	// FAILED payments this long after the failure (24h), first after
	// ReconcileAfter, then at doubling intervals.
	RecheckFailedFor time.Duration
	// RecheckSucceededFor: the reconciler asks about SUCCEEDED payments
	// this long after the success (7 days), at the same doubling
	// intervals, so a refund or dispute the provider made whose
	// notification was lost still refunds the order.
	RecheckSucceededFor time.Duration
	// Notifications, if set, is the store provider notifications are
	// applied through (ApplyNotification, the webhook): a pool of their
	// own, so that a confirmation never waits for a connection behind
	// createOrder, order reads and reconciliation in a sale (default: the
	// service's store).
	Notifications *store.Store
	// Simulate is sent as the sandbox's per-payment fault injection with
	// every create (tests and demos only).
	Simulate map[string]any
	Log      *slog.Logger
	Now      func() time.Time
}

// Service is the orders engine.
type Service struct {
	st      *store.Store
	cfg     Config
	river   *river.Client[pgx.Tx]
	metrics *metrics
	watcher *watcher // the orders streamed by Updates
}

// New returns the service with its river client (workers are started by
// RunWorkers only).
func New(st *store.Store, cfg Config) (*Service, error) {
	if cfg.Provider == nil {
		return nil, errors.New("orders: no payment provider")
	}
	if cfg.TicketKeys == nil {
		return nil, errors.New("orders: no ticket signing keys")
	}
	if cfg.ProviderName == "" {
		cfg.ProviderName = "sandbox"
	}
	if cfg.Notifications == nil {
		cfg.Notifications = st
	}
	if cfg.ProviderTimeout <= 0 {
		cfg.ProviderTimeout = 10 * time.Second
	}
	if cfg.ReconcileAfter <= 0 {
		cfg.ReconcileAfter = time.Minute
	}
	if cfg.ReconcileInterval <= 0 {
		cfg.ReconcileInterval = 30 * time.Second
	}
	if cfg.CancelSweepAfter <= 0 {
		cfg.CancelSweepAfter = 10 * time.Second
	}
	if cfg.ReconcileBatch <= 0 {
		cfg.ReconcileBatch = 200
	}
	if cfg.RecheckSucceededFor <= 0 {
		cfg.RecheckSucceededFor = 7 * 24 * time.Hour
	}
	if cfg.RecheckFailedFor <= 0 {
		cfg.RecheckFailedFor = 24 * time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.PublicBaseURL = strings.TrimRight(cfg.PublicBaseURL, "/")
	if cfg.WebhookBaseURL = strings.TrimRight(cfg.WebhookBaseURL, "/"); cfg.WebhookBaseURL == "" {
		cfg.WebhookBaseURL = cfg.PublicBaseURL
	}
	s := &Service{st: st, cfg: cfg, metrics: newMetrics(), watcher: newWatcher(st, updatesEvery)}
	var err error
	s.river, err = newRiverClient(st, s)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func hashOf(parts ...string) []byte {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return h[:]
}

func validUUID(s string) bool { _, err := uuid.Parse(s); return err == nil }

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// Create starts buying the caller's active hold: it records the order and
// its first payment attempt, then opens the payment at the provider.
// Errors: apperr.ErrUnauthenticated, apperr.InvalidInputError (empty key),
// apperr.ErrNotFound (hold), apperr.ErrForbidden (another user's hold),
// apperr.ErrHoldExpired (expired, cancelled), *apperr.HoldAlreadyOrderedError
// (the hold has an order made with another key),
// apperr.ErrIdempotencyKeyReused (the key was used for another hold).
// A provider timeout is not an error: the order is returned with its
// attempt UNKNOWN, settled later.
func (s *Service) Create(ctx context.Context, user auth.User, holdID, key string) (Order, error) {
	if user.ID == "" {
		return Order{}, apperr.ErrUnauthenticated
	}
	if err := apperr.CheckIdempotencyKey("input.idempotencyKey", key); err != nil {
		return Order{}, err
	}
	if !validUUID(holdID) {
		return Order{}, fmt.Errorf("create order: hold: %w", apperr.ErrNotFound)
	}
	var (
		o      Order
		p      Payment
		replay bool
	)
	orderID, paymentID := newID(), newID()
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		claimed, prev, err := tx.ClaimIdempotencyKey(ctx, user.ID, "createOrder", key, hashOf(holdID), orderID)
		if err != nil {
			return err
		}
		if !claimed {
			if string(prev.RequestHash) != string(hashOf(holdID)) {
				return apperr.ErrIdempotencyKeyReused
			}
			replay = true
			o, err = tx.GetOrder(ctx, prev.ResourceID)
			return err
		}
		h, err := tx.GetHoldForUpdate(ctx, holdID)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("hold: %w", apperr.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if h.Owner != user.ID {
			return apperr.ErrForbidden
		}
		if prevOrder, err := tx.OrderByHold(ctx, holdID); err == nil {
			return &apperr.HoldAlreadyOrderedError{OrderID: prevOrder.ID}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if h.Status != holds.StatusActive {
			return apperr.ErrHoldExpired
		}
		items, err := tx.HoldItems(ctx, holdID)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return apperr.ErrHoldExpired
		}
		var total int64
		for _, it := range items {
			total += it.PriceAmount
		}
		o, err = tx.InsertOrder(ctx, Order{ID: orderID, HoldID: holdID, EventID: h.EventID, Owner: user.ID,
			TotalAmount: total, Currency: items[0].Currency})
		if err != nil {
			return err
		}
		req, err := s.newRequest(paymentID, orderID)
		if err != nil {
			return err
		}
		p, err = tx.InsertPayment(ctx, Payment{ID: paymentID, OrderID: orderID, Amount: total, Currency: o.Currency,
			Provider: s.cfg.ProviderName, IdempotencyKey: "pay_" + paymentID, Request: req}, "attempt 1 opened by createOrder")
		return err
	})
	var conflict *store.ConflictError
	if errors.As(err, &conflict) && conflict.Constraint == "orders_hold_id_key" {
		if prev, err2 := s.st.OrderByHold(ctx, holdID); err2 == nil {
			err = &apperr.HoldAlreadyOrderedError{OrderID: prev.ID}
		}
	}
	if err != nil {
		return Order{}, fmt.Errorf("create order: %w", err)
	}
	if replay {
		// A retry of the same request: finish an attempt whose create
		// never got an answer, then report the current state.
		s.resumeUnknown(ctx, o.ID)
		return s.st.GetOrder(ctx, o.ID)
	}
	s.openAtProvider(ctx, p)
	return s.st.GetOrder(ctx, o.ID)
}

// RetryPayment opens the next payment attempt of the caller's order after
// the previous one failed or was cancelled. An attempt whose create timed
// out is resolved at the provider first. Errors: apperr.ErrUnauthenticated,
// apperr.InvalidInputError (empty key, order already confirmed),
// apperr.ErrNotFound, apperr.ErrForbidden, apperr.ErrHoldExpired (the hold
// ran out: the order is EXPIRED), apperr.ErrPaymentInProgress (an attempt
// is still open), apperr.ErrIdempotencyKeyReused.
func (s *Service) RetryPayment(ctx context.Context, user auth.User, orderID, key string) (Order, error) {
	if user.ID == "" {
		return Order{}, apperr.ErrUnauthenticated
	}
	if err := apperr.CheckIdempotencyKey("idempotencyKey", key); err != nil {
		return Order{}, err
	}
	o, err := s.Get(ctx, user, orderID) // ownership, lazy expiry
	if err != nil {
		return Order{}, fmt.Errorf("retry payment: %w", err)
	}
	// Resolve what is open before deciding (the create that timed out,
	// or a result whose notification has not come yet).
	s.resumeUnknown(ctx, o.ID)
	// With Stripe a declined (FAILED) intent stays payable: void it before
	// opening the next attempt, or the buyer could pay both. If the
	// provider says it was paid meanwhile, that is recorded (and confirms
	// the order, which the checks below then see).
	if err := s.voidPayableFailed(ctx, o.ID); err != nil {
		return Order{}, fmt.Errorf("retry payment: void the declined attempt first: %w: %w", apperr.ErrServiceUnavailable, err)
	}
	var p Payment
	var replay bool
	paymentID := newID()
	err = s.st.InTx(ctx, func(tx *store.Store) error {
		claimed, prev, err := tx.ClaimIdempotencyKey(ctx, user.ID, "retryPayment", key, hashOf(orderID), paymentID)
		if err != nil {
			return err
		}
		if !claimed {
			if string(prev.RequestHash) != string(hashOf(orderID)) {
				return apperr.ErrIdempotencyKeyReused
			}
			replay = true
			return nil
		}
		o, err = tx.GetOrderForUpdate(ctx, orderID)
		if err != nil {
			return err
		}
		switch o.Status {
		case OrderConfirmed:
			return apperr.Invalid("orderId", "the order is already confirmed")
		case OrderExpired, OrderCancelled:
			return apperr.ErrHoldExpired
		}
		h, err := tx.GetHold(ctx, o.HoldID)
		if err != nil {
			return err
		}
		if h.Status != holds.StatusActive {
			return apperr.ErrHoldExpired
		}
		req, err := s.newRequest(paymentID, orderID)
		if err != nil {
			return err
		}
		p, err = tx.InsertPayment(ctx, Payment{ID: paymentID, OrderID: orderID, Amount: o.TotalAmount, Currency: o.Currency,
			Provider: s.cfg.ProviderName, IdempotencyKey: "pay_" + paymentID, Request: req}, "attempt opened by retryPayment")
		if err != nil {
			return err
		}
		return tx.SetOrderStatus(ctx, orderID, OrderAwaitingPayment)
	})
	if errors.Is(err, store.ErrConflict) {
		err = apperr.ErrPaymentInProgress
	}
	if err != nil {
		return Order{}, fmt.Errorf("retry payment: %w", err)
	}
	if !replay {
		s.openAtProvider(ctx, p)
	}
	return s.st.GetOrder(ctx, orderID)
}

// voidPayableFailed voids at the provider the order's FAILED attempts, if
// with this provider they can still be paid (voidable).
func (s *Service) voidPayableFailed(ctx context.Context, orderID string) error {
	if !s.voidable(PaymentFailed) {
		return nil
	}
	ps, err := s.st.OrderPayments(ctx, orderID)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Status == PaymentFailed {
			if err := s.voidPayment(ctx, p.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// Get returns the caller's order, first expiring it if its hold ran out.
// Errors: apperr.ErrNotFound, apperr.ErrForbidden (another user's order).
func (s *Service) Get(ctx context.Context, user auth.User, orderID string) (Order, error) {
	if !validUUID(orderID) {
		return Order{}, fmt.Errorf("order: %w", apperr.ErrNotFound)
	}
	o, err := s.st.GetOrder(ctx, orderID)
	if errors.Is(err, store.ErrNotFound) {
		return Order{}, fmt.Errorf("order: %w", apperr.ErrNotFound)
	}
	if err != nil {
		return Order{}, err
	}
	if o.Owner != user.ID {
		return Order{}, fmt.Errorf("order: %w", apperr.ErrForbidden)
	}
	return s.expireIfDue(ctx, o)
}

// ByHold returns the order of a hold, or nil if it has none. The caller
// has already checked the hold is theirs.
func (s *Service) ByHold(ctx context.Context, holdID string) (*Order, error) {
	o, err := s.st.OrderByHold(ctx, holdID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o, err = s.expireIfDue(ctx, o)
	return &o, err
}

// Page is a page of orders, newest first.
type Page struct {
	Orders      []Order
	Cursors     []string
	HasNextPage bool
}

// List returns the caller's orders newest first, after the cursor.
// Errors: apperr.InvalidInputError (bad first or after).
func (s *Service) List(ctx context.Context, user auth.User, first int, after string) (Page, error) {
	if first < 0 || first > 100 {
		return Page{}, apperr.Invalid("first", "must be between 0 and 100")
	}
	var at *time.Time
	var id string
	if after != "" {
		t, i, err := decodeCursor(after)
		if err != nil {
			return Page{}, apperr.Invalid("after", "invalid cursor")
		}
		at, id = &t, i
	}
	os, err := s.st.ListOrders(ctx, user.ID, at, id, first+1)
	if err != nil {
		return Page{}, err
	}
	var p Page
	if len(os) > first {
		p.HasNextPage = true
		os = os[:first]
	}
	for _, o := range os {
		o, err = s.expireIfDue(ctx, o)
		if err != nil {
			return Page{}, err
		}
		p.Orders = append(p.Orders, o)
		p.Cursors = append(p.Cursors, encodeCursor(o.CreatedAt, o.ID))
	}
	return p, nil
}

func encodeCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", err
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok || !validUUID(id) {
		return time.Time{}, "", errors.New("bad cursor")
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	return t, id, err
}

// Payments lists an order's attempts, oldest first.
func (s *Service) Payments(ctx context.Context, orderID string) ([]Payment, error) {
	return s.st.OrderPayments(ctx, orderID)
}

// Tickets lists an order's tickets, VOID and USED ones included (each
// with its status): GraphQL's Order.tickets and REST's order both show this.
func (s *Service) Tickets(ctx context.Context, orderID string) ([]Ticket, error) {
	return s.st.OrderTickets(ctx, orderID)
}

// TicketKeysJWKS is the JWK Set of the ticket codes' public keys (GET
// /api/ticket-keys).
func (s *Service) TicketKeysJWKS() []byte { return s.cfg.TicketKeys.JWKS() }
