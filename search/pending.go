package search

import (
	"context"
	"log/slog"
	"time"

	"github.com/ticketing/ticketing/store"
)

// PendingIndexer is the search projection's own consumer of the outbox: the
// relay records the events that changed in search_pending, in the batch
// transaction that deletes their outbox rows (outbox.PendingSink), and the
// indexer claims them, reindexes them from Postgres (Apply) and deletes the
// rows it indexed. A slow index therefore never holds up the relay, and
// nothing is lost when a process dies: a claimed row whose indexer crashed
// is claimed again once its lease runs out, and a row changed while it was
// being indexed stays for the next round. Several indexers (instances) may
// run: claims skip rows another indexer holds.
type PendingIndexer struct {
	st    *store.Store
	apply func(ctx context.Context, eventIDs []string) error
	log   *slog.Logger
	wake  chan struct{}

	// Batch is the most events claimed at once (default 500).
	Batch int
	// Lease is how long a claim keeps other indexers away (default 30 s).
	Lease time.Duration
	// Interval is the shortest time between the start of two rounds
	// (default 250 ms): a hot event that changes all the time is indexed a
	// few times a second, not once per relay batch.
	Interval time.Duration
	// Poll is the safety net when no wake-up arrives, e.g. for rows that
	// another instance's relay recorded or a crashed indexer claimed
	// (default 1 s).
	Poll time.Duration
}

// NewPendingIndexer returns an indexer that hands claimed event ids to apply
// (typically Service.Apply, or something that also tells other instances).
func NewPendingIndexer(st *store.Store, apply func(ctx context.Context, eventIDs []string) error, log *slog.Logger) *PendingIndexer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PendingIndexer{st: st, apply: apply, log: log, wake: make(chan struct{}, 1),
		Batch: 500, Lease: 30 * time.Second, Interval: 250 * time.Millisecond, Poll: time.Second}
}

// Wake asks for a round soon; it never blocks.
func (x *PendingIndexer) Wake() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// Run indexes pending events until ctx ends.
func (x *PendingIndexer) Run(ctx context.Context) {
	poll := time.NewTicker(x.Poll)
	defer poll.Stop()
	for {
		start := time.Now()
		for ctx.Err() == nil {
			n, err := x.Once(ctx)
			if err != nil {
				if ctx.Err() == nil {
					x.log.Warn("search: index pending events", "err", err)
				}
				break
			}
			if n < x.Batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-x.wake:
		case <-poll.C:
		}
		if wait := x.Interval - time.Since(start); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// Once claims up to Batch pending events, indexes them and deletes their
// rows; it returns how many it claimed. If indexing fails the claims are
// given back, to be retried.
func (x *PendingIndexer) Once(ctx context.Context) (int, error) {
	claimed, err := x.st.SearchPendingClaim(ctx, x.Batch, x.Lease)
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	ids := make([]string, len(claimed))
	for i, c := range claimed {
		ids[i] = c.EventID
	}
	if err := x.apply(ctx, ids); err != nil {
		if rerr := x.st.SearchPendingRelease(context.WithoutCancel(ctx), claimed); rerr != nil {
			x.log.Warn("search: release pending events", "err", rerr) // the lease runs out instead
		}
		return 0, err
	}
	return len(claimed), x.st.SearchPendingDone(context.WithoutCancel(ctx), claimed)
}
