package search_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/store"
)

func pendingCount(t *testing.T, st *store.Store) int {
	t.Helper()
	var n int
	require.NoError(t, st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM search_pending`).Scan(&n))
	return n
}

// pendingEvent is a store on a fresh database with one small event.
func pendingEvent(t *testing.T) (*store.Store, fixtures.Event) {
	t.Helper()
	pool := testdb.NewPool(t)
	return store.New(pool), fixtures.SmallEvent(t, pool, fixtures.EventOptions{})
}

// An edit goes outbox -> relay batch (search_pending, no indexing) ->
// indexer -> index, and the pending row is gone afterwards.
func TestPendingIndexerEditReachesSearch(t *testing.T) {
	ctx := context.Background()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	ev := fixtures.SmallEvent(t, pool, fixtures.EventOptions{Name: "Antes"})
	engine, err := search.OpenBleve(t.TempDir(), true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = engine.Close() })
	svc := search.NewService(engine, st, nil)
	svc.MarkReady()

	var applied atomic.Int64
	idx := search.NewPendingIndexer(st, func(ctx context.Context, ids []string) error {
		applied.Add(int64(len(ids)))
		return svc.Apply(ctx, ids)
	}, nil)
	relay := outbox.New(pool, outbox.Config{}, outbox.PendingSink(st, idx.Wake))

	_, err = pool.Exec(ctx, `UPDATE events SET name = 'Después Renombrado', version = version + 1 WHERE id = $1`, ev.ID)
	require.NoError(t, err)
	require.NoError(t, st.CatalogOutboxInsert(ctx, []string{ev.ID}, []int64{2}))
	n, err := relay.PublishAll(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	// The relay did not index: the event waits in search_pending.
	require.Equal(t, 1, pendingCount(t, st))
	require.Zero(t, applied.Load())
	found := func() bool {
		res, err := engine.Search(ctx, search.Query{Text: "renombrado", First: 10, Sort: search.SortRelevance})
		require.NoError(t, err)
		return len(res.Hits) == 1 && res.Hits[0].ID == ev.ID
	}
	require.False(t, found())

	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); idx.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, found, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return pendingCount(t, st) == 0 }, 10*time.Second, 20*time.Millisecond)
}

// A hold or a sale (an 'inventory' outbox row) does not make its event
// pending: documents hold no inventory. A catalog change does.
func TestPendingSinkIgnoresInventoryChanges(t *testing.T) {
	ctx := context.Background()
	st, ev := pendingEvent(t)
	sink := outbox.PendingSink(st, nil)
	require.NoError(t, sink.Publish(ctx, []outbox.Row{{EventID: &ev.ID, Topic: outbox.TopicInventory}}))
	require.Zero(t, pendingCount(t, st))
	require.NoError(t, sink.Publish(ctx, []outbox.Row{{EventID: &ev.ID, Topic: outbox.TopicInventory}, {EventID: &ev.ID, Topic: outbox.TopicCatalog}}))
	require.Equal(t, 1, pendingCount(t, st))
}

// An indexer that claimed events and died before indexing them loses
// nothing: once its lease runs out another indexer takes them. A failed
// indexing gives its claims back at once.
func TestPendingIndexerCrashLosesNothing(t *testing.T) {
	ctx := context.Background()
	st, ev := pendingEvent(t)
	require.NoError(t, outbox.PendingSink(st, nil).Publish(ctx, []outbox.Row{{EventID: &ev.ID, Topic: outbox.TopicCatalog}}))

	// The "crashed" indexer: claims with a short lease, never indexes.
	claimed, err := st.SearchPendingClaim(ctx, 10, 300*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	var got []string
	idx := search.NewPendingIndexer(st, func(ctx context.Context, ids []string) error {
		got = append(got, ids...)
		return nil
	}, nil)
	n, err := idx.Once(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a live claim is skipped")
	require.Eventually(t, func() bool {
		n, err := idx.Once(ctx)
		require.NoError(t, err)
		return n == 1
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, []string{ev.ID}, got)
	require.Zero(t, pendingCount(t, st))

	// Indexing fails: the row stays, unclaimed, and the next round has it.
	require.NoError(t, outbox.PendingSink(st, nil).Publish(ctx, []outbox.Row{{EventID: &ev.ID, Topic: outbox.TopicCatalog}}))
	failing := search.NewPendingIndexer(st, func(context.Context, []string) error { return errors.New("index down") }, nil)
	_, err = failing.Once(ctx)
	require.Error(t, err)
	require.Equal(t, 1, pendingCount(t, st))
	got = nil
	n, err = idx.Once(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{ev.ID}, got)
}

// A change recorded while its event is being indexed is not deleted with
// the claim: the event is indexed again.
func TestPendingIndexerChangeDuringIndexing(t *testing.T) {
	ctx := context.Background()
	st, ev := pendingEvent(t)
	sink := outbox.PendingSink(st, nil)
	rows := []outbox.Row{{EventID: &ev.ID, Topic: outbox.TopicCatalog}}
	require.NoError(t, sink.Publish(ctx, rows))
	rounds := 0
	idx := search.NewPendingIndexer(st, func(ctx context.Context, ids []string) error {
		rounds++
		if rounds == 1 {
			return sink.Publish(ctx, rows) // the relay records a newer change meanwhile
		}
		return nil
	}, nil)
	n, err := idx.Once(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, pendingCount(t, st), "the newer change is still pending")
	n, err = idx.Once(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, pendingCount(t, st))
	require.Equal(t, 2, rounds)
}

// Two indexers working at once never index the same pending change twice.
func TestPendingIndexersDoNotDoubleIndex(t *testing.T) {
	ctx := context.Background()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	var rows []outbox.Row
	for i := 0; i < 40; i++ {
		ev := fixtures.SmallEvent(t, pool, fixtures.EventOptions{})
		rows = append(rows, outbox.Row{EventID: &ev.ID, Topic: outbox.TopicCatalog})
	}
	require.NoError(t, outbox.PendingSink(st, nil).Publish(ctx, rows))

	var mu sync.Mutex
	seen := map[string]int{}
	apply := func(ctx context.Context, ids []string) error {
		time.Sleep(20 * time.Millisecond) // overlap the two indexers
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			seen[id]++
		}
		return nil
	}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		idx := search.NewPendingIndexer(st, apply, nil)
		idx.Batch = 3
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := idx.Once(ctx)
				if err != nil || n == 0 {
					assert.NoError(t, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, 40)
	for id, n := range seen {
		require.Equal(t, 1, n, id)
	}
	require.Zero(t, pendingCount(t, st))
}
