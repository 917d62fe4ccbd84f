// Package holds decides who gets a seat: one short Postgres transaction per
// hold (a conditional transition of inventory rows, judged by the database
// clock), with optional Redis leases in front that only filter contention.
// The transaction is one statement, hold_create
// (migrations/functions/hold_create.sql): one round trip.
//
// Idempotency: the hold row carries (owner, key) (unique) and the hash of the
// arguments, written in the same transaction as the hold. A retry with the
// same arguments returns the stored hold with its current status (even
// EXPIRED); other arguments get apperr.ErrIdempotencyKeyReused; a concurrent
// duplicate waits on the per-(user, event) lock and then reads the first
// result. A failed attempt (SEAT_UNAVAILABLE,
// HOLD_LIMIT_EXCEEDED, ...) rolls back with its key, so the key is free for
// another try.
package holds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/recent"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/store"
)

// Hold statuses as stored (and read: ACTIVE past expires_at reads EXPIRED).
// PURCHASED is written by store.PurchaseHold alone and read by nobody in Go.
const (
	StatusActive    = "ACTIVE"
	StatusExpired   = "EXPIRED"
	StatusCancelled = "CANCELLED"
)

// Hold is a hold as read from Postgres.
type Hold = store.Hold

// Item is a seat or GA unit of a hold with its captured price.
type Item = store.HoldItem

// AdmissionVerifier checks a virtual-queue admission token for a user and an
// event (the queue package implements it).
type AdmissionVerifier interface {
	Verify(token, userID, eventID string) error
}

// Config tunes the service; zero values get the defaults noted.
type Config struct {
	// Leases are the Redis leases; nil runs on Postgres alone.
	Leases LeaseStore
	// Admission verifies queue tokens; nil refuses queue-protected events.
	Admission AdmissionVerifier
	// RedisTimeout bounds every Redis call (100ms).
	RedisTimeout time.Duration
	// InFlightWindow: a lease of another user younger than this is an
	// attempt still in its transaction, and a fast conflict (2s).
	InFlightWindow time.Duration
	// FallbackConcurrency bounds concurrent hold transactions while Redis is
	// down (8); FallbackWait bounds the wait for a slot (2s).
	FallbackConcurrency int
	FallbackWait        time.Duration
	// ProbeInterval between Redis recovery probes while degraded (1s).
	ProbeInterval time.Duration
	// BestAvailableRetries: re-picks when a chosen run is taken meanwhile (3).
	BestAvailableRetries int
	// Concurrency bounds the hold transactions in flight (the hold lane,
	// 24: less than the main pool, so catalog reads and the workers always
	// find a connection), and LaneWait the wait for a place in it (500ms).
	// A hold that finds no place within LaneWait is refused at once with
	// RATE_LIMITED and a retryAfterSeconds (LaneRetryAfter, 1s) instead of
	// queueing for the pool for seconds. Orders, payment notifications,
	// reconciliation and compensations have a pool of their own
	// (app/orders.go) and never wait behind holds.
	Concurrency    int
	LaneWait       time.Duration
	LaneRetryAfter time.Duration
	// AddressCap, with AddressLimit > 0, caps the tickets held at once from
	// one client address (ClientAddr of the request's context) for one
	// event (HOLD_LIMIT_PER_ADDRESS): over it, *apperr.HoldLimitError with
	// PerAddress. Redis trouble lets the hold through (Postgres decides).
	AddressCap   AddressCap
	AddressLimit int
	ClientAddr   func(context.Context) string
	Log          *slog.Logger
	Now          func() time.Time
}

// Service creates, cancels and reads holds.
type Service struct {
	st          *store.Store
	cfg         Config
	leases      LeaseStore
	metrics     *metrics
	health      health
	fallbackSem chan struct{}
	lane        chan struct{}

	// pressure is the hold path's recent latency and shed holds (Pressure).
	pressure recent.Latency
	terms    sync.Map // eventID -> leaseTerms
	bounds   sync.Map // eventID/sectionID -> bestBounds
	hints    bestHints
}

