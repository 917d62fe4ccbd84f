package holds

import (
	"context"
	"time"

	"github.com/ticketing/ticketing/apperr"
)

// AddressCap is the store of HOLD_LIMIT_PER_ADDRESS (redisstore.HoldCaps).
type AddressCap interface {
	Reserve(ctx context.Context, eventID, addr, holdID string, units, limit int, now, until time.Time) (bool, error)
	Extend(ctx context.Context, eventID, addr, holdID string, units int, expiresAt time.Time) error
	Release(ctx context.Context, eventID, holdID string) error
}

// addressReservation is a hold's place under its address's cap, taken
// before the hold transaction (for a minute at most) and either extended to
// the hold's expiry or given back.
type addressReservation struct {
	s                     *Service
	ctx                   context.Context
	eventID, addr, holdID string
	units                 int
}

// reserveAddress counts req's units against its client address's cap; nil
// when there is no cap (or no address, or Redis did not answer).
func (s *Service) reserveAddress(ctx context.Context, req CreateRequest, holdID string) (*addressReservation, error) {
	if s.cfg.AddressCap == nil || s.cfg.AddressLimit <= 0 || s.cfg.ClientAddr == nil {
		return nil, nil
	}
	addr := s.cfg.ClientAddr(ctx)
	if addr == "" {
		return nil, nil
	}
	units := req.quantity()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RedisTimeout)
	defer cancel()
	now := time.Now()
	ok, err := s.cfg.AddressCap.Reserve(rctx, req.EventID, addr, holdID, units, s.cfg.AddressLimit, now, now.Add(time.Minute))
	if err != nil {
		s.cfg.Log.WarnContext(ctx, "hold cap per address unavailable; hold allowed", "err", err)
		return nil, nil
	}
	if !ok {
		return nil, &apperr.HoldLimitError{Limit: s.cfg.AddressLimit, PerAddress: true}
	}
	return &addressReservation{s: s, ctx: context.WithoutCancel(ctx), eventID: req.EventID, addr: addr, holdID: holdID, units: units}, nil
}

// settle extends the reservation to the committed hold's expiry, or gives
// it back (nil: no new hold: a failure or an idempotent replay).
func (r *addressReservation) settle(h *Hold) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.s.cfg.RedisTimeout)
	defer cancel()
	if h != nil {
		_ = r.s.cfg.AddressCap.Extend(ctx, r.eventID, r.addr, r.holdID, r.units, h.ExpiresAt)
		return
	}
	_ = r.s.cfg.AddressCap.Release(ctx, r.eventID, r.holdID)
}

// ReleaseAddressCap stops counting a hold that ended (cancelled, bought,
// or its event cancelled) against the cap of the address that made it; an
// expired hold stops counting at its expiry by itself.
func (s *Service) ReleaseAddressCap(ctx context.Context, eventID, holdID string) {
	if s.cfg.AddressCap == nil || s.cfg.AddressLimit <= 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RedisTimeout)
	defer cancel()
	if err := s.cfg.AddressCap.Release(rctx, eventID, holdID); err != nil {
		s.cfg.Log.WarnContext(ctx, "hold cap per address: release failed; it counts until the hold's expiry", "hold", holdID, "err", err)
	}
}
