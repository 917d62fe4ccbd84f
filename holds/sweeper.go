package holds

import (
	"context"
	"time"

	"github.com/ticketing/ticketing/store"
)

// SweepBatch is how many expired holds one sweep transaction handles.
const SweepBatch = 200

// Sweep writes down expiries: ACTIVE holds past expires_at become EXPIRED,
// their items' periods are cut, their inventory rows still HELD by them
// return to AVAILABLE with new versions, and the outbox records it. It never
// waits on a locked hold or row (a buyer reclaiming the seat wins), and
// correctness never depends on it: an expired HELD row is holdable and an
// expired hold reads EXPIRED anyway. It returns the number of holds swept.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		n := 0
		err := s.st.InTx(ctx, func(tx *store.Store) error {
			holds, err := tx.LockExpiredHolds(ctx, SweepBatch)
			if err != nil {
				return err
			}
			n = len(holds)
			for _, h := range holds {
				units, err := tx.ReleaseHold(ctx, h[1], h[0], true)
				if err != nil {
					return err
				}
				if err := tx.EndHold(ctx, h[0], StatusExpired, outboxPayload(h[1], "expire", h[0], "AVAILABLE", units)); err != nil {
					return err
				}
			}
			return nil
		})
		total += n
		if err != nil || n < SweepBatch {
			return total, err
		}
	}
}

// RunSweeper sweeps every interval until ctx ends (a background worker).
func (s *Service) RunSweeper(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("hold sweeper", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
