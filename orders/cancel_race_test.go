package orders_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/store"
)

// waitCancelSweep waits until the event's cancel sweep job is in state.
func (e *env) waitCancelSweep(state string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		return e.count(`SELECT count(*) FROM river_job WHERE kind = 'orders.cancel_sweep' AND args->>'event_id' = $1 AND state = $2`,
			e.ev.ID, state) == 1
	}, 30*time.Second, 20*time.Millisecond, "cancel sweep never %s", state)
}

func (e *env) activeHolds() int {
	e.t.Helper()
	return e.count(`SELECT count(*) FROM holds WHERE event_id = $1 AND status = 'ACTIVE'`, e.ev.ID)
}

// A hold whose transaction read the event before cancelEvent and commits
// after cancelEvent's own sweep: the sweep job, which waits for the
// transactions in flight when it runs, ends it. The hold transaction is
// held open until the job is running, so a job that did not wait would
// sweep before the commit and leave the hold ACTIVE.
func TestCancelEventEndsAHoldCommittedAfterIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true})
	err := e.st.InTx(e.ctx, func(tx *store.Store) error {
		_, err := tx.CreateHold(e.ctx, store.CreateHoldArgs{Owner: "dora", Key: "k", Hash: []byte("h"),
			HoldID: uuid.Must(uuid.NewV7()).String(), EventID: e.ev.ID, SeatIDs: []string{e.ev.Seats[3]}})
		if err != nil {
			return err
		}
		if err := e.svc.CancelEvent(e.ctx, admin, e.ev.ID, "storm"); err != nil {
			return err
		}
		e.waitCancelSweep("running")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "HELD", e.seatStatus(3), "the race is reproduced: a hold committed after the cancellation")
	e.waitCancelSweep("completed")
	require.Equal(t, 0, e.activeHolds())
	require.Equal(t, "AVAILABLE", e.seatStatus(3))
	e.auditClean()
}

// Many buyers holding while cancelEvent runs: once its sweep job has run,
// no hold of the cancelled event is ACTIVE and no seat is held; every hold
// after the cancellation was refused with SALE_NOT_OPEN.
func TestCancelEventRacingHolds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{workers: true})
	e.ev = fixtures.SmallEvent(t, e.pool, fixtures.EventOptions{Seats: 2000})
	const buyers = 16
	var (
		wg      sync.WaitGroup
		made    atomic.Int64
		refused atomic.Int64
		enough  = make(chan struct{})
		once    sync.Once
	)
	for g := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seat := g; seat < len(e.ev.Seats); seat += buyers {
				u := user(fmt.Sprintf("buyer-%d-%d", g, seat))
				_, err := e.holds.Create(e.ctx, u, holds.CreateRequest{EventID: e.ev.ID, IdempotencyKey: uuid.NewString(),
					SeatIDs: []string{e.ev.Seats[seat]}})
				switch {
				case errors.Is(err, apperr.ErrSaleNotOpen):
					refused.Add(1)
					return
				case !assertNoError(t, err):
					return
				}
				if made.Add(1) == 2*buyers {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	<-enough
	require.NoError(t, e.svc.CancelEvent(e.ctx, admin, e.ev.ID, "storm"))
	wg.Wait()
	require.Equal(t, int64(buyers), refused.Load(), "every buyer ends refused")
	e.waitCancelSweep("completed")
	require.Equal(t, 0, e.activeHolds())
	require.Equal(t, 0, e.count(`SELECT count(*) FROM inventory WHERE event_id = $1 AND status = 'HELD' AND expires_at > now()`, e.ev.ID))
	t.Logf("%d holds made before the cancellation", made.Load())
}
