package search_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/search/searchtest"
)

// viewQueries are searches without text (answered from the view) over the
// fixture: every filter, both orders, facets.
func viewQueries(now time.Time) []search.Query {
	madrid, bcn := searchtest.Cities[0], searchtest.Cities[1]
	in30, in90 := now.Add(30*24*time.Hour), now.Add(90*24*time.Hour)
	past := now.Add(-5 * 24 * time.Hour)
	var qs []search.Query
	for _, facets := range []bool{false, true} {
		for _, q := range []search.Query{
			{Sort: search.SortDate, From: now},
			{Sort: search.SortDate, From: past},
			{Sort: search.SortDate, From: now, To: in30},
			{Sort: search.SortDate, From: now, City: "MALAGA"},
			{Sort: search.SortDate, From: now, City: "madrid"},
			{Sort: search.SortDate, From: now, City: "Nowhere"},
			{Sort: search.SortDate, From: now, City: "san  sebastián"},
			{Sort: search.SortDate, From: now, Categories: []string{"sports", "Comedy"}},
			{Sort: search.SortDate, From: now, Categories: []string{"nothing"}},
			{Sort: search.SortDate, From: now, Categories: []string{"music"}, City: "Barcelona", To: in90},
			{Sort: search.SortDate, From: now, Near: &search.GeoPoint{Lat: madrid.Lat, Lon: madrid.Lon}, RadiusKm: 50},
			{Sort: search.SortDate, From: now, To: in30, Near: &search.GeoPoint{Lat: 40.4, Lon: -3.7}, RadiusKm: 700},
			{Sort: search.SortDistance, From: now, Near: &search.GeoPoint{Lat: madrid.Lat, Lon: madrid.Lon}, RadiusKm: 30},
			{Sort: search.SortDistance, From: now, Near: &search.GeoPoint{Lat: bcn.Lat + 0.01, Lon: bcn.Lon - 0.02}, RadiusKm: 50},
			{Sort: search.SortDistance, From: now, Near: &search.GeoPoint{Lat: 40.4, Lon: -3.7}, RadiusKm: 700, Categories: []string{"music", "theatre"}},
			{Sort: search.SortDistance, From: past, To: in90, Near: &search.GeoPoint{Lat: 41.0, Lon: -1.0}, RadiusKm: 20000},
			{Sort: search.SortDistance, From: now, Near: &search.GeoPoint{Lat: 0, Lon: 0}, RadiusKm: 10},
		} {
			q.Facets = facets
			qs = append(qs, q)
		}
	}
	return qs
}

// requireSameAnswers pages through every query with the view and with the
// index alone and requires identical pages (ids, cursors, distances),
// totals and facets. The index's counts are not reused from its stats
// cache: after edits, counts cached within the last StatsTTL are stale by
// design, and the comparison is of the result sets.
//
// With no page sizes it tries 1, 20 and 97 (the paging edge cases); the
// checks after an edit pass one size, since paging itself was compared on
// the first pass and under -race each pass costs tens of seconds.
func requireSameAnswers(t *testing.T, b *search.Bleve, now time.Time, firsts ...int) {
	t.Helper()
	if len(firsts) == 0 {
		firsts = []int{1, 20, 97}
	}
	ctx := context.Background()
	b.StatsTTL = -1
	defer func() { b.StatsTTL = 0 }()
	for i, q := range viewQueries(now) {
		for _, first := range firsts {
			q.First = first
			q.After = ""
			for page := 0; page < 6; page++ {
				name := fmt.Sprintf("query %d (%+v) first %d page %d", i, q, first, page)
				search.SetIndexOnly(b, true)
				want, err := b.Search(ctx, q)
				require.NoError(t, err, name)
				search.SetIndexOnly(b, false)
				got, err := b.Search(ctx, q)
				require.NoError(t, err, name)
				require.Equal(t, want, got, name)
				if !got.HasNext {
					break
				}
				q.After = got.Hits[len(got.Hits)-1].Cursor
			}
		}
	}
}

