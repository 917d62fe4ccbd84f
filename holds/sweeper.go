package holds

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ticketing/ticketing/store"
)

// SweepBatch is how many expired holds one sweep transaction handles. It
// holds their rows' locks until it commits, about four round trips per
// hold, and a paid buyer's late notification or a fan reclaiming an expired
// seat waits for them: at 200 a sweep held 200 holds for 3 s under a sale's
// load (seen in pg_stat_activity during the 20,000-buyer run, five to
// seven transactions waiting on it); 20 keeps that wait short.
const SweepBatch = 20

// Sweep writes down expiries: ACTIVE holds past expires_at become EXPIRED,
// their items' periods are cut, their inventory rows still HELD by them
// return to AVAILABLE with new versions, and the outbox records it. It never
// waits on a locked hold or row (a buyer reclaiming the seat wins), and
// correctness never depends on it: an expired HELD row is holdable and an
// expired hold reads EXPIRED anyway. A hold with a row it had to skip stays
// ACTIVE (and expired by its time) until a later sweep frees that row too:
// the transaction holding the lock may roll back, and a hold marked EXPIRED
// would never be swept again, leaving the row HELD on the live seat map. It
// returns the number of holds swept (ended).
func (s *Service) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		locked, ended := 0, 0
		err := s.st.InTx(ctx, func(tx *store.Store) error {
			holds, err := tx.LockExpiredHolds(ctx, SweepBatch)
			if err != nil {
				return err
			}
			locked = len(holds)
			for _, h := range holds {
				units, err := tx.ReleaseHold(ctx, h[1], h[0], true)
				if err != nil {
					return err
				}
				payload := outboxPayload(h[1], "expire", h[0], "AVAILABLE", units)
				left, err := tx.HeldRowsLeft(ctx, h[1], h[0])
				if err != nil {
					return err
				}
				if left > 0 {
					if len(units) > 0 { // publish what was freed now
						if err := tx.OutboxInsert(ctx, h[1], "inventory", json.RawMessage(payload)); err != nil {
							return err
						}
					}
					continue
				}
				if err := tx.EndHold(ctx, h[0], StatusExpired, payload); err != nil {
					return err
				}
				ended++
			}
			return nil
		})
		total += ended
		if err != nil || locked < SweepBatch || ended < locked {
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
