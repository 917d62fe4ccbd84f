package seatmap_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/seatmap"
	"github.com/ticketing/ticketing/store"
)

// bundle is one database, one Redis prefix and one event with 10 seats and
// a GA section of 5 units.
type bundle struct {
	st      *store.Store
	rdb     redis.UniversalClient
	prefix  string
	holds   *holds.Service
	eventID string
	seats   []string
	section string // the seated section
	ga      string // the GA section
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	pool := testdb.NewPool(t)
	rdb := testdb.NewRedis(t) // one Redis, or the cluster (testdb.RedisCluster)
	b := &bundle{st: store.New(pool), rdb: rdb, prefix: testdb.RedisPrefix(t),
		eventID: uuid.NewString(), section: uuid.NewString(), ga: uuid.NewString()}
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), b.prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
	})
	venue := uuid.NewString()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`INSERT INTO venues (id, name, address, city, country, lat, lon) VALUES ($1, 'V', 'a', 'c', 'ES', 40, -3)`, venue)
	exec(`INSERT INTO sections (id, venue_id, position, name, kind, capacity) VALUES ($1, $2, 0, 'S', 'SEATED', 10), ($3, $2, 1, 'Floor', 'GENERAL_ADMISSION', 5)`, b.section, venue, b.ga)
	for i := 1; i <= 10; i++ {
		id := uuid.NewString()
		b.seats = append(b.seats, id)
		exec(`INSERT INTO seats (id, section_id, row_label, row_index, number, x, y) VALUES ($1, $2, 'A', 0, $3, $4, 0)`, id, b.section, i, float64(i))
	}
	exec(`INSERT INTO events (id, venue_id, name, category, starts_at, sale_starts_at, max_tickets_per_user, hold_duration_seconds)
	      VALUES ($1, $2, 'E', 'music', now() + interval '30 days', now() - interval '1 hour', 100, 600)`, b.eventID, venue)
	exec(`INSERT INTO event_prices (event_id, section_id, amount, currency) VALUES ($1, $2, 5000, 'EUR'), ($1, $3, 3000, 'EUR')`, b.eventID, b.section, b.ga)
	exec(`INSERT INTO inventory (event_id, section_id, seat_id) SELECT $1, section_id, id FROM seats WHERE section_id = $2`, b.eventID, b.section)
	exec(`INSERT INTO inventory (event_id, section_id, unit_no) SELECT $1, $2, g FROM generate_series(1, 5) g`, b.eventID, b.ga)
	b.holds = holds.New(b.st, holds.Config{})
	return b
}

