package seatmap_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/metrictest"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/seatmap"
)

// loads is how many times svc's projections were loaded from Postgres
// for reason.
func loads(t *testing.T, reg *prometheus.Registry, reason string) int {
	t.Helper()
	return int(metrictest.Value(t, reg, "ticketing_seatmap_snapshot_loads_total", "reason", reason))
}

// streamVersions is the newest version per seat in the event's stream
// entries up to cursor, read from Redis.
func streamVersions(t *testing.T, b *bundle, cursor string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if cursor == "0-0" {
		return out
	}
	msgs, err := b.rdb.XRange(context.Background(), b.prefix+"seatmap:{"+b.eventID+"}", "-", cursor).Result()
	require.NoError(t, err)
	var v seatmap.View
	for _, m := range msgs {
		var u seatmap.Update
		raw, _ := m.Values["u"].(string)
		require.NoError(t, json.Unmarshal([]byte(raw), &u))
		v.Apply(&u)
	}
	for id, s := range v.Seats {
		out[id] = s.Version
	}
	return out
}

// TestProjectionEqualsDatabaseAfterRacingHolds: buyers race holds and
// cancels on every seat and the GA floor while readers take snapshots. No
// snapshot is older than a change up to its own cursor; once the changes
// settle the snapshot equals Postgres's view, and the projection got there
// from the stream (one load from Postgres).
// It runs with the projection reading its stream at every snapshot
// (Refresh 1ms) and with the default Refresh, where a projection whose
// event the change feed has not named is served without reading it.
func TestProjectionEqualsDatabaseAfterRacingHolds(t *testing.T) {
	t.Parallel()
	for _, refresh := range []time.Duration{time.Millisecond, 0} {
		t.Run(fmt.Sprintf("Refresh=%s", refresh), func(t *testing.T) {
			t.Parallel()
			testProjectionEqualsDatabaseAfterRacingHolds(t, refresh)
		})
	}
}

func testProjectionEqualsDatabaseAfterRacingHolds(t *testing.T, refresh time.Duration) {
	b := setup(t)
	reg := prometheus.NewRegistry()
	// (A relay slowed down by a loaded machine must not count as behind here.)
	svc := b.service(t, seatmap.Config{Refresh: refresh, MaxRelayLag: time.Hour, Registerer: reg})
	b.relay(t, svc)
	ctx := context.Background()
	_, err := svc.Snapshot(ctx, b.eventID)
	require.NoError(t, err)

	stop := make(chan struct{})
	var buyers, readers sync.WaitGroup
	var held atomic.Int64
	for i := range 16 {
		buyers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			user := auth.User{ID: "racer-" + uuid.NewString()}
			for range 25 {
				req := holds.CreateRequest{EventID: b.eventID, IdempotencyKey: uuid.NewString()}
				if rng.IntN(3) == 0 {
					req.GeneralAdmission = []holds.GARequest{{SectionID: b.ga, Quantity: 1}}
				} else {
					req.SeatIDs = []string{b.seats[rng.IntN(len(b.seats))]}
				}
				h, err := b.holds.Create(ctx, user, req)
				var taken *apperr.SeatUnavailableError
				var shed *apperr.RateLimitedError
				if errors.As(err, &taken) || errors.As(err, &shed) {
					continue
				}
				if !assertNoError(t, err) {
					return
				}
				held.Add(1)
				if rng.IntN(2) == 0 {
					if _, err = b.holds.Cancel(ctx, user, h.ID); !assertNoError(t, err) {
						return
					}
				}
			}
		})
	}
	var snaps atomic.Int64
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, err := svc.Snapshot(ctx, b.eventID)
				if !assertNotOlderThanCursor(t, b, s, err) {
					return
				}
				snaps.Add(1)
			}
		})
	}
	buyers.Wait()
	close(stop)
	readers.Wait()
	require.Positive(t, held.Load())

	var snap *seatmap.Snapshot
	require.Eventually(t, func() bool {
		lag, err := b.st.OutboxLag(ctx)
		if err != nil || lag != 0 {
			return false
		}
		snap, err = svc.Snapshot(ctx, b.eventID)
		require.NoError(t, err)
		db := b.dbView(t)
		for _, s := range snap.Seats {
			if db[s.SeatID] != s {
				return false
			}
		}
		ga, err := b.st.SeatMapGA(ctx, b.eventID, nil)
		require.NoError(t, err)
		return len(snap.Seats) == len(db) && len(ga) == 1 && seatmap.GA(ga[0]) == snap.GeneralAdmission[0]
	}, 10*time.Second, 20*time.Millisecond, "the projection settles on Postgres's view")
	require.Equal(t, 1, loads(t, reg, "first"), "loaded once, then advanced from the stream")
	require.Zero(t, loads(t, reg, "lost")+loads(t, reg, "relay")+loads(t, reg, "redis"))
	t.Logf("%d holds, %d snapshots read while racing", held.Load(), snaps.Load())
}