// requireSameTextFacets: facets counted with the page of a text search
// equal those of a separate counting pass.
func requireSameTextFacets(t *testing.T, b *search.Bleve, now time.Time) {
	t.Helper()
	ctx := context.Background()
	search.SetIndexOnly(b, true) // Bleve's searchers, not the text index
	defer search.SetIndexOnly(b, false)
	b.StatsTTL = -1
	defer func() { b.StatsTTL = 0 }()
	for _, q := range []search.Query{
		{Text: "festival", Sort: search.SortRelevance},
		{Text: "barcelna", Sort: search.SortRelevance, City: "barcelona"},
		{Text: "musica", Sort: search.SortDistance, Near: &search.GeoPoint{Lat: 40.4, Lon: -3.7}, RadiusKm: 700},
		{Text: "nada de nada zzz", Sort: search.SortRelevance},
	} {
		q.From, q.First, q.Facets = now, 10, true
		search.SetSeparateCounts(b, true)
		want, err := b.Search(ctx, q)
		require.NoError(t, err)
		search.SetSeparateCounts(b, false)
		got, err := b.Search(ctx, q)
		require.NoError(t, err)
		require.Equal(t, want, got, q.Text)
		if q.Text == "festival" {
			require.NotEmpty(t, got.Categories)
		}
	}
}

// The view answers searches without text exactly as the index does: after
// a rebuild, after edits (moved dates, cities, categories, locations) and
// deletes, and after reopening (the view reloaded from stored fields).
func TestViewAnswersAsTheIndex(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2000, true)
	dir := t.TempDir()
	b, err := search.OpenBleve(dir, false)
	require.NoError(t, err)
	svc := f.service(t, b)
	n, err := svc.Rebuild(ctx)
	require.NoError(t, err)
	now := time.Now().UTC()
	requireSameAnswers(t, b, now)
	requireSameTextFacets(t, b, now)

	// edits and deletes through the engine
	r, err := b.Search(ctx, search.Query{Sort: search.SortDate, From: now, First: 100})
	require.NoError(t, err)
	var docs []search.Document
	for i, h := range r.Hits[:60] {
		d := search.Document{ID: h.ID, Name: "Editado", Version: 1000, Category: "family",
			City: "Sevilla", Lat: 37.39, Lon: -5.99, StartsAt: now.Add(time.Duration(i) * 7 * time.Hour)}
		switch i % 3 {
		case 1:
			d.City, d.Category, d.Lat, d.Lon = "Málaga", "music", searchtest.Cities[0].Lat, searchtest.Cities[0].Lon
		case 2:
			d.StartsAt = now.Add(-time.Hour) // now in the past
		}
		docs = append(docs, d)
	}
	require.NoError(t, b.Index(ctx, docs))
	require.NoError(t, b.Delete(ctx, []string{r.Hits[60].ID, r.Hits[61].ID, "not-indexed"}))
	requireSameAnswers(t, b, now, 20)
	require.NoError(t, b.Index(ctx, docs[:1])) // same version again: harmless
	requireSameAnswers(t, b, now, 20)

	// reopened: the view is loaded from the index
	require.NoError(t, b.Close())
	b, err = search.OpenBleve(dir, false)
	require.NoError(t, err)
	defer b.Close()
	require.False(t, b.Fresh)
	c, err := b.Count(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(n-2), c)
	requireSameAnswers(t, b, now, 20)

	// a changed total is seen at once (no stale counts)
	q := search.Query{Sort: search.SortDate, From: now, City: "sevilla", Facets: true, First: 5}
	before, err := b.Search(ctx, q)
	require.NoError(t, err)
	require.NoError(t, b.Delete(ctx, []string{before.Hits[0].ID}))
	after, err := b.Search(ctx, q)
	require.NoError(t, err)
	require.Equal(t, before.Total-1, after.Total)
	requireSameAnswers(t, b, now, 20)
}