// service returns a seat map service (an "instance") on the bundle's Redis prefix.
func (b *bundle) service(t *testing.T, cfg seatmap.Config) *seatmap.Service {
	cfg.Prefix = b.prefix
	if cfg.Coalesce == 0 {
		cfg.Coalesce = 20 * time.Millisecond
	}
	s := seatmap.New(b.rdb, b.st, cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// relay runs a relay publishing to sink until the returned stop is called
// (or the test ends).
func (b *bundle) relay(t *testing.T, sink outbox.Sink) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	r := outbox.New(b.st.Pool(), outbox.Config{PollInterval: 200 * time.Millisecond}, sink)
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func (b *bundle) hold(t *testing.T, seats ...string) holds.Hold {
	t.Helper()
	h, err := b.holds.Create(context.Background(), auth.User{ID: "buyer"}, holds.CreateRequest{
		EventID: b.eventID, SeatIDs: seats, IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	return h
}

func (b *bundle) holdGA(t *testing.T, n int) holds.Hold {
	t.Helper()
	h, err := b.holds.Create(context.Background(), auth.User{ID: "buyer"}, holds.CreateRequest{
		EventID: b.eventID, GeneralAdmission: []holds.GARequest{{SectionID: b.ga, Quantity: n}}, IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	return h
}

// sell marks a hold's rows SOLD with an outbox row, as the orders engine does.
func (b *bundle) sell(t *testing.T, holdID string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.st.InTx(ctx, func(tx *store.Store) error {
		order := uuid.NewString()
		if err := tx.Exec(ctx, `INSERT INTO orders (id, hold_id, event_id, owner, status, total_amount, currency)
			SELECT $1, id, event_id, owner, 'CONFIRMED', total_amount, currency FROM holds WHERE id = $2`, order, holdID); err != nil {
			return err
		}
		if err := tx.Exec(ctx, `UPDATE holds SET status = 'PURCHASED' WHERE id = $1`, holdID); err != nil {
			return err
		}
		if err := tx.Exec(ctx, `UPDATE inventory SET status = 'SOLD', order_id = $1, version = nextval('inventory_version_seq') WHERE hold_id = $2`, order, holdID); err != nil {
			return err
		}
		return tx.Exec(ctx, `INSERT INTO outbox (event_id, topic, payload)
			SELECT $1::uuid, 'inventory', jsonb_build_object('eventId', $1::text, 'kind', 'sale', 'holdId', $2::text,
			  'seats', coalesce(jsonb_agg(jsonb_build_object('seatId', seat_id, 'sectionId', section_id, 'status', status, 'version', version)) FILTER (WHERE seat_id IS NOT NULL), '[]'),
			  'ga', '[]'::jsonb)
			FROM inventory WHERE hold_id = $2::uuid`, b.eventID, holdID)
	}))
}

// dbView is the seat map as Postgres has it now.
func (b *bundle) dbView(t *testing.T) map[string]seatmap.Seat {
	seats, err := b.st.SeatMapSeats(context.Background(), b.eventID)
	require.NoError(t, err)
	m := map[string]seatmap.Seat{}
	for _, s := range seats {
		m[s.SeatID] = seatmap.Seat(s)
	}
	return m
}

func subscribe(t *testing.T, s *seatmap.Service, eventID, after string) (<-chan *seatmap.Update, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := seatmap.Subscribe(ctx, s, eventID, after, func(u *seatmap.Update) *seatmap.Update { return u })
	require.NoError(t, err)
	return ch, cancel
}

func next(t *testing.T, ch <-chan *seatmap.Update) *seatmap.Update {
	t.Helper()
	select {
	case u, ok := <-ch:
		require.True(t, ok, "subscription closed")
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no update within 10s")
		return nil
	}
}

// await applies updates to v until cond holds.
func await(t *testing.T, ch <-chan *seatmap.Update, v *seatmap.View, cond func() bool) {
	t.Helper()
	for !cond() {
		v.Apply(next(t, ch))
	}
}

func TestEveryInventoryChangeReachesSubscriber(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{})
	b.relay(t, svc)
	ch, _ := subscribe(t, svc, b.eventID, "")

	var v seatmap.View
	first := next(t, ch)
	require.NotNil(t, first.Snapshot, "no cursor: starts with a snapshot")
	v.Apply(first)
	require.Len(t, v.Seats, 10)
	require.Equal(t, 5, v.GA[b.ga].Available)

	is := func(seat, st string) func() bool { return func() bool { return v.Seats[seat].Status == st } }

	h := b.hold(t, b.seats[0])
	await(t, ch, &v, is(b.seats[0], "HELD"))

	_, err := b.holds.Cancel(context.Background(), auth.User{ID: "buyer"}, h.ID)
	require.NoError(t, err)
	await(t, ch, &v, is(b.seats[0], "AVAILABLE"))

	h = b.hold(t, b.seats[1])
	await(t, ch, &v, is(b.seats[1], "HELD"))
	require.NoError(t, b.st.Exec(context.Background(), `UPDATE holds SET expires_at = created_at + interval '1 millisecond' WHERE id = $1`, h.ID))
	require.NoError(t, b.st.Exec(context.Background(), `UPDATE inventory SET expires_at = now() - interval '1 second' WHERE hold_id = $1`, h.ID))
	n, err := b.holds.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	await(t, ch, &v, is(b.seats[1], "AVAILABLE"))

	h = b.hold(t, b.seats[2])
	await(t, ch, &v, is(b.seats[2], "HELD"))
	b.sell(t, h.ID)
	await(t, ch, &v, is(b.seats[2], "SOLD"))

	b.holdGA(t, 2)
	await(t, ch, &v, func() bool { return v.GA[b.ga].Available == 3 })

	// The view the subscriber built is Postgres' view.
	db := b.dbView(t)
	for id, s := range db {
		require.Equal(t, s, v.Seats[id])
	}
}

func TestChangeThroughOneInstanceReachesTheOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.service(t, seatmap.Config{}) // instance A runs the relay
	other := b.service(t, seatmap.Config{})
	b.relay(t, a)

	// Subscribers of instance B over its SSE endpoint.
	srvB := httptest.NewServer(sseMux(other))
	t.Cleanup(srvB.Close)
	evs := sse(t, srvB.URL+"/api/events/"+b.eventID+"/seatmap/stream", "")
	var v seatmap.View
	v.Apply(evs.next(t).update)
	require.Len(t, v.Seats, 10)

	b.hold(t, b.seats[3]) // made through instance A's services
	for v.Seats[b.seats[3]].Status != "HELD" {
		v.Apply(evs.next(t).update)
	}
}

func TestRelayRestartLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{})
	ch, _ := subscribe(t, svc, b.eventID, "")
	var v seatmap.View
	v.Apply(next(t, ch))

	stop := b.relay(t, svc)
	b.hold(t, b.seats[0])
	await(t, ch, &v, func() bool { return v.Seats[b.seats[0]].Status == "HELD" })
	stop() // the relay dies

	b.hold(t, b.seats[1])
	b.hold(t, b.seats[2])
	b.holdGA(t, 1)

	// A relay whose publication fails (killed mid-batch) commits nothing...
	failing := outbox.New(b.st.Pool(), outbox.Config{}, outbox.SinkFunc(func(context.Context, []outbox.Row) error {
		return fmt.Errorf("killed")
	}))
	// (A partition can still read as busy for a moment: a batch cancelled
	// by the stop may leave its backend holding the partition lock until
	// the server notices. PublishAll skips busy partitions, so try again
	// until the failing sink has actually been handed the rows.)
	require.Eventually(t, func() bool {
		_, err := failing.PublishAll(context.Background())
		return err != nil
	}, 10*time.Second, 50*time.Millisecond, "the failing relay never reached the rows")

	// ...and two relays started afterwards deliver everything exactly as Postgres has it.
	b.relay(t, svc)
	b.relay(t, svc)
	db := b.dbView(t)
	await(t, ch, &v, func() bool {
		for id, s := range db {
			if v.Seats[id] != s {
				return false
			}
		}
		return v.GA[b.ga].Available == 4
	})
	require.Eventually(t, func() bool {
		lag, err := b.st.OutboxLag(context.Background())
		return err == nil && lag == 0
	}, 5*time.Second, 20*time.Millisecond, "published rows are pruned")
}

func TestDuplicateDeliveryIgnoredByVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{})
	ch, _ := subscribe(t, svc, b.eventID, "")
	var v seatmap.View
	v.Apply(next(t, ch))

	b.hold(t, b.seats[0])
	rows := outboxRows(t, b)
	require.NoError(t, svc.Publish(context.Background(), rows))
	u := next(t, ch)
	require.Equal(t, 1, v.Apply(u))
	held := v.Seats[b.seats[0]]

	// The same rows again (a relay that crashed before its commit): the
	// hub sends nothing new, and a client applying them again changes nothing.
	require.NoError(t, svc.Publish(context.Background(), rows))
	require.Equal(t, 0, v.Apply(u))
	stale := &seatmap.Update{Cursor: u.Cursor, Seats: []seatmap.Seat{{SeatID: held.SeatID, SectionID: held.SectionID, Status: "AVAILABLE", Version: held.Version - 1}}}
	require.Equal(t, 0, v.Apply(stale), "an older version never wins")
	require.Equal(t, held, v.Seats[b.seats[0]])

	// The next real change still arrives, and is the first frame after the duplicate.
	b.hold(t, b.seats[1])
	require.NoError(t, svc.Publish(context.Background(), outboxRows(t, b)[1:]))
	u = next(t, ch)
	require.Len(t, u.Seats, 1)
	require.Equal(t, b.seats[1], u.Seats[0].SeatID)
}

