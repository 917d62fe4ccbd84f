// Package holds decides who gets a seat: one short Postgres transaction per
// hold (a conditional transition of inventory rows, judged by the database
// clock), with optional Redis leases in front that only filter contention.
//
// Idempotency: createHold claims (owner, "createHold", key) in the same
// transaction as the hold. A retry with the same arguments returns the stored
// hold with its current status (even EXPIRED); other arguments get
// apperr.ErrIdempotencyKeyReused; a concurrent duplicate waits on the key row
// and then reads the first result. A failed attempt (SEAT_UNAVAILABLE,
// HOLD_LIMIT_EXCEEDED, ...) rolls back with its key, so the key is free for
// another try.
package holds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/store"
)

// Hold statuses as stored (and read: ACTIVE past expires_at reads EXPIRED).
const (
	StatusActive    = "ACTIVE"
	StatusExpired   = "EXPIRED"
	StatusCancelled = "CANCELLED"
	StatusPurchased = "PURCHASED"
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
	Log                  *slog.Logger
	Now                  func() time.Time
}

// Service creates, cancels and reads holds.
type Service struct {
	st          *store.Store
	cfg         Config
	leases      LeaseStore
	metrics     *metrics
	health      health
	fallbackSem chan struct{}
	durations   sync.Map // eventID -> durationEntry, for provisional lease TTLs
}

type durationEntry struct {
	d       time.Duration
	fetched time.Time
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
		fallbackSem: make(chan struct{}, cfg.FallbackConcurrency)}
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
	case errors.Is(err, apperr.ErrServiceUnavailable):
		return "unavailable"
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
	hash := req.hash()
	holdID := uuid.Must(uuid.NewV7()).String()
	value := leaseValue(holdID, user.ID, s.cfg.Now())

	useLeases := s.leasesUsable()
	fallback := s.leases != nil && !useLeases
	var ours []string
	if useLeases && len(req.SeatIDs) > 0 {
		ttl, err := s.holdDuration(ctx, req.EventID)
		if err != nil {
			return Hold{}, false, err
		}
		ours, err = s.acquireLeases(ctx, user.ID, req.EventID, req.SeatIDs, value, holdID, ttl)
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

	var (
		h      Hold
		seats  []string
		replay bool
	)
	start := time.Now()
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		var err error
		h, seats, replay, err = s.holdTx(ctx, tx, user.ID, req, hash, holdID)
		return err
	})
	s.metrics.txDuration.Observe(time.Since(start).Seconds())
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

