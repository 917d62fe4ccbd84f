package catalog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// TestEventRowsFromMemory: an event row read is answered from memory for
// EventRowsFreshFor (a change written behind the catalog's back is not
// seen), read again at once after ForgetEvents, and again once that time
// has passed.
func TestEventRowsFromMemory(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st := store.New(testdb.NewPool(t))
	svc := catalog.New(st, clock)
	v, secs := createVenue(t, svc)
	e, err := svc.CreateEvent(admin(), eventInput(v.ID, secs))
	require.NoError(t, err)
	ctx := context.Background()
	rename := func(name string) {
		_, err := st.Pool().Exec(ctx, `UPDATE events SET name = $2 WHERE id = $1`, e.ID, name)
		require.NoError(t, err)
	}
	name := func() string {
		got, err := svc.GetEvent(ctx, e.ID)
		require.NoError(t, err)
		return got.Name
	}

	_, ok := svc.CachedEvent(e.ID)
	require.False(t, ok, "not read yet")
	require.Equal(t, e.Name, name())
	rename("Renamed behind its back")
	require.Equal(t, e.Name, name(), "answered from memory")
	cached, ok := svc.CachedEvent(e.ID)
	require.True(t, ok)
	require.Equal(t, e.Name, cached.Name)

	svc.ForgetEvents(e.ID)
	_, ok = svc.CachedEvent(e.ID)
	require.False(t, ok)
	require.Equal(t, "Renamed behind its back", name())

	rename("Renamed again")
	require.Equal(t, "Renamed behind its back", name())
	mu.Lock()
	now = now.Add(catalog.EventRowsFreshFor)
	mu.Unlock()
	require.Equal(t, "Renamed again", name(), "read again after EventRowsFreshFor")
}