// assertNotOlderThanCursor checks that no seat of s is older than its
// newest change in the stream up to s.Cursor.
func assertNotOlderThanCursor(t *testing.T, b *bundle, s *seatmap.Snapshot, err error) bool {
	if !assertNoError(t, err) {
		return false
	}
	want := streamVersions(t, b, s.Cursor)
	for _, x := range s.Seats {
		if x.Version < want[x.SeatID] {
			t.Errorf("seat %s at version %d in a snapshot at %s, whose stream has version %d", x.SeatID, x.Version, s.Cursor, want[x.SeatID])
			return false
		}
	}
	return true
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestProjectionFallsBackToPostgresWhenRelayIsBehind: with the relay
// stopped the stream says nothing new, yet once the oldest unpublished
// change is older than MaxRelayLag the snapshot comes from Postgres.
// Also with the change feed in use (Refresh 200ms), which names nothing
// while the relay is stopped.
func TestProjectionFallsBackToPostgresWhenRelayIsBehind(t *testing.T) {
	t.Parallel()
	for _, refresh := range []time.Duration{time.Millisecond, 200 * time.Millisecond} {
		t.Run(fmt.Sprintf("Refresh=%s", refresh), func(t *testing.T) {
			t.Parallel()
			testProjectionFallsBackToPostgresWhenRelayIsBehind(t, refresh)
		})
	}
}

func testProjectionFallsBackToPostgresWhenRelayIsBehind(t *testing.T, refresh time.Duration) {
	b := setup(t)
	reg := prometheus.NewRegistry()
	svc := b.service(t, seatmap.Config{Refresh: refresh, SnapshotTTL: 10 * time.Millisecond,
		MaxRelayLag: 100 * time.Millisecond, Registerer: reg})
	ctx := context.Background()
	// The feed exists, as once a relay has published (one that does not
	// is never trusted).
	require.NoError(t, b.rdb.XAdd(ctx, &redis.XAddArgs{Stream: b.prefix + "seatmap:changed", Values: []any{"e", uuid.NewString()}}).Err())
	s, err := svc.Snapshot(ctx, b.eventID)
	require.NoError(t, err)
	require.Equal(t, "AVAILABLE", status(s, b.seats[0]))
	if refresh >= 100*time.Millisecond {
		feedTrusted(t, b, svc)
	}
	b.hold(t, b.seats[0]) // no relay: the change stays in the outbox
	b.eventuallyHeld(t, svc, "the hold seen")
	require.Positive(t, loads(t, reg, "relay"))
}

// TestProjectionWithRedisDown: a projection that cannot read the stream
// reloads from Postgres (after SnapshotTTL), and a first snapshot with
// Redis unreachable is Postgres's map at cursor "0-0".
func TestProjectionWithRedisDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	own := testdb.NewRedis(t)
	svc := seatmap.New(own, b.st, seatmap.Config{Prefix: b.prefix, Refresh: time.Millisecond, SnapshotTTL: 10 * time.Millisecond, Registerer: reg})
	t.Cleanup(func() { _ = svc.Close() })
	s, err := svc.Snapshot(ctx, b.eventID)
	require.NoError(t, err)
	require.Equal(t, "AVAILABLE", status(s, b.seats[0]))

	require.NoError(t, own.Close()) // Redis is gone for this instance
	b.relay(t, b.service(t, seatmap.Config{}))
	b.hold(t, b.seats[0])
	b.eventuallyHeld(t, svc, "the hold seen")
	require.Positive(t, loads(t, reg, "redis"))

	down := seatmap.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), b.st, seatmap.Config{Prefix: b.prefix})
	t.Cleanup(func() { _ = down.Close() })
	s, err = down.Snapshot(ctx, b.eventID)
	require.NoError(t, err)
	require.Equal(t, "0-0", s.Cursor)
	require.Equal(t, "HELD", status(s, b.seats[0]))
}

