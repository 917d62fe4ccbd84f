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

// textQueries are text searches over the fixture: one word and several,
// typos, accents, stems, stop words, no match, every filter and order.
func textQueries(now time.Time) []search.Query {
	madrid := searchtest.Cities[0]
	in90 := now.Add(90 * 24 * time.Hour)
	var qs []search.Query
	for _, text := range []string{"festival", "musica clasica", "barcelna", "flamneco", "jazz madrid",
		"Rosalía", "teatro", "recitales", "xilofona nocturna", "ORQUESTA sinfónica", "opera", "de la noche",
		"la", "tenis madrid", "nada de nada zzz", "12", "guitarra española blues"} {
		qs = append(qs, search.Query{Text: text, Sort: search.SortRelevance, From: now})
	}
	near := &search.GeoPoint{Lat: madrid.Lat, Lon: madrid.Lon}
	qs = append(qs,
		search.Query{Text: "festival", Sort: search.SortRelevance, From: now, Facets: true},
		search.Query{Text: "musica", Sort: search.SortRelevance, From: now, City: "madrid", Facets: true},
		search.Query{Text: "jazz", Sort: search.SortRelevance, From: now, Categories: []string{"music", "comedy"}, To: in90},
		search.Query{Text: "noche", Sort: search.SortRelevance, From: now.Add(-10 * 24 * time.Hour)},
		search.Query{Text: "teatro", Sort: search.SortRelevance, From: now, City: "Nowhere", Facets: true},
		search.Query{Text: "musica", Sort: search.SortRelevance, From: now, Near: near, RadiusKm: 50},
		search.Query{Text: "festival verano", Sort: search.SortDate, From: now, Facets: true},
		search.Query{Text: "barcelna", Sort: search.SortDate, From: now, To: in90},
		search.Query{Text: "musica", Sort: search.SortDistance, From: now, Near: near, RadiusKm: 700, Facets: true},
	)
	return qs
}

// requireSameTextAnswers pages through every text query with the text
// index and with Bleve's searchers and requires identical pages (ids,
// cursors with their scores, distances), totals and facets.
func requireSameTextAnswers(t *testing.T, b *search.Bleve, now time.Time, firsts ...int) {
	t.Helper()
	ctx := context.Background()
	b.StatsTTL = -1
	defer func() { b.StatsTTL = 0 }()
	for i, q := range textQueries(now) {
		require.True(t, search.TextIndexAnswers(b, q), "query %d (%+v) is answered by the text index", i, q)
		for _, first := range firsts {
			q.First, q.After = first, ""
			for page := 0; page < 5; page++ {
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

// Text searches are answered from the text index exactly as Bleve's
// searchers answer them: after a rebuild, after edits (new names, texts,
// cities) and deletes, and after reopening (the text index loaded from the
// index's postings).
func TestTextAnswersAsTheIndex(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2000, true)
	dir := t.TempDir()
	b, err := search.OpenBleve(dir, false)
	require.NoError(t, err)
	_, err = f.service(t, b).Rebuild(ctx)
	require.NoError(t, err)
	now := time.Now().UTC()
	requireSameTextAnswers(t, b, now, 7, 20)
	// typo candidates: one, or several (a disjunction of its own)
	require.Equal(t, []string{"barcelona"}, search.TypoCandidates(b, "barcelna"))
	require.Equal(t, []string{"flamenco"}, search.TypoCandidates(b, "flamneco")) // a transposition is one edit
	require.Equal(t, []string{"musica", "musical"}, search.TypoCandidates(b, "musica"))

	// edits: new texts (a typo candidate appears: "flamenko"), the same
	// text with another date, and deletes
	r, err := b.Search(ctx, search.Query{Text: "musica", Sort: search.SortRelevance, From: now, First: 70})
	require.NoError(t, err)
	require.Len(t, r.Hits, 70)
	var docs []search.Document
	for i, h := range r.Hits[:60] {
		d := search.Document{ID: h.ID, Name: fmt.Sprintf("Flamenko Editado %d", i%4), Version: 1000,
			Description: "jazz y musica de barcelona", Artists: []string{"Rosalía Vega 1", "Emma Smith 2"},
			Category: []string{"family", "music", "sports"}[i%3], City: []string{"Sevilla", "Málaga"}[i%2],
			Venue: "Sala Nueva", Lat: 37.39, Lon: -5.99, StartsAt: now.Add(time.Duration(i+1) * 7 * time.Hour)}
		docs = append(docs, d)
	}
	for _, d := range docs[:30] {
		require.NoError(t, b.Index(ctx, []search.Document{d})) // a segment each
	}
	require.NoError(t, b.Index(ctx, docs[30:]))
	moved := docs[0]
	moved.StartsAt, moved.Version = now.Add(50*24*time.Hour), 1001 // the same text, another date
	require.NoError(t, b.Index(ctx, []search.Document{moved}))
	require.NoError(t, b.Delete(ctx, []string{r.Hits[60].ID, r.Hits[61].ID}))
	// Bleve proposes typo candidates from every segment's dictionary,
	// deleted documents' terms included until a merge: compare merged
	require.NoError(t, b.Compact(ctx))
	requireSameTextAnswers(t, b, now, 20)

	// reopened: the text index is loaded from the index's postings
	require.NoError(t, b.Close())
	b, err = search.OpenBleve(dir, false)
	require.NoError(t, err)
	defer b.Close()
	requireSameTextAnswers(t, b, now, 20)
	// and edited after that
	require.NoError(t, b.Index(ctx, []search.Document{{ID: r.Hits[62].ID, Name: "Jazz Reabierto", Version: 2000,
		City: "Madrid", Category: "music", StartsAt: now.Add(time.Hour), Lat: madridLat, Lon: madridLon}}))
	require.NoError(t, b.Compact(ctx))
	requireSameTextAnswers(t, b, now, 20)
}

var madridLat, madridLon = searchtest.Cities[0].Lat, searchtest.Cities[0].Lon