// leaseTerms are what a request needs to know of its event before taking
// leases: the provisional lease TTL and whether the sale is queue-protected.
type leaseTerms struct {
	ttl           time.Duration
	queueRequired bool
	fetched       time.Time
}

// New returns the service.
func New(st *store.Store, cfg Config) *Service {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.RedisTimeout, 100*time.Millisecond)
	def(&cfg.InFlightWindow, 2*time.Second)
	def(&cfg.FallbackWait, 2*time.Second)
	def(&cfg.ProbeInterval, time.Second)
	def(&cfg.LaneWait, 500*time.Millisecond)
	def(&cfg.LaneRetryAfter, time.Second)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 24
	}
	if cfg.FallbackConcurrency <= 0 {
		cfg.FallbackConcurrency = 8
	}
	if cfg.BestAvailableRetries <= 0 {
		cfg.BestAvailableRetries = 3
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{st: st, cfg: cfg, leases: cfg.Leases, metrics: newMetrics(),
		fallbackSem: make(chan struct{}, cfg.FallbackConcurrency), lane: make(chan struct{}, cfg.Concurrency)}
}

// observe feeds a hold's latency (lane wait + transaction) into the EWMA
// that Pressure reports.
func (s *Service) observe(d time.Duration) { s.pressure.Observe(d) }

// Pressure reports the hold path's recent latency (an EWMA of lane wait +
// transaction; zero when no hold ran in the last 2 s) and the number of
// holds shed so far: the adaptive admission controller's signal
// (queue.Deps.Pressure).
func (s *Service) Pressure() (latency time.Duration, shed uint64) { return s.pressure.Read() }

// enterLane takes a place among the hold transactions in flight, or
// refuses after LaneWait (RATE_LIMITED with a retry delay): a saturated
// hold path answers quickly instead of queueing requests for seconds.
func (s *Service) enterLane(ctx context.Context) (release func(), err error) {
	select {
	case s.lane <- struct{}{}:
		return func() { <-s.lane }, nil
	default:
	}
	t := time.NewTimer(s.cfg.LaneWait)
	defer t.Stop()
	select {
	case s.lane <- struct{}{}:
		return func() { <-s.lane }, nil
	case <-t.C:
		s.metrics.shed.Inc()
		s.pressure.Fail()
		return nil, fmt.Errorf("create hold: the hold path is saturated: %w", &apperr.RateLimitedError{RetryAfter: s.cfg.LaneRetryAfter})
	case <-ctx.Done():
		return nil, errors.Join(apperr.ErrServiceUnavailable, ctx.Err())
	}
}

// Wait waits for background Redis probes to finish (for tests and shutdown).
func (s *Service) Wait() { s.health.wg.Wait() }

// Create holds the requested seats and units for the event's hold duration,
// all or nothing. Errors: apperr.InvalidInputError (bad or unknown seats and
// sections), apperr.ErrNotFound (event), apperr.ErrSaleNotOpen,
// apperr.ErrQueueAdmissionRequired, apperr.ErrIdempotencyKeyReused,
// *apperr.HoldLimitError, *apperr.SeatUnavailableError (with the seats, or
// the section ids of best-available/GA requests), apperr.ErrServiceUnavailable
// (Redis down and the bounded fallback is saturated).
func (s *Service) Create(ctx context.Context, user auth.User, req CreateRequest) (Hold, error) {
	h, replay, err := s.create(ctx, user, req)
	s.metrics.attempts.WithLabelValues(resultLabel(replay, err)).Inc()
	return h, err
}

