package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// Rows that never change are answered from memory once loaded (no query:
// they still answer with the pool closed); events, which a cancellation
// changes, are answered from memory only until forgotten (and for
// EventRowsFreshFor: eventrows_test.go); an empty list is not kept.
func TestImmutableRowsFromMemory(t *testing.T) {
	t.Parallel()
	pool := testdb.NewPool(t)
	svc := catalog.New(store.New(pool), time.Now)
	v, secs := createVenue(t, svc)
	evs, err := svc.CreateEvents(admin(), []catalog.EventInput{eventInput(v.ID, secs)})
	require.NoError(t, err)
	e := evs[0]
	ctx := context.Background()
	unknown := uuid.NewString()

	_, ok := svc.CachedVenue(v.ID)
	require.False(t, ok, "not loaded yet")
	venues, err := svc.VenuesByIDs(ctx, []string{v.ID})
	require.NoError(t, err)
	prices, err := svc.PricesByEventIDs(ctx, []string{e.ID, unknown})
	require.NoError(t, err)
	require.Len(t, prices[e.ID], len(secs))
	require.Empty(t, prices[unknown])
	_, err = svc.EventsByIDs(ctx, []string{e.ID})
	require.NoError(t, err)

	pool.Close()
	got, ok := svc.CachedVenue(v.ID)
	require.True(t, ok)
	require.Equal(t, venues[v.ID], got)
	gotSecs, ok := svc.CachedSectionsOfVenue(v.ID)
	require.True(t, ok)
	require.Equal(t, secs, gotSecs)
	_, ok = svc.CachedPricesOfEvent(unknown)
	require.False(t, ok, "an empty list is loaded again")

	again, err := svc.VenuesByIDs(ctx, []string{v.ID})
	require.NoError(t, err, "answered without a query")
	require.Equal(t, venues, again)
	againPrices, err := svc.PricesByEventIDs(ctx, []string{e.ID})
	require.NoError(t, err)
	require.Equal(t, prices[e.ID], againPrices[e.ID])
	_, err = svc.EventsByIDs(ctx, []string{e.ID})
	require.NoError(t, err, "an event row read a moment ago")
	svc.ForgetEvents(e.ID)
	_, err = svc.EventsByIDs(ctx, []string{e.ID})
	require.Error(t, err, "a forgotten event is read from Postgres")
	_, err = svc.PricesByEventIDs(ctx, []string{e.ID, unknown})
	require.Error(t, err, "the empty list is queried again")
}
