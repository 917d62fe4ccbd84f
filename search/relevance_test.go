package search_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/search"
)

// RELEVANCE pages read the sort key of the candidates only (byRelevance);
// they are the pages of Bleve's sort on (score, key) over every match:
// same hits, cursors, totals and facets, page after page, through ties.
func TestRelevanceAsKeySort(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2000, true)
	b, err := search.OpenBleve(t.TempDir(), false)
	require.NoError(t, err)
	defer b.Close()
	_, err = f.service(t, b).Rebuild(ctx)
	require.NoError(t, err)
	b.StatsTTL = -1
	now := time.Now().UTC()
	requireRelevanceAsKeySort(t, b, now)

	// more segments, and deleted documents in the first: edits (new
	// names, cities, categories) and deletes through the engine
	r, err := b.Search(ctx, search.Query{Text: "festival", Sort: search.SortRelevance, From: now, First: 80})
	require.NoError(t, err)
	require.Len(t, r.Hits, 80)
	var docs []search.Document
	for i, h := range r.Hits[:60] {
		docs = append(docs, search.Document{ID: h.ID, Name: fmt.Sprintf("Festival Editado %d", i%4), Version: 1000,
			Category: []string{"family", "music", "sports"}[i%3], City: []string{"Sevilla", "Málaga"}[i%2],
			Lat: 37.39, Lon: -5.99, StartsAt: now.Add(time.Duration(i+1) * 7 * time.Hour)})
	}
	for _, d := range docs {
		require.NoError(t, b.Index(ctx, []search.Document{d})) // a segment each
	}
	require.NoError(t, b.Delete(ctx, []string{r.Hits[60].ID, r.Hits[61].ID}))
	requireRelevanceAsKeySort(t, b, now)
}

func requireRelevanceAsKeySort(t *testing.T, b *search.Bleve, now time.Time) {
	t.Helper()
	ctx := context.Background()
	// Bleve's searchers (text searches are answered by the text index,
	// which TestTextAnswersAsTheIndex compares with these)
	search.SetIndexOnly(b, true)
	defer search.SetIndexOnly(b, false)
	for i, q := range []search.Query{
		{Text: "festival"},
		{Text: "festival", Facets: true},
		{Text: "musica clasica", Facets: true},
		{Text: "teatro", City: "madrid"},
		{Text: "barcelna"},
		{Text: "jazz", Categories: []string{"music", "comedy"}, To: now.Add(90 * 24 * time.Hour)},
		{Text: "noche", From: now.Add(-10 * 24 * time.Hour)},
		{Text: "nada de nada zzz", Facets: true},
	} {
		if q.From.IsZero() {
			q.From = now
		}
		q.Sort = search.SortRelevance
		for _, first := range []int{1, 7, 20} {
			q.First, q.After = first, ""
			for page := 0; page < 8; page++ {
				name := fmt.Sprintf("query %d (%+v) first %d page %d", i, q, first, page)
				search.SetKeySort(b, true)
				want, err := b.Search(ctx, q)
				require.NoError(t, err, name)
				search.SetKeySort(b, false)
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