func resultLabel(replay bool, err error) string {
	var (
		seats *apperr.SeatUnavailableError
		limit *apperr.HoldLimitError
		inv   *apperr.InvalidInputError
	)
	switch {
	case err == nil && replay:
		return "replay"
	case err == nil:
		return "ok"
	case errors.As(err, &seats):
		return "conflict"
	case errors.As(err, &limit):
		return "limit"
	case errors.As(err, &inv):
		return "invalid"
	case errors.Is(err, apperr.ErrSaleNotOpen):
		return "sale_not_open"
	case errors.Is(err, apperr.ErrQueueAdmissionRequired):
		return "not_admitted"
	case errors.Is(err, apperr.ErrNotFound), errors.Is(err, apperr.ErrIdempotencyKeyReused), errors.Is(err, apperr.ErrUnauthenticated):
		return "refused" // the caller's mistake, not ours
	case errors.Is(err, apperr.ErrServiceUnavailable):
		return "unavailable"
	case errors.As(err, new(*apperr.RateLimitedError)):
		return "shed"
	}
	return "error"
}

func (s *Service) create(ctx context.Context, user auth.User, req CreateRequest) (Hold, bool, error) {
	if user.ID == "" {
		return Hold{}, false, apperr.ErrUnauthenticated
	}
	if err := req.validate(); err != nil {
		return Hold{}, false, err
	}
	if err := s.neverFits(ctx, req); err != nil {
		return Hold{}, false, fmt.Errorf("create hold: %w", err)
	}
	hash := req.hash()
	holdID := uuid.Must(uuid.NewV7()).String()
	value := leaseValue(holdID, user.ID, s.cfg.Now())
	capped, err := s.reserveAddress(ctx, req, holdID)
	if err != nil {
		return Hold{}, false, err
	}
	var committed *Hold // set once the hold is new and committed
	defer func() { capped.settle(committed) }()

	// The admission token is verified offline; hold_create refuses a
	// queue-protected event without it.
	admitted := req.AdmissionToken != "" && s.cfg.Admission != nil &&
		s.cfg.Admission.Verify(req.AdmissionToken, user.ID, req.EventID) == nil
	// Without Redis, the holds that would have taken leases (explicit
	// seats) run a bounded few at a time (enterFallback), so the contention
	// the leases absorbed does not all land on Postgres; general admission
	// and best-available holds never take leases and keep the hold lane.
	useLeases := s.leasesUsable()
	fallback := s.leases != nil && !useLeases && len(req.SeatIDs) > 0
	var ours []string
	if useLeases && len(req.SeatIDs) > 0 {
		terms, err := s.leaseTerms(ctx, req.EventID)
		if err != nil {
			return Hold{}, false, err
		}
		if terms.queueRequired && !admitted {
			// Postgres will refuse it, so it takes no lease: a caller going
			// round the waiting room must not keep seats from admitted
			// buyers, even for a moment. Postgres still decides (stale terms
			// only cost the lease shortcut).
			useLeases = false
		} else {
			ours, err = s.acquireLeases(ctx, user.ID, req.EventID, req.SeatIDs, value, holdID, terms.ttl)
		}
		var conflict errLeaseConflict
		switch {
		case errors.As(err, &conflict):
			s.metrics.conflicts.WithLabelValues("lease").Inc()
			return Hold{}, false, fmt.Errorf("create hold: %w", &apperr.SeatUnavailableError{SeatIDs: conflict.seats})
		case err != nil:
			s.redisFailed(err)
			useLeases, fallback = false, true
		}
	}
	if fallback {
		release, err := s.enterFallback(ctx)
		if err != nil {
			return Hold{}, false, err
		}
		defer release()
	}

	entered := time.Now()
	leave, err := s.enterLane(ctx)
	if err != nil {
		s.releaseLeases(req.EventID, ours, holdID)
		return Hold{}, false, err
	}
	defer leave()
	start := time.Now()
	h, seats, replay, err := s.holdDB(ctx, user.ID, req, hash, holdID, admitted)
	s.metrics.txDuration.Observe(time.Since(start).Seconds())
	s.observe(time.Since(entered))
	if err == nil && !replay {
		committed = &h
	}
	if err != nil || replay {
		s.releaseLeases(req.EventID, ours, holdID)
		var su *apperr.SeatUnavailableError
		if errors.As(err, &su) {
			s.metrics.conflicts.WithLabelValues("postgres").Inc()
		}
		if err != nil {
			return Hold{}, false, fmt.Errorf("create hold: %w", err)
		}
		return h, true, nil
	}
	if useLeases {
		s.setLeases(req.EventID, seats, value, h.ExpiresAt)
	}
	return h, false, nil
}

