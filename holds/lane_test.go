package holds_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/holds"
)

// TestSaturatedHoldLaneRefusesQuickly: with every place of the hold lane
// taken by transactions stuck in Postgres (behind a lock this test holds),
// a further hold is refused by itself with RATE_LIMITED and a retry delay
// instead of queueing (its own context has no deadline: without the lane it
// would wait until the lock goes). An abandoned request (its context
// cancelled) stops costing: its query is cancelled in Postgres and its place
// is given back. Once the lock goes, the stuck holds and the retry succeed.
func TestSaturatedHoldLaneRefusesQuickly(t *testing.T) {
	e := newEnv(t, false, holds.Config{Concurrency: 3, LaneWait: 50 * time.Millisecond})
	ev := createEvent(t, e.pool, eventSpec{})
	stuck := user(1)

	// Block user 1's holds in Postgres: hold_create takes the per-(user,
	// event) advisory lock first.
	conn, err := e.pool.Acquire(context.Background())
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(context.Background())
	require.NoError(t, err)
	_, err = tx.Exec(context.Background(), `SELECT pg_advisory_xact_lock(hashtextextended($1::text || ':' || $2, 0))`, ev.ID, stuck.ID)
	require.NoError(t, err)
	waiting := func() int {
		return count(t, e.pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	}

	// Two stuck holds and one whose request will be abandoned fill the lane.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = e.svc.Create(context.Background(), stuck, seatsReq(ev, ev.Seats[0][i]))
		})
	}
	abandon, cancel := context.WithCancel(context.Background())
	abandoned := make(chan error, 1)
	go func() {
		_, err := e.svc.Create(abandon, stuck, seatsReq(ev, ev.Seats[0][5]))
		abandoned <- err
	}()
	require.Eventually(t, func() bool { return waiting() == 3 }, 30*time.Second, 10*time.Millisecond)

	// The lane is full: another buyer is refused by itself, quickly.
	_, err = e.svc.Create(context.Background(), user(2), seatsReq(ev, ev.Seats[1][0]))
	var rl *apperr.RateLimitedError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 1, rl.RetryAfterSeconds())
	d, _ := apperr.Describe(err)
	require.Equal(t, "RATE_LIMITED", d.Code)
	require.Equal(t, 1, d.Extensions["retryAfterSeconds"])
	_, shed := e.svc.Pressure()
	require.EqualValues(t, 1, shed, "the refusal is reported to the admission controller")

	// The abandoned request stops costing: Postgres no longer runs it, and
	// its place serves the next buyer.
	cancel()
	require.Error(t, <-abandoned)
	require.Eventually(t, func() bool { return waiting() == 2 }, 30*time.Second, 10*time.Millisecond)
	h, err := e.svc.Create(context.Background(), user(2), seatsReq(ev, ev.Seats[1][0]))
	require.NoError(t, err, "the abandoned request's place was given back")
	require.NotEmpty(t, h.ID)
	lat, _ := e.svc.Pressure()
	require.Positive(t, lat, "the hold's latency is reported to the admission controller")
	require.Zero(t, count(t, e.pool, `SELECT count(*) FROM inventory WHERE seat_id = $1 AND status <> 'AVAILABLE'`, ev.Seats[0][5]), "the abandoned hold took nothing")

	require.NoError(t, tx.Commit(context.Background()))
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.False(t, errors.Is(err, apperr.ErrServiceUnavailable))
}