// outboxRows reads the outbox in id order (no relay runs in the test).
func outboxRows(t *testing.T, b *bundle) []outbox.Row {
	rows, err := b.st.Pool().Query(context.Background(),
		`SELECT id, event_id::text AS event_id, topic, payload, created_at, 0::float8 AS age FROM outbox ORDER BY id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[outbox.Row])
	require.NoError(t, err)
	return out
}

func TestResumeWithCursorGetsExactlyTheMissedChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{})
	b.relay(t, svc)
	ch, cancel := subscribe(t, svc, b.eventID, "")
	var v seatmap.View
	v.Apply(next(t, ch))
	b.hold(t, b.seats[0])
	await(t, ch, &v, func() bool { return v.Seats[b.seats[0]].Status == "HELD" })
	cancel() // disconnected

	b.hold(t, b.seats[1])
	h := b.hold(t, b.seats[2])
	b.sell(t, h.ID)
	want := b.dbView(t)
	require.Eventually(t, func() bool {
		lag, _ := b.st.OutboxLag(context.Background())
		return lag == 0
	}, 5*time.Second, 10*time.Millisecond)

	ch, _ = subscribe(t, svc, b.eventID, v.Cursor)
	u := next(t, ch)
	require.Nil(t, u.Snapshot, "a valid cursor replays, no snapshot")
	got := map[string]seatmap.Seat{}
	for _, s := range u.Seats {
		got[s.SeatID] = s
	}
	require.Equal(t, map[string]seatmap.Seat{b.seats[1]: want[b.seats[1]], b.seats[2]: want[b.seats[2]]}, got)
}

func TestStaleOrUnknownCursorGetsSnapshot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{MaxLen: 10})
	ctx := context.Background()
	publish := func(i int) {
		payload := fmt.Sprintf(`{"eventId":%q,"kind":"hold","seats":[{"seatId":%q,"sectionId":%q,"status":"HELD","version":%d}]}`,
			b.eventID, b.seats[i%10], b.section, 1000+i)
		require.NoError(t, svc.Publish(ctx, []outbox.Row{{EventID: &b.eventID, Topic: "inventory", Payload: json.RawMessage(payload)}}))
	}
	publish(0)
	old, err := svc.Cursor(ctx, b.eventID)
	require.NoError(t, err)
	for i := 1; i <= 300; i++ { // MAXLEN ~ trims whole stream nodes (100 entries)
		publish(i)
	}
	for _, after := range []string{old, "garbage", "99999999999999-0"} {
		ch, _ := subscribe(t, svc, b.eventID, after)
		u := next(t, ch)
		require.NotNil(t, u.Snapshot, "cursor %q", after)
		require.Len(t, u.Snapshot.Seats, 10)
	}
	// A recent cursor still replays.
	recent, err := svc.Cursor(ctx, b.eventID)
	require.NoError(t, err)
	publish(301)
	ch, _ := subscribe(t, svc, b.eventID, recent)
	u := next(t, ch)
	require.Nil(t, u.Snapshot)
	require.Equal(t, int64(1301), u.Seats[0].Version)
}

// A cursor from before Redis lost the stream (a restart) gets a snapshot:
// the new stream, untrimmed and with later ids, does not hold the changes
// published in between.
func TestCursorFromALostStreamGetsSnapshot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{})
	ctx := context.Background()
	publish := func(i int) {
		payload := fmt.Sprintf(`{"eventId":%q,"kind":"hold","seats":[{"seatId":%q,"sectionId":%q,"status":"HELD","version":%d}]}`,
			b.eventID, b.seats[i], b.section, 1000+i)
		require.NoError(t, svc.Publish(ctx, []outbox.Row{{EventID: &b.eventID, Topic: "inventory", Payload: json.RawMessage(payload)}}))
	}
	publish(0)
	old, err := svc.Cursor(ctx, b.eventID)
	require.NoError(t, err)
	publish(1)                                                                   // the client never sees this one...
	require.NoError(t, b.rdb.Del(ctx, b.prefix+"seatmap:{"+b.eventID+"}").Err()) // ...Redis loses it
	require.Eventually(t, func() bool { publish(2); c, _ := svc.Cursor(ctx, b.eventID); return c != old },
		5*time.Second, time.Millisecond, "a new stream with a later id")

	ch, _ := subscribe(t, svc, b.eventID, old)
	u := next(t, ch)
	require.NotNil(t, u.Snapshot, "resuming from %s would miss seat 1", old)
}

func TestSnapshotCursorLeavesNoGap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{SnapshotTTL: time.Millisecond})
	b.relay(t, svc)
	snap, err := svc.Snapshot(context.Background(), b.eventID)
	require.NoError(t, err)
	b.hold(t, b.seats[4])
	require.Eventually(t, func() bool {
		c, _ := svc.Cursor(context.Background(), b.eventID)
		return c != snap.Cursor
	}, 5*time.Second, 10*time.Millisecond)

	ch, _ := subscribe(t, svc, b.eventID, snap.Cursor)
	v := seatmap.View{}
	v.Apply(&seatmap.Update{Snapshot: snap})
	u := next(t, ch)
	require.Nil(t, u.Snapshot)
	v.Apply(u)
	require.Equal(t, "HELD", v.Seats[b.seats[4]].Status)
}

func TestSlowSubscriberCutOffWithoutDelayingOthers(t *testing.T) {
	// Not parallel: it measures how long the others wait.
	b := setup(t)
	svc := b.service(t, seatmap.Config{Buffer: 2, Coalesce: time.Millisecond})
	ctx := context.Background()
	fast, _ := subscribe(t, svc, b.eventID, "")
	slow, _ := subscribe(t, svc, b.eventID, "")
	next(t, fast) // snapshots
	for i := 0; i < 10; i++ {
		payload := fmt.Sprintf(`{"eventId":%q,"seats":[{"seatId":%q,"sectionId":%q,"status":"HELD","version":%d}]}`,
			b.eventID, b.seats[0], b.section, 100+i)
		require.NoError(t, svc.Publish(ctx, []outbox.Row{{EventID: &b.eventID, Topic: "inventory", Payload: json.RawMessage(payload)}}))
		start := time.Now()
		u := next(t, fast)
		require.Equal(t, int64(100+i), u.Seats[0].Version)
		require.Less(t, time.Since(start), 3*time.Second)
	}
	// The slow one got what fitted in its buffer, then its stream was closed.
	n := 0
	for range slow {
		n++
	}
	require.LessOrEqual(t, n, 2)
}

func TestSSEResumeWithLastEventID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{})
	b.relay(t, svc)
	srv := httptest.NewServer(sseMux(svc))
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/events/" + b.eventID + "/seatmap/stream"

	evs := sse(t, url, "")
	first := evs.next(t)
	require.NotNil(t, first.update.Snapshot)
	require.Equal(t, first.update.Cursor, first.id)
	var v seatmap.View
	v.Apply(first.update)
	b.hold(t, b.seats[0])
	for v.Seats[b.seats[0]].Status != "HELD" {
		v.Apply(evs.next(t).update)
	}
	last := evs.lastID
	evs.close()

	b.hold(t, b.seats[5])
	want := b.dbView(t)[b.seats[5]]
	evs = sse(t, url, last)
	e := evs.next(t)
	require.Nil(t, e.update.Snapshot)
	for len(e.update.Seats) == 0 || e.update.Seats[0].SeatID != b.seats[5] {
		e = evs.next(t) // the relay may not have published it yet
	}
	require.Equal(t, []seatmap.Seat{want}, e.update.Seats)

	resp, err := http.Get(srv.URL + "/api/events/" + uuid.NewString() + "/seatmap/stream")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func sseMux(s *seatmap.Service) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /api/events/{eventId}/seatmap/stream", s)
	return mux
}

type sseEvent struct {
	id     string
	update *seatmap.Update
}

type sseStream struct {
	resp   *http.Response
	events chan sseEvent
	lastID string
}

func sse(t *testing.T, url, lastID string) *sseStream {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &sseStream{resp: resp, events: make(chan sseEvent, 100)}
	t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.update = new(seatmap.Update)
				if json.Unmarshal([]byte(line[6:]), ev.update) != nil {
					ev.update = nil
				}
			case line == "" && ev.update != nil:
				s.events <- ev
				ev = sseEvent{}
			}
		}
	}()
	return s
}

func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case e, ok := <-s.events:
		require.True(t, ok, "stream ended")
		s.lastID = e.id
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no SSE event within 10s")
		return sseEvent{}
	}
}

func (s *sseStream) close() { s.resp.Body.Close() }

// TestBusyTransportsHoldFramesBack: while Busy reports the transports still
// writing, a hub's changes wait and go out together (up to MaxCoalesce);
// once it is not busy they are sent.
func TestBusyTransportsHoldFramesBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var busy atomic.Bool
	svc := b.service(t, seatmap.Config{Coalesce: 10 * time.Millisecond, MaxCoalesce: time.Minute, Busy: busy.Load})
	ctx := context.Background()
	sub, _ := subscribe(t, svc, b.eventID, "")
	next(t, sub) // the snapshot
	publish := func(version int) {
		payload := fmt.Sprintf(`{"eventId":%q,"seats":[{"seatId":%q,"sectionId":%q,"status":"HELD","version":%d}]}`,
			b.eventID, b.seats[version%len(b.seats)], b.section, 100+version)
		require.NoError(t, svc.Publish(ctx, []outbox.Row{{EventID: &b.eventID, Topic: "inventory", Payload: json.RawMessage(payload)}}))
	}
	publish(0)
	require.Len(t, next(t, sub).Seats, 1, "not busy: sent at once")

	busy.Store(true)
	for v := 1; v <= 3; v++ {
		publish(v)
		time.Sleep(50 * time.Millisecond) // several Coalesce windows
	}
	select {
	case u := <-sub:
		t.Fatalf("a frame went out while the transports were busy: %+v", u)
	case <-time.After(300 * time.Millisecond):
	}
	busy.Store(false)
	u := next(t, sub)
	require.Len(t, u.Seats, 3, "the held changes go out in one frame")
}

// TestBusyHoldsFramesBackAtMostMaxCoalesce: a transport that stays busy
// does not starve the subscribers.
func TestBusyHoldsFramesBackAtMostMaxCoalesce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{Coalesce: 10 * time.Millisecond, MaxCoalesce: 200 * time.Millisecond,
		Busy: func() bool { return true }})
	sub, _ := subscribe(t, svc, b.eventID, "")
	next(t, sub)
	payload := fmt.Sprintf(`{"eventId":%q,"seats":[{"seatId":%q,"sectionId":%q,"status":"HELD","version":100}]}`,
		b.eventID, b.seats[0], b.section)
	require.NoError(t, svc.Publish(context.Background(), []outbox.Row{{EventID: &b.eventID, Topic: "inventory", Payload: json.RawMessage(payload)}}))
	require.Equal(t, int64(100), next(t, sub).Seats[0].Version)
}

// SubscribeFunc calls end exactly once for a subscription that started
// (here: its context ends), and never for one whose set-up failed.
func TestSubscribeFuncEndsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.service(t, seatmap.Config{})
	var ends atomic.Int32
	id := func(u *seatmap.Update) *seatmap.Update { return u }
	send := func(*seatmap.Update) bool { return true }
	end := func() { ends.Add(1) }

	err := seatmap.SubscribeFunc(context.Background(), svc, uuid.NewString(), "", id, send, end)
	require.Error(t, err, "unknown event")
	require.Zero(t, ends.Load(), "a set-up that failed is not ended")

	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, seatmap.SubscribeFunc(ctx, svc, b.eventID, "", id, send, end))
	require.Zero(t, ends.Load())
	cancel()
	require.Eventually(t, func() bool { return ends.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return svc.Subscribers() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 1, ends.Load(), "once")
}