// leaseTerms are the event's hold duration (for provisional lease TTLs; the
// committed expires_at resets the TTL anyway) and its queue requirement,
// cached for a minute.
func (s *Service) leaseTerms(ctx context.Context, eventID string) (leaseTerms, error) {
	if e, ok := s.terms.Load(eventID); ok && time.Since(e.(leaseTerms).fetched) < time.Minute {
		return e.(leaseTerms), nil
	}
	ev, err := s.st.HoldEvent(ctx, eventID)
	if errors.Is(err, store.ErrNotFound) {
		return leaseTerms{}, fmt.Errorf("create hold: event: %w", apperr.ErrNotFound)
	}
	if err != nil {
		return leaseTerms{}, err
	}
	t := leaseTerms{ttl: time.Duration(ev.HoldDurationSeconds) * time.Second, queueRequired: ev.QueueRequired, fetched: time.Now()}
	s.terms.Store(eventID, t)
	return t, nil
}

// bestBounds are an event's BestBounds, cached for a minute (a venue's
// seats do not change).
type bestBounds struct {
	store.BestBounds
	fetched time.Time
}

// neverFits refuses, before the database's search, a best-available pick
// that no state of the inventory could satisfy: more adjacent seats than
// the longest row has, more seats than the section(s) have. The refusal is
// the one hold_create would give (refusal: SEAT_UNAVAILABLE naming the
// section, BAD_USER_INPUT for a section not seated in the venue); an
// unknown event is left to hold_create (NOT_FOUND). The database's search
// reads every row to refuse it (0.1 s on 20,000 seats).
func (s *Service) neverFits(ctx context.Context, req CreateRequest) error {
	b := req.BestAvailable
	if b == nil {
		return nil
	}
	key := req.EventID + "/" + b.SectionID
	e, ok := s.bounds.Load(key)
	if !ok || time.Since(e.(bestBounds).fetched) > time.Minute {
		got, err := s.st.BestAvailableBounds(ctx, req.EventID, b.SectionID)
		if err != nil {
			return err
		}
		e = bestBounds{got, time.Now()}
		s.bounds.Store(key, e)
	}
	bb := e.(bestBounds)
	limit := bb.Seats
	if b.Adjacent {
		limit = bb.LongestRow
	}
	if !bb.EventFound || b.Quantity <= limit {
		return nil
	}
	var ids []string
	if b.SectionID != "" {
		ids = []string{b.SectionID}
	}
	return s.refusal(ctx, req, &store.HoldRefusedError{Reason: "best_unavailable", IDs: ids})
}

// holdDB runs the hold decision in Postgres (store.CreateHold, one round
// trip). It returns the hold, the seat ids it holds (for leases) and whether
// it is an idempotent replay of an earlier request.
func (s *Service) holdDB(ctx context.Context, owner string, req CreateRequest, hash []byte, holdID string, admitted bool) (Hold, []string, bool, error) {
	a := store.CreateHoldArgs{Owner: owner, Key: req.IdempotencyKey, Hash: hash, HoldID: holdID,
		EventID: req.EventID, SeatIDs: req.SeatIDs, BestRetries: s.cfg.BestAvailableRetries, Admitted: admitted}
	var hint string
	if b := req.BestAvailable; b != nil {
		a.BestQty, a.BestAdjacent = b.Quantity, b.Adjacent
		if b.SectionID != "" {
			a.BestSection = &b.SectionID
		}
		hint = bestHintKey(req.EventID, b.SectionID, b.Adjacent, b.Quantity)
		a.BestFrom = s.hints.from(hint, s.cfg.Now())
	}
	for _, g := range req.GeneralAdmission {
		a.GASections = append(a.GASections, g.SectionID)
		a.GAQuantities = append(a.GAQuantities, int32(g.Quantity))
	}
	r, err := s.st.CreateHold(ctx, a)
	if err == nil && hint != "" {
		s.hints.found(hint, a.BestFrom, r.BestRow, s.cfg.Now())
	}
	var refused *store.HoldRefusedError
	switch {
	case errors.As(err, &refused):
		return Hold{}, nil, false, s.refusal(ctx, req, refused)
	case err != nil:
		return Hold{}, nil, false, err
	case r.Outcome == "reused":
		return Hold{}, nil, false, apperr.ErrIdempotencyKeyReused
	case r.Outcome == "replay":
		h, err := s.st.GetHold(ctx, r.Hold.ID)
		return h, nil, true, err
	}
	return r.Hold, r.SeatIDs, false, nil
}