// TestProjectionReloadsWhenTheStreamLostAChange: a change that never
// reached the stream it follows (Redis lost the stream, with it the
// change) is not skipped: the projection's cursor is gone from the new
// stream, so it reloads from Postgres.
func TestProjectionReloadsWhenTheStreamLostAChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	svc := b.service(t, seatmap.Config{Refresh: time.Millisecond, Registerer: reg})
	stop := b.relay(t, svc)
	b.hold(t, b.seats[0])
	var s *seatmap.Snapshot
	require.Eventually(t, func() bool {
		var err error
		s, err = svc.Snapshot(ctx, b.eventID)
		require.NoError(t, err)
		return s.Cursor != "0-0"
	}, 10*time.Second, 10*time.Millisecond)
	stop()

	b.hold(t, b.seats[1]) // published, then lost with the stream
	require.NoError(t, svc.Publish(ctx, outboxRows(t, b)))
	require.NoError(t, b.rdb.Del(ctx, b.prefix+"seatmap:{"+b.eventID+"}").Err())
	_, err := b.st.Pool().Exec(ctx, `DELETE FROM outbox`)
	require.NoError(t, err)

	b.relay(t, svc)
	b.hold(t, b.seats[2]) // the first entry of a new stream
	require.Eventually(t, func() bool {
		s, err = svc.Snapshot(ctx, b.eventID)
		require.NoError(t, err)
		return status(s, b.seats[2]) == "HELD"
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "HELD", status(s, b.seats[1]), "the lost change")
	require.Positive(t, loads(t, reg, "lost"))
}

// streamReads counts the commands a client sends that name key.
type streamReads struct {
	key string
	n   atomic.Int64
}

