// Package outbox is the relay of the transactional outbox: it reads the rows
// that domain transactions wrote to the outbox table and hands them to the
// projections (the live seat map, search), at least once and in commit order
// per event, then prunes them.
//
// Rows are split into partitions by a hash of their event. A relay handles a
// partition only while it holds that partition's transaction-level advisory
// lock, so several relays share the work without doing it twice, one event's
// rows are never published by two relays at once, and a relay that dies
// releases its locks with its connection. Each batch is claimed, published
// and deleted in one short transaction: a crash before the commit means the
// batch is published again (consumers ignore what they have by version).
//
// Outbox ids are allocated before commit, so a row with a lower id can become
// visible after one with a higher id (the classic outbox gap). The relay keeps
// no high-water mark: it always reads whatever is still in the table, so such
// a row is simply published in the next batch, never skipped.
package outbox

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketing/ticketing/store"
)

// Row is one outbox row.
type Row = store.OutboxRow

// Topics written by the domain packages.
const (
	TopicInventory = "inventory"
	TopicCatalog   = "catalog"
)

// Sink receives published rows. It must be idempotent: a batch can be
// delivered again after a failure or a relay crash. An error leaves the rows
// in the outbox to be retried.
type Sink interface {
	Publish(ctx context.Context, rows []Row) error
}

// TxSink is a Sink whose effect is a write in the relay's batch transaction
// (tx): it commits or rolls back with the deletion of the rows, so nothing is
// lost on a crash and nothing slow runs in the batch. Committed, if set, is
// called after each commit of a batch that PublishTx saw.
type TxSink interface {
	Sink
	PublishTx(ctx context.Context, tx *store.Store, rows []Row) error
	Committed()
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, rows []Row) error

// Publish calls f.
func (f SinkFunc) Publish(ctx context.Context, rows []Row) error { return f(ctx, rows) }