// refusal turns the database's refusal into the contract's error.
func (s *Service) refusal(ctx context.Context, req CreateRequest, e *store.HoldRefusedError) error {
	first := func() string {
		if len(e.IDs) == 0 {
			return ""
		}
		return e.IDs[0]
	}
	switch e.Reason {
	case store.RefusalEventNotFound:
		return fmt.Errorf("event: %w", apperr.ErrNotFound)
	case store.RefusalSaleNotOpen:
		return apperr.ErrSaleNotOpen
	case store.RefusalQueueAdmissionRequired:
		return apperr.ErrQueueAdmissionRequired
	case store.RefusalHoldLimit:
		return &apperr.HoldLimitError{Limit: e.Limit}
	case store.RefusalUnknownSeats:
		return apperr.Invalid("input.seatIds", "not seats of this event: %v", e.IDs)
	case store.RefusalSeatsUnavailable:
		return &apperr.SeatUnavailableError{SeatIDs: e.IDs}
	case store.RefusalBestUnavailable:
		if first() == "" {
			return &apperr.SeatUnavailableError{SeatIDs: []string{}}
		}
		return s.sectionUnavailable(ctx, req.EventID, first(), "SEATED", "input.bestAvailable.sectionId")
	case store.RefusalGAUnavailable:
		return s.sectionUnavailable(ctx, req.EventID, first(), "GENERAL_ADMISSION", "input.generalAdmission.sectionId")
	case store.RefusalUnpriced:
		return fmt.Errorf("event %s: a held section has no price or prices mix currencies", req.EventID)
	}
	return e
}

// sectionUnavailable explains a shortfall in a section: BAD_USER_INPUT if it
// is not a section of that kind in the event's venue, else SEAT_UNAVAILABLE
// naming the section.
func (s *Service) sectionUnavailable(ctx context.Context, eventID, sectionID, kind, field string) error {
	k, err := s.st.SectionKind(ctx, eventID, sectionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && k != kind) {
		return apperr.Invalid(field, "not a %s section of this event's venue", kind)
	}
	if err != nil {
		return err
	}
	return &apperr.SeatUnavailableError{SeatIDs: []string{sectionID}}
}

func seatIDs(units []store.InventoryUnit) []string {
	var out []string
	for _, u := range units {
		if u.SeatID != nil {
			out = append(out, *u.SeatID)
		}
	}
	return out
}

// outboxPayload is the 'inventory' outbox message of a hold transition
// (cancel, expire): an outbox.InventoryChange.
func outboxPayload(eventID, kind, holdID, status string, units []store.InventoryUnit) []byte {
	b, _ := json.Marshal(outbox.NewInventoryChange(eventID, kind, holdID, "", status, units))
	return b
}

