package outbox_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/store"
)

// recorder is a sink that records what it receives.
type recorder struct {
	mu   sync.Mutex
	seen map[int64]int    // row id -> deliveries
	seqs map[string][]int // event -> seq in delivery order
}

func newRecorder() *recorder { return &recorder{seen: map[int64]int{}, seqs: map[string][]int{}} }

func (r *recorder) Publish(_ context.Context, rows []outbox.Row) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, row := range rows {
		r.seen[row.ID]++
		var p struct{ Seq int }
		_ = json.Unmarshal(row.Payload, &p)
		r.seqs[*row.EventID] = append(r.seqs[*row.EventID], p.Seq)
	}
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func run(t *testing.T, r *outbox.Relay) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestRelaysShareTheWorkInOrderPerEvent(t *testing.T) {
	t.Parallel()
	st := store.New(testdb.NewPool(t))
	ctx := context.Background()
	// Commits that write outbox rows kick the notifier, whose NOTIFY wakes
	// the relays (as app.New wires it).
	notifier := outbox.NewNotifier(st.Pool(), nil)
	st.SetOutboxHook(notifier.Kick)
	nctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go notifier.Run(nctx)
	events := []string{uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()}
	rec := newRecorder()
	for i := 0; i < 3; i++ {
		run(t, outbox.New(st.Pool(), outbox.Config{BatchSize: 7, PollInterval: time.Hour}, rec))
	}
	const n = 400
	for i := 0; i < n; i++ { // NOTIFY wakes the relays: the poll is an hour
		require.NoError(t, st.OutboxInsert(ctx, events[i%len(events)], "inventory", map[string]int{"seq": i}))
	}
	require.Eventually(t, func() bool { return rec.count() == n }, 20*time.Second, 10*time.Millisecond)
	rec.mu.Lock()
	for id, k := range rec.seen {
		require.Equal(t, 1, k, "row %d published twice", id)
	}
	for ev, seqs := range rec.seqs {
		require.IsIncreasing(t, seqs, "event %s out of order", ev)
	}
	rec.mu.Unlock()
	require.Eventually(t, func() bool {
		lag, err := st.OutboxLag(ctx)
		return err == nil && lag == 0
	}, 5*time.Second, 10*time.Millisecond, "published rows are pruned")
}

// A row whose id is lower but whose transaction commits later than a
// published row is still published (no high-water mark skips it).
func TestRowCommittedLateIsNotLost(t *testing.T) {
	t.Parallel()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	ctx := context.Background()
	ev := uuid.NewString()
	rec := newRecorder()
	reg := prometheus.NewRegistry()
	relay := outbox.New(pool, outbox.Config{Partitions: 1, Registerer: reg}, rec)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO outbox (event_id, topic, payload) VALUES ($1, 'inventory', '{"seq": 1}')`, ev)
	require.NoError(t, err)
	require.NoError(t, st.OutboxInsert(ctx, ev, "inventory", map[string]int{"seq": 2}))
	n, err := relay.PublishAll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, tx.Commit(ctx))
	n, err = relay.PublishAll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []int{2, 1}, rec.seqs[ev])
	require.Equal(t, 2.0, published(t, reg))
}

func published(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "ticketing_outbox_published_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no ticketing_outbox_published_total")
	return 0
}

func TestProjectionLagMetric(t *testing.T) {
	t.Parallel()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	fail := true
	var mu sync.Mutex
	sink := outbox.SinkFunc(func(context.Context, []outbox.Row) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return context.DeadlineExceeded
		}
		return nil
	})
	run(t, outbox.New(pool, outbox.Config{PollInterval: 50 * time.Millisecond, Registerer: reg, Log: slog.New(slog.DiscardHandler)}, sink))
	require.NoError(t, st.OutboxInsert(ctx, uuid.NewString(), "catalog", map[string]int{"version": 1}))
	lag := func() float64 {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "ticketing_projection_lag_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	require.Eventually(t, func() bool { return lag() > 0.2 }, 5*time.Second, 20*time.Millisecond, "a stuck projection shows as lag")
	mu.Lock()
	fail = false
	mu.Unlock()
	require.Eventually(t, func() bool { return lag() == 0 }, 5*time.Second, 20*time.Millisecond)

	// The row's publication delay counts the time it was stuck.
	hist := func(name string) (count uint64, sum float64) {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == name {
				h := mf.GetMetric()[0].GetHistogram()
				return h.GetSampleCount(), h.GetSampleSum()
			}
		}
		return 0, 0
	}
	n, sum := hist("ticketing_outbox_publish_delay_seconds")
	require.EqualValues(t, 1, n)
	require.Greater(t, sum, 0.2)
	n, _ = hist("ticketing_outbox_batch_seconds")
	require.EqualValues(t, 1, n, "one batch published rows")
}

// batchCounter counts the batches (non-empty Publish calls) and rows.
type batchCounter struct {
	mu            sync.Mutex
	batches, rows int
}

func (b *batchCounter) Publish(_ context.Context, rows []outbox.Row) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches++
	b.rows += len(rows)
	return nil
}

func (b *batchCounter) get() (batches, rows int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.batches, b.rows
}

// Commits that wake a partition within BatchInterval of its last drain go
// out together in the next one: a storm of holds costs a batch per
// interval, not one per commit (outbox.Config.BatchInterval). Nothing is
// lost or left behind.
func TestRelayBatchesTheCommitsOfAnInterval(t *testing.T) {
	t.Parallel()
	st := store.New(testdb.NewPool(t))
	ctx := context.Background()
	notifier := outbox.NewNotifier(st.Pool(), nil)
	notifier.Interval = time.Millisecond
	st.SetOutboxHook(notifier.Kick)
	nctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go notifier.Run(nctx)
	sink := &batchCounter{}
	run(t, outbox.New(st.Pool(), outbox.Config{Partitions: 1, PollInterval: time.Hour, BatchInterval: 400 * time.Millisecond}, sink))
	ev := uuid.NewString()
	const n = 40
	start := time.Now()
	for i := range n { // each commit kicks the notifier, whose NOTIFY wakes the relay
		require.NoError(t, st.OutboxInsert(ctx, ev, "inventory", map[string]int{"seq": i}))
	}
	elapsed := time.Since(start)
	require.Eventually(t, func() bool { _, rows := sink.get(); return rows == n }, 10*time.Second, 10*time.Millisecond)
	batches, _ := sink.get()
	// At most one drain per started interval of the inserts, plus the one
	// that publishes what the last interval gathered.
	require.LessOrEqual(t, batches, int(elapsed/(400*time.Millisecond))+2, "%d rows in %s", n, elapsed)
	require.Eventually(t, func() bool {
		lag, err := st.OutboxLag(ctx)
		return err == nil && lag == 0
	}, 5*time.Second, 10*time.Millisecond, "published rows are pruned")
}