func (h *streamReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *streamReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		for _, a := range cmd.Args() {
			if a == h.key {
				h.n.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}
func (h *streamReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestProjectionOfAnUnchangedEventSkipsItsStream: past Refresh, a
// projection whose event the change feed has not named is served without
// reading its stream; a change the relay publishes is still seen (its feed
// entry marks the projection).
func TestProjectionOfAnUnchangedEventSkipsItsStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	own := testdb.NewRedis(t)
	reads := &streamReads{key: b.prefix + "seatmap:{" + b.eventID + "}"}
	own.AddHook(reads)
	const refresh = 200 * time.Millisecond
	svc := seatmap.New(own, b.st, seatmap.Config{Prefix: b.prefix, Refresh: refresh})
	t.Cleanup(func() { _ = svc.Close() })
	require.NoError(t, svc.AnnounceFeed(ctx)) // as the relay does when it starts
	b.relay(t, b.service(t, seatmap.Config{}))
	_, err := svc.Snapshot(ctx, b.eventID)
	require.NoError(t, err)

	// Ten snapshots, each past Refresh: each read the stream before the
	// feed. (A few may still, when the feed's reader is late on a loaded
	// machine.)
	time.Sleep(refresh + 50*time.Millisecond)
	before := reads.n.Load()
	for range 10 {
		time.Sleep(refresh + 50*time.Millisecond)
		s, err := svc.Snapshot(ctx, b.eventID)
		require.NoError(t, err)
		require.Equal(t, "AVAILABLE", status(s, b.seats[0]))
	}
	require.LessOrEqual(t, reads.n.Load()-before, int64(3), "stream reads for 10 snapshots of an unchanged event")

	b.hold(t, b.seats[0])
	b.eventuallyHeld(t, svc, "a change after the projection stopped reading its stream")
	require.NoError(t, svc.Close())
	require.NoError(t, svc.Close()) // the feed's reader is stopped once
}

// TestProjectionSeesAChangeTheFeedLost: a change in the stream without a
// feed entry (lost with the feed, trimmed before this instance read it) is
// seen once the instance finds the gap in the feed: its position is gone.
func TestProjectionSeesAChangeTheFeedLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const refresh = 200 * time.Millisecond
	svc := b.service(t, seatmap.Config{Refresh: refresh})
	feed := b.prefix + "seatmap:changed"
	require.NoError(t, b.rdb.XAdd(ctx, &redis.XAddArgs{Stream: feed, Values: []any{"e", uuid.NewString()}}).Err())
	s, err := svc.Snapshot(ctx, b.eventID)
	require.NoError(t, err)
	require.Equal(t, "AVAILABLE", status(s, b.seats[0]))
	feedTrusted(t, b, svc)
	b.streamHeld(t, b.seats[0]) // no feed entry
	// The feed lost: a new one names another event only.
	require.NoError(t, b.rdb.Del(ctx, feed).Err())
	require.NoError(t, b.rdb.XAdd(ctx, &redis.XAddArgs{Stream: feed, Values: []any{"e", uuid.NewString()}}).Err())
	b.eventuallyHeld(t, svc, "the change behind the gap (else seen only at the reload, a minute on)")
}

// TestProjectionWithoutAFeedReadsItsStream: while the change feed does
// not exist (no relay batch since Redis started, or relays of a build
// without it), projections read their streams every Refresh.
func TestProjectionWithoutAFeedReadsItsStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const refresh = 200 * time.Millisecond
	svc := b.service(t, seatmap.Config{Refresh: refresh})
	// The reader reads the absent feed a few times meanwhile; no condition
	// to wait for (it never trusts it): were an absent feed trusted, these
	// reads would let the map skip its stream (a late reader only makes the
	// test weaker, never fail).
	for range 3 {
		_, err := svc.Snapshot(ctx, b.eventID)
		require.NoError(t, err)
		time.Sleep(2 * refresh)
	}
	b.streamHeld(t, b.seats[0]) // as a relay without the feed publishes
	b.eventuallyHeld(t, svc, "seen within Refresh, not at the reload a minute on")
}

// eventuallyHeld waits until svc's snapshot of the bundle's event shows
// its first seat HELD.
func (b *bundle) eventuallyHeld(t *testing.T, svc *seatmap.Service, why string) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, err := svc.Snapshot(context.Background(), b.eventID)
		require.NoError(t, err)
		return status(s, b.seats[0]) == "HELD"
	}, 10*time.Second, 10*time.Millisecond, why)
}

// feedTrusted waits until svc serves the bundle's event on the change
// feed's word (svc.FeedTrusts), taking snapshots meanwhile (the feed's
// first read marks every projection; a snapshot then reads the stream).
func feedTrusted(t *testing.T, b *bundle, svc *seatmap.Service) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := svc.Snapshot(context.Background(), b.eventID)
		require.NoError(t, err)
		return svc.FeedTrusts(b.eventID)
	}, 10*time.Second, 20*time.Millisecond, "the change feed trusted")
}

// streamHeld writes a change of seat to HELD straight into the event's
// stream, as Publish writes it, with no entry in the change feed.
func (b *bundle) streamHeld(t *testing.T, seat string) {
	t.Helper()
	u, err := json.Marshal(map[string]any{"seats": []seatmap.Seat{
		{SeatID: seat, SectionID: b.section, Status: "HELD", Version: 1 << 40}}})
	require.NoError(t, err)
	require.NoError(t, b.rdb.XAdd(context.Background(), &redis.XAddArgs{
		Stream: b.prefix + "seatmap:{" + b.eventID + "}", Values: []any{"u", string(u)}}).Err())
}

// status is the seat's status in s.
func status(s *seatmap.Snapshot, seatID string) string {
	for _, x := range s.Seats {
		if x.SeatID == seatID {
			return x.Status
		}
	}
	return ""
}