// EventIDs returns the distinct event ids of the rows of the given topics
// (all topics when none is given), in first-seen order.
func EventIDs(rows []Row, topics ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		id := r.EventID
		if id == nil || seen[*id] || (len(topics) > 0 && !contains(topics, r.Topic)) {
			continue
		}
		seen[*id] = true
		out = append(out, *id)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// DefaultBatchInterval is Config.BatchInterval when left zero.
const DefaultBatchInterval = 50 * time.Millisecond

// DefaultPartitions is the number of partitions when Config leaves it zero.
// A relay holds up to one transaction per partition at a time.
const DefaultPartitions = 4

// Config tunes a Relay; zero values take the defaults.
type Config struct {
	// Partitions must be the same on every relay (default 4).
	Partitions int
	// BatchSize is the most rows published per transaction (default 200).
	BatchSize int
	// PollInterval is the safety net when a notification is missed (default 1s).
	PollInterval time.Duration
	// BatchInterval is the shortest time between the starts of two drains
	// of one partition (default 50ms; negative: none). A wake-up that comes
	// sooner waits for the rest of it, so under a storm of holds a batch
	// carries the rows of many commits instead of one: each batch costs a
	// transaction, its commit, the seat map's recount of every GA section it
	// touched (store.SeatMapGA, a scan of the section) and a search_pending
	// upsert of the event's row, whatever the number of rows in it. (bench/holds -workers,
	// 2026-12-01: one batch per hold or two made the relay's Postgres CPU per
	// hold as large as the hold's own.) The live seat map's frames are 100ms
	// apart anyway (seatmap.Config.Coalesce), and the relay counts as behind
	// only after 2s (seatmap.Config.MaxRelayLag). A drain that ends on a full
	// batch goes on at once, as before.
	BatchInterval time.Duration
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	Log        *slog.Logger
}

// Relay publishes outbox rows to its sinks. Run it in as many processes as
// wanted.
type Relay struct {
	pool  *pgxpool.Pool
	st    *store.Store
	sinks []Sink
	cfg   Config
	log   *slog.Logger

	lag       prometheus.Gauge
	published *prometheus.CounterVec
	failures  prometheus.Counter
	delay     prometheus.Histogram
	batch     prometheus.Histogram
}

// New returns a relay over the pool that publishes every row to each sink.
func New(pool *pgxpool.Pool, cfg Config, sinks ...Sink) *Relay {
	if cfg.Partitions <= 0 {
		cfg.Partitions = DefaultPartitions
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 200
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.BatchInterval == 0 {
		cfg.BatchInterval = DefaultBatchInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	r := &Relay{
		pool: pool, st: store.New(pool), sinks: sinks, cfg: cfg, log: cfg.Log,
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketing_projection_lag_seconds",
			Help: "Age of the oldest outbox row not yet published to the projections.",
		}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketing_outbox_published_total",
			Help: "Outbox rows published to the projections, by topic.",
		}, []string{"topic"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketing_outbox_publish_failures_total",
			Help: "Outbox batches whose publication failed and will be retried.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ticketing_outbox_publish_delay_seconds",
			Help:    "From an outbox row's insert to its publication to every sink (its transaction's start to the relay's commit of the batch).",
			Buckets: []float64{.005, .01, .025, .05, .1, .15, .2, .3, .5, 1, 2.5, 5, 10},
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ticketing_outbox_batch_seconds",
			Help:    "Duration of one relay batch transaction that published rows (read, publish, delete, commit).",
			Buckets: []float64{.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{r.lag, r.published, r.failures, r.delay, r.batch} {
			if err := cfg.Registerer.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					r.log.Warn("outbox metrics", "err", err)
				}
			}
		}
	}
	return r
}

// Run relays until ctx is done: one worker per partition, woken by
// LISTEN outbox and by a poll timer.
func (r *Relay) Run(ctx context.Context) error {
	wakes := make([]chan struct{}, r.cfg.Partitions)
	done := make(chan struct{})
	for p := range wakes {
		wakes[p] = make(chan struct{}, 1)
		go func() {
			defer func() { done <- struct{}{} }()
			r.worker(ctx, p, wakes[p])
		}()
	}
	go r.listen(ctx, func() {
		for _, w := range wakes {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	})
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	for {
		r.updateLag(ctx)
		select {
		case <-ctx.Done():
			for range wakes {
				<-done
			}
			return nil
		case <-t.C:
		}
	}
}

func (r *Relay) updateLag(ctx context.Context) {
	if lag, err := r.st.OutboxLag(ctx); err == nil {
		r.lag.Set(lag.Seconds())
	}
}

// listen calls wake on every NOTIFY outbox, reconnecting after errors.
func (r *Relay) listen(ctx context.Context, wake func()) {
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("outbox listen", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context, wake func()) error {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection will be LISTENing: never give it back to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	if _, err := pc.Exec(ctx, "LISTEN outbox"); err != nil {
		return err
	}
	wake() // rows written while we were not listening
	for {
		if _, err := pc.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}

func (r *Relay) worker(ctx context.Context, partition int, wake <-chan struct{}) {
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for {
		start := time.Now()
		r.drain(ctx, partition)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
		// The commits that woke us, and those of the rest of the
		// interval, go in one batch (Config.BatchInterval).
		if wait := r.cfg.BatchInterval - time.Since(start); wait > 0 {
			pause.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-pause.C:
			}
		}
	}
}

// busyRetry is how soon a relay looks again at a partition that another
// relay was working on when this one was woken.
const busyRetry = 25 * time.Millisecond

// drain publishes batches of the partition until it is empty or a batch
// fails (retried at the next wake or poll). When another relay holds the
// partition it tries again shortly: that relay may have read its batch
// before the rows this wake-up announced were committed, and nobody else
// would wake for them until the next poll.
func (r *Relay) drain(ctx context.Context, partition int) {
	for ctx.Err() == nil {
		n, busy, err := r.once(ctx, partition)
		if err != nil {
			if ctx.Err() == nil {
				r.failures.Inc()
				r.log.Warn("outbox publish", "partition", partition, "err", err)
			}
			return
		}
		if busy {
			select {
			case <-ctx.Done():
			case <-time.After(busyRetry):
			}
			continue
		}
		if n < r.cfg.BatchSize {
			return
		}
	}
}

// Once publishes and deletes one batch of the partition in one transaction
// and returns how many rows it published (0 when the partition is empty or
// another relay holds it).
func (r *Relay) Once(ctx context.Context, partition int) (int, error) {
	n, _, err := r.once(ctx, partition)
	return n, err
}

// once is Once that also tells whether another relay held the partition.
func (r *Relay) once(ctx context.Context, partition int) (int, bool, error) {
	var read time.Time // when the batch was read (rows' Age is as of then)
	start := time.Now()
	rows, locked, err := r.st.OutboxRelayBatch(ctx, partition, r.cfg.Partitions, r.cfg.BatchSize,
		func(tx *store.Store, batch []Row) error {
			read = time.Now()
			for _, s := range r.sinks {
				var err error
				if ts, ok := s.(TxSink); ok {
					err = ts.PublishTx(ctx, tx, batch)
				} else {
					err = s.Publish(ctx, batch)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return 0, false, err
	}
	if len(rows) > 0 {
		for _, s := range r.sinks {
			if ts, ok := s.(TxSink); ok {
				ts.Committed()
			}
		}
		since := time.Since(read).Seconds()
		for _, row := range rows {
			r.delay.Observe(row.Age + since)
		}
		r.batch.Observe(time.Since(start).Seconds())
	}
	for _, row := range rows {
		r.published.WithLabelValues(row.Topic).Inc()
	}
	return len(rows), !locked, nil
}

// PublishAll drains every partition once (for tests and tools such as a
// one-shot catch-up); it returns the number of rows published.
func (r *Relay) PublishAll(ctx context.Context) (int, error) {
	total := 0
	for p := 0; p < r.cfg.Partitions; p++ {
		for {
			n, err := r.Once(ctx, p)
			total += n
			if err != nil {
				return total, err
			}
			if n < r.cfg.BatchSize {
				break
			}
		}
	}
	return total, nil
}

// Projector is what the search projection offers (search.Projector).
type Projector interface {
	Apply(ctx context.Context, eventIDs []string) error
}

// ProjectorSink passes the events of 'catalog' rows to p, which reloads
// them from Postgres. (The search projection's documents hold no
// inventory: an 'inventory' row changes nothing it keeps.)
func ProjectorSink(p Projector) Sink {
	return SinkFunc(func(ctx context.Context, rows []Row) error {
		ids := EventIDs(rows, TopicCatalog)
		if len(ids) == 0 {
			return nil
		}
		return p.Apply(ctx, ids)
	})
}

// PendingSink records the events of 'catalog' rows (as ProjectorSink) in
// search_pending, in the relay's transaction (one statement per batch), for
// an indexer that runs apart from the relay (search.PendingIndexer): a slow
// search index no longer delays the batches, and with them the seat map.
// wake (may be nil) is called after the batch commits. Publish, for use
// outside a relay, writes in a transaction of its own over st.
func PendingSink(st *store.Store, wake func()) TxSink {
	return &pendingSink{st: st, wake: wake}
}

type pendingSink struct {
	st   *store.Store
	wake func()
}

func (p *pendingSink) PublishTx(ctx context.Context, tx *store.Store, rows []Row) error {
	return tx.SearchPendingAdd(ctx, EventIDs(rows, TopicCatalog))
}

func (p *pendingSink) Publish(ctx context.Context, rows []Row) error {
	if err := p.PublishTx(ctx, p.st, rows); err != nil {
		return err
	}
	p.Committed()
	return nil
}

func (p *pendingSink) Committed() {
	if p.wake != nil {
		p.wake()
	}
}