// Get returns the caller's hold. Errors: apperr.ErrNotFound,
// apperr.ErrForbidden (another user's hold).
func (s *Service) Get(ctx context.Context, user auth.User, holdID string) (Hold, error) {
	if !validUUID(holdID) {
		return Hold{}, fmt.Errorf("hold: %w", apperr.ErrNotFound)
	}
	h, err := s.st.GetHold(ctx, holdID)
	if errors.Is(err, store.ErrNotFound) {
		return Hold{}, fmt.Errorf("hold: %w", apperr.ErrNotFound)
	}
	if err != nil {
		return Hold{}, err
	}
	if h.Owner != user.ID {
		return Hold{}, fmt.Errorf("hold: %w", apperr.ErrForbidden)
	}
	return h, nil
}

// Items lists the items of a hold (no ownership check: the caller has the
// hold already).
func (s *Service) Items(ctx context.Context, holdID string) ([]Item, error) {
	return s.st.HoldItems(ctx, holdID)
}

// Cancel ends the caller's active hold at once: its seats are AVAILABLE
// again (new versions), its items' periods are cut, the outbox records it,
// and its leases are released (compare-and-delete). Errors:
// apperr.ErrNotFound, apperr.ErrForbidden (another user's hold),
// apperr.ErrHoldExpired (expired, cancelled or purchased).
func (s *Service) Cancel(ctx context.Context, user auth.User, holdID string) (Hold, error) {
	if !validUUID(holdID) {
		return Hold{}, fmt.Errorf("cancel hold: %w", apperr.ErrNotFound)
	}
	var (
		h     Hold
		units []store.InventoryUnit
	)
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		var err error
		h, err = tx.GetHoldForUpdate(ctx, holdID)
		if errors.Is(err, store.ErrNotFound) {
			return apperr.ErrNotFound
		}
		if err != nil {
			return err
		}
		if h.Owner != user.ID {
			return apperr.ErrForbidden
		}
		if h.Status != StatusActive {
			return apperr.ErrHoldExpired
		}
		// A hold whose order is still AWAITING_PAYMENT may be cancelled:
		// the buyer gives up. The orders engine then finds the hold
		// CANCELLED, marks the order CANCELLED and voids the open payment
		// (orders/compensate.go); a charge that lands anyway is refunded, since
		// confirmation requires the hold's rows to still be HELD by it.
		units, err = tx.ReleaseHold(ctx, h.EventID, h.ID, false)
		if err != nil {
			return err
		}
		h.Status = StatusCancelled
		return tx.EndHold(ctx, h.ID, StatusCancelled, outboxPayload(h.EventID, "cancel", h.ID, "AVAILABLE", units))
	})
	if err != nil {
		return Hold{}, fmt.Errorf("cancel hold: %w", err)
	}
	s.releaseLeases(h.EventID, seatIDs(units), h.ID)
	s.ReleaseAddressCap(ctx, h.EventID, h.ID)
	return h, nil
}

// EndEventHolds ends every ACTIVE hold of an event at once (the event was
// cancelled): as Cancel does for one, each in its own short transaction,
// seats AVAILABLE, items' periods cut, the outbox written and leases
// released. It returns how many holds it ended.
func (s *Service) EndEventHolds(ctx context.Context, eventID string) (int, error) {
	ids, err := s.st.ActiveHoldsOfEvent(ctx, eventID)
	if err != nil {
		return 0, fmt.Errorf("end event holds: %w", err)
	}
	n := 0
	for _, id := range ids {
		var units []store.InventoryUnit
		ended := false
		err := s.st.InTx(ctx, func(tx *store.Store) error {
			h, err := tx.GetHoldForUpdate(ctx, id)
			if err != nil || h.Status != StatusActive {
				return err
			}
			if units, err = tx.ReleaseHold(ctx, h.EventID, h.ID, false); err != nil {
				return err
			}
			ended = true
			return tx.EndHold(ctx, h.ID, StatusCancelled, outboxPayload(h.EventID, "cancel", h.ID, "AVAILABLE", units))
		})
		if err != nil {
			return n, fmt.Errorf("end event holds: hold %s: %w", id, err)
		}
		if ended {
			n++
			s.releaseLeases(eventID, seatIDs(units), id)
			s.ReleaseAddressCap(ctx, eventID, id)
		}
	}
	return n, nil
}
