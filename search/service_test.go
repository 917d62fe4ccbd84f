package search_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/search"
)

func TestProjectorAppliesEditsByVersion(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 200, false)
	b, err := search.OpenBleve(t.TempDir(), false)
	require.NoError(t, err)
	defer b.Close()
	svc := f.service(t, b)
	require.NoError(t, svc.Start(ctx, b.Fresh))
	var projector search.Projector = svc

	id := f.ids["edit"]
	require.NoError(t, f.store.Exec(ctx,
		`UPDATE events SET name = 'Velada Renombrada Zeta', version = version + 1, updated_at = now() WHERE id = $1`, id))
	go func() { _ = projector.Apply(ctx, []string{id}) }() // as the relay would
	require.Eventually(t, func() bool {
		r, err := svc.Search(ctx, search.Input{Text: "velada renombrada", First: 5})
		return err == nil && len(r.Hits) > 0 && r.Hits[0].ID == id
	}, 5*time.Second, 20*time.Millisecond)
	r, err := svc.Search(ctx, search.Input{Text: "nombre provisional", First: 5})
	require.NoError(t, err)
	require.NotContains(t, ids(r), id)

	// An older version never overwrites a newer one; replays are harmless.
	require.NoError(t, b.Index(ctx, []search.Document{{ID: id, Name: "Nombre Antiguo", Version: 1, StartsAt: f.now.Add(time.Hour)}}))
	require.NoError(t, projector.Apply(ctx, []string{id, id}))
	r, err = svc.Search(ctx, search.Input{Text: "nombre antiguo", First: 5})
	require.NoError(t, err)
	require.NotContains(t, ids(r), id)
	v, err := b.Versions(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), v[id])

	// An event gone from Postgres is deleted from the index.
	require.NoError(t, projector.Apply(ctx, []string{"0190d0c8-0000-7000-8000-000000000000"}))
}

func TestIndexDeletedFromDiskIsRebuiltAtStart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 300, false)
	dir := t.TempDir()
	total := 300 + len(specials)

	b, err := search.OpenBleve(dir, false)
	require.NoError(t, err)
	require.True(t, b.Fresh)
	require.NoError(t, f.service(t, b).Start(ctx, b.Fresh))
	n, _ := b.Count(ctx)
	require.Equal(t, uint64(total), n)

	// Changed while stopped: caught up at the next start.
	id := f.ids["edit"]
	require.NoError(t, b.Close())
	require.NoError(t, f.store.Exec(ctx, `UPDATE events SET name = 'Cambio Offline Omega', version = version + 1 WHERE id = $1`, id))
	b, err = search.OpenBleve(dir, false)
	require.NoError(t, err)
	require.False(t, b.Fresh)
	svc := f.service(t, b)
	require.NoError(t, svc.Start(ctx, b.Fresh))
	r, err := svc.Search(ctx, search.Input{Text: "cambio offline omega", First: 1})
	require.NoError(t, err)
	require.Equal(t, []string{id}, ids(r))
	require.NoError(t, b.Close())

	// Deleted from disk: rebuilt at start.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "events.bleve")))
	b, err = search.OpenBleve(dir, false)
	require.NoError(t, err)
	require.True(t, b.Fresh)
	svc = f.service(t, b)
	_, err = svc.Search(ctx, search.Input{First: 1})
	require.ErrorIs(t, err, apperr.ErrServiceUnavailable, "no answers from a half-built index")
	require.NoError(t, svc.Start(ctx, b.Fresh))
	n, _ = b.Count(ctx)
	require.Equal(t, uint64(total), n)
	require.NoError(t, b.Close())

	// Corrupt: rebuilt too.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "events.bleve", "index_meta.json"), []byte("{garbage"), 0o644))
	b, err = search.OpenBleve(dir, false)
	require.NoError(t, err)
	defer b.Close()
	require.True(t, b.Fresh)
}

// failing is an engine whose backend is down.
type failing struct{ search.Engine }

func (failing) Search(ctx context.Context, q search.Query) (search.Result, error) {
	<-ctx.Done()
	return search.Result{}, errors.New("connection refused")
}

func TestUnavailableIndexAnswersQuickly(t *testing.T) {
	f := newFixture(t, 10, false)
	b, err := search.OpenBleve(t.TempDir(), false)
	require.NoError(t, err)
	defer b.Close()
	svc := f.service(t, failing{b})
	svc.Timeout = 200 * time.Millisecond
	svc.MarkReady()
	start := time.Now()
	_, err = svc.Search(context.Background(), search.Input{First: 5})
	require.ErrorIs(t, err, apperr.ErrServiceUnavailable)
	require.Less(t, time.Since(start), time.Second)
}

// A second process (here: a second open) cannot take an embedded index in
// use: ErrIndexLocked, which `ticketing reindex` turns into "stop serve
// first", instead of waiting forever or rebuilding it under the server.
func TestIndexInUseIsReportedLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := search.OpenBleve(dir, false)
	require.NoError(t, err)
	defer b.Close()
	_, err = search.OpenBleve(dir, true)
	require.ErrorIs(t, err, search.ErrIndexLocked)
}