// holdDuration is the event's hold duration for provisional lease TTLs,
// cached for a minute (the committed expires_at resets the TTL anyway).
func (s *Service) holdDuration(ctx context.Context, eventID string) (time.Duration, error) {
	if e, ok := s.durations.Load(eventID); ok && time.Since(e.(durationEntry).fetched) < time.Minute {
		return e.(durationEntry).d, nil
	}
	ev, err := s.st.HoldEvent(ctx, eventID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("create hold: event: %w", apperr.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	d := time.Duration(ev.HoldDurationSeconds) * time.Second
	s.durations.Store(eventID, durationEntry{d, time.Now()})
	return d, nil
}

// holdTx is the hold transaction. It returns the hold, the seat ids it holds
// (for leases) and whether it is an idempotent replay of an earlier request.
func (s *Service) holdTx(ctx context.Context, tx *store.Store, owner string, req CreateRequest, hash []byte, holdID string) (Hold, []string, bool, error) {
	start, err := tx.BeginHold(ctx, owner, req.IdempotencyKey, hash, holdID, req.EventID)
	if err != nil {
		return Hold{}, nil, false, err
	}
	if !start.Claimed {
		prev, err := tx.GetIdempotencyKey(ctx, owner, "createHold", req.IdempotencyKey)
		if err != nil {
			return Hold{}, nil, false, err
		}
		if !bytes.Equal(prev.RequestHash, hash) {
			return Hold{}, nil, false, apperr.ErrIdempotencyKeyReused
		}
		h, err := tx.GetHold(ctx, prev.ResourceID)
		return h, nil, true, err
	}
	ev := start.Event
	if !start.EventFound {
		return Hold{}, nil, false, fmt.Errorf("event: %w", apperr.ErrNotFound)
	}
	if !ev.SaleOpen {
		return Hold{}, nil, false, apperr.ErrSaleNotOpen
	}
	if ev.QueueRequired && (s.cfg.Admission == nil || req.AdmissionToken == "" ||
		s.cfg.Admission.Verify(req.AdmissionToken, owner, ev.ID) != nil) {
		return Hold{}, nil, false, apperr.ErrQueueAdmissionRequired
	}
	if start.Tickets+req.quantity() > ev.MaxTicketsPerUser {
		return Hold{}, nil, false, &apperr.HoldLimitError{Limit: ev.MaxTicketsPerUser}
	}

	hold := func(ids []int64) ([]store.InventoryUnit, error) {
		return tx.HoldInventory(ctx, ev.ID, ids, holdID, owner, ev.ExpiresAt)
	}
	var units []store.InventoryUnit
	if len(req.SeatIDs) > 0 {
		u, err := s.holdSeats(ctx, tx, ev, req.SeatIDs, holdID, owner)
		if err != nil {
			return Hold{}, nil, false, err
		}
		units = append(units, u...)
	}
	if b := req.BestAvailable; b != nil {
		u, err := s.holdBest(ctx, tx, ev.ID, *b, hold)
		if err != nil {
			return Hold{}, nil, false, err
		}
		units = append(units, u...)
	}
	for _, g := range req.GeneralAdmission {
		u, err := tx.HoldGA(ctx, ev.ID, g.SectionID, g.Quantity, holdID, owner, ev.ExpiresAt)
		if err != nil {
			return Hold{}, nil, false, err
		}
		if len(u) < g.Quantity {
			return Hold{}, nil, false, s.sectionUnavailable(ctx, tx, ev.ID, g.SectionID, "GENERAL_ADMISSION", "input.generalAdmission.sectionId")
		}
		units = append(units, u...)
	}

	payload := outboxPayload(ev.ID, "hold", holdID, "HELD", units)
	h, items, currencies, err := tx.InsertHold(ctx, Hold{ID: holdID, EventID: ev.ID, Owner: owner, ExpiresAt: ev.ExpiresAt}, payload)
	if err != nil {
		return Hold{}, nil, false, err
	}
	if items != len(units) || currencies > 1 {
		return Hold{}, nil, false, fmt.Errorf("event %s: a held section has no price or prices mix currencies", ev.ID)
	}
	return h, seatIDs(units), false, nil
}

// holdSeats locks the explicit seats in id order and transitions them.
func (s *Service) holdSeats(ctx context.Context, tx *store.Store, ev store.HoldEvent, seats []string, holdID, owner string) ([]store.InventoryUnit, error) {
	known, units, err := tx.HoldSeats(ctx, ev.ID, seats, holdID, owner, ev.ExpiresAt)
	if err != nil {
		return nil, err
	}
	if len(known) < len(seats) {
		var unknown []string
		for _, seat := range seats {
			if !slices.Contains(known, seat) {
				unknown = append(unknown, seat)
			}
		}
		return nil, apperr.Invalid("input.seatIds", "not seats of this event: %v", unknown)
	}
	if len(units) < len(seats) {
		got := seatIDs(units)
		var taken []string
		for _, seat := range seats {
			if !slices.Contains(got, seat) {
				taken = append(taken, seat)
			}
		}
		return nil, &apperr.SeatUnavailableError{SeatIDs: taken}
	}
	return units, nil
}

// holdBest picks and holds the best available seats. Candidates are locked
// with SKIP LOCKED, so concurrent buyers pick different seats instead of
// queueing; a run partly taken meanwhile is excluded and the pick retried.
func (s *Service) holdBest(ctx context.Context, tx *store.Store, eventID string, b BestAvailable,
	hold func([]int64) ([]store.InventoryUnit, error)) ([]store.InventoryUnit, error) {
	var section *string
	if b.SectionID != "" {
		section = &b.SectionID
	}
	var ids []int64
	if b.Adjacent {
		var exclude []int64
		for range s.cfg.BestAvailableRetries {
			run, err := tx.PickAdjacent(ctx, eventID, section, b.Quantity, exclude)
			if err != nil || len(run) == 0 {
				ids = nil
				if err != nil {
					return nil, err
				}
				break
			}
			got, err := tx.LockHoldable(ctx, eventID, run)
			if err != nil {
				return nil, err
			}
			if len(got) == len(run) {
				ids = run
				break
			}
			for _, id := range run {
				if !slices.Contains(got, id) {
					exclude = append(exclude, id)
				}
			}
		}
	} else {
		got, err := tx.PickBestSeats(ctx, eventID, section, b.Quantity)
		if err != nil {
			return nil, err
		}
		if len(got) == b.Quantity {
			ids = got
		}
	}
	if ids == nil {
		if section == nil {
			return nil, &apperr.SeatUnavailableError{SeatIDs: []string{}}
		}
		return nil, s.sectionUnavailable(ctx, tx, eventID, *section, "SEATED", "input.bestAvailable.sectionId")
	}
	units, err := hold(ids)
	if err != nil {
		return nil, err
	}
	if len(units) < len(ids) { // cannot happen: the rows are locked and holdable
		return nil, &apperr.SeatUnavailableError{SeatIDs: []string{}}
	}
	return units, nil
}

// sectionUnavailable explains a shortfall in a section: BAD_USER_INPUT if it
// is not a section of that kind in the event's venue, else SEAT_UNAVAILABLE
// naming the section.
func (s *Service) sectionUnavailable(ctx context.Context, tx *store.Store, eventID, sectionID, kind, field string) error {
	k, err := tx.SectionKind(ctx, eventID, sectionID)
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

type outboxSeat struct {
	SeatID    string `json:"seatId"`
	SectionID string `json:"sectionId"`
	Status    string `json:"status"`
	Version   int64  `json:"version"`
}

type outboxGA struct {
	SectionID string `json:"sectionId"`
	Version   int64  `json:"version"`
}

// outboxPayload is the 'inventory' outbox message of a hold transition:
// {"eventId","kind","holdId","seats":[{seatId,sectionId,status,version}],
// "ga":[{sectionId,version}]} (GA sections changed, with their highest new
// version; consumers recount GA availability).
func outboxPayload(eventID, kind, holdID, status string, units []store.InventoryUnit) []byte {
	seats := []outboxSeat{}
	ga := []outboxGA{}
	for _, u := range units {
		if u.SeatID != nil {
			seats = append(seats, outboxSeat{*u.SeatID, u.SectionID, status, u.Version})
			continue
		}
		i := slices.IndexFunc(ga, func(g outboxGA) bool { return g.SectionID == u.SectionID })
		if i < 0 {
			ga = append(ga, outboxGA{u.SectionID, u.Version})
		} else if u.Version > ga[i].Version {
			ga[i].Version = u.Version
		}
	}
	b, _ := json.Marshal(map[string]any{"eventId": eventID, "kind": kind, "holdId": holdID, "seats": seats, "ga": ga})
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
		// TODO(orders): a hold whose order is AWAITING_PAYMENT may be
		// cancelled for now; the orders service should cancel the order
		// (or refuse) once it exists.
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
	return h, nil
}
