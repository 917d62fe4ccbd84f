package search_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/demo"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/search/searchtest"
)

// engines are the engines the contract runs against: embedded always,
// Elasticsearch when ELASTICSEARCH_URL is set.
func engines(t *testing.T) map[string]func(t *testing.T) search.Engine {
	out := map[string]func(t *testing.T) search.Engine{
		"embedded": func(t *testing.T) search.Engine {
			b, err := search.OpenBleve(t.TempDir(), false)
			require.NoError(t, err)
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
	}
	if url := os.Getenv("ELASTICSEARCH_URL"); url != "" {
		out["elasticsearch"] = func(t *testing.T) search.Engine {
			alias := fmt.Sprintf("events_test_%d", time.Now().UnixNano())
			e, _, err := search.OpenElastic(context.Background(), url, alias)
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.DeleteAll(context.Background()) })
			return e
		}
	}
	return out
}

func TestContract(t *testing.T) {
	f := newFixture(t, 2000, true)
	for name, open := range engines(t) {
		t.Run(name, func(t *testing.T) {
			svc := f.service(t, open(t))
			n, err := svc.Rebuild(context.Background())
			require.NoError(t, err)
			require.Equal(t, 2000+demo.DemoEvents+len(specials), n)
			svc.MarkReady()
			contract(t, f, svc)
		})
	}
}

func ids(r search.Result) []string {
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.ID
	}
	return out
}

func contract(t *testing.T, f *fixture, svc *search.Service) {
	ctx := context.Background()
	find := func(t *testing.T, in search.Input) search.Result {
		t.Helper()
		if in.First == 0 {
			in.First = 20
		}
		r, err := svc.Search(ctx, in)
		require.NoError(t, err)
		return r
	}
	future := "e.starts_at >= now()"

	t.Run("no filter: upcoming events by date", func(t *testing.T) {
		r := find(t, search.Input{Facets: true})
		require.Equal(t, f.count(t, future), r.Total)
		require.Len(t, r.Hits, 20)
		require.True(t, r.HasNext)
		sum := 0
		for _, c := range r.Categories {
			sum += c.Count
		}
		require.Equal(t, r.Total, sum, "category facets cover the result set")
		require.NotContains(t, ids(r), f.ids["past"])
	})
	t.Run("city, accent and case insensitive", func(t *testing.T) {
		r := find(t, search.Input{City: "MALAGA"})
		require.Equal(t, f.count(t, future+" AND v.city = 'Málaga'"), r.Total)
		require.Positive(t, r.Total)
	})
	t.Run("categories", func(t *testing.T) {
		r := find(t, search.Input{Categories: []string{"sports", "Comedy"}})
		require.Equal(t, f.count(t, future+" AND e.category IN ('sports', 'comedy')"), r.Total)
	})
	t.Run("from and to", func(t *testing.T) {
		from, to := f.now.Add(30*24*time.Hour), f.now.Add(60*24*time.Hour)
		r := find(t, search.Input{From: &from, To: &to})
		require.Equal(t, f.count(t, "e.starts_at >= $1 AND e.starts_at < $2", from, to), r.Total)
	})
	t.Run("past events with an earlier from", func(t *testing.T) {
		from := f.now.Add(-3 * 24 * time.Hour)
		r := find(t, search.Input{Text: "pasado irrepetible", From: &from})
		require.Equal(t, f.ids["past"], r.Hits[0].ID)
		r = find(t, search.Input{Text: "pasado irrepetible"})
		require.NotContains(t, ids(r), f.ids["past"])
	})
	t.Run("combined filters", func(t *testing.T) {
		to := f.now.Add(120 * 24 * time.Hour)
		r := find(t, search.Input{City: "madrid", Categories: []string{"music"}, To: &to, Facets: true})
		require.Equal(t, f.count(t, future+" AND v.city = 'Madrid' AND e.category = 'music' AND e.starts_at < $1", to), r.Total)
		require.Len(t, r.Categories, 1)
		require.Equal(t, "music", r.Categories[0].Value)
		require.Equal(t, []search.FacetCount{{Value: "Madrid", Count: r.Total}}, r.Cities)
	})
	t.Run("accent folding: musica finds Música", func(t *testing.T) {
		r := find(t, search.Input{Text: "musica andaluza"})
		require.Equal(t, f.ids["andaluza"], r.Hits[0].ID)
	})
	t.Run("typo: barcelna finds Barcelona", func(t *testing.T) {
		r := find(t, search.Input{Text: "barcelna", First: 50})
		require.Equal(t, f.count(t, future+" AND v.city = 'Barcelona'"), r.Total)
	})
	t.Run("typo in a name: xilofona", func(t *testing.T) {
		r := find(t, search.Input{Text: "xilofona nocturna"})
		require.Equal(t, f.ids["xilo-name"], r.Hits[0].ID)
	})
	t.Run("stemming: recitales finds recital", func(t *testing.T) {
		r := find(t, search.Input{Text: "recitales"})
		require.Contains(t, ids(r), f.ids["xilo-desc"])
	})
	t.Run("name match ranks above description match", func(t *testing.T) {
		r := find(t, search.Input{Text: "xilofonia"})
		require.GreaterOrEqual(t, len(r.Hits), 2)
		require.Equal(t, []string{f.ids["xilo-name"], f.ids["xilo-desc"]}, ids(r)[:2])
	})
	t.Run("distance filter and sort", func(t *testing.T) {
		madrid := searchtest.Cities[0]
		near := &search.GeoPoint{Lat: madrid.Lat, Lon: madrid.Lon}
		radius := 40.0
		r := find(t, search.Input{Near: near, RadiusKm: &radius, Sort: search.SortDistance, First: 100})
		require.Equal(t, f.count(t, future+" AND v.city = 'Madrid'"), r.Total)
		last := 0.0
		for _, h := range r.Hits {
			require.NotNil(t, h.DistanceKm)
			require.LessOrEqual(t, *h.DistanceKm, radius)
			require.GreaterOrEqual(t, *h.DistanceKm+1e-6, last)
			last = *h.DistanceKm
		}
		// default radius 50 km: Madrid only (the next city is ~250 km away).
		r = find(t, search.Input{Near: near})
		require.Equal(t, f.count(t, future+" AND v.city = 'Madrid'"), r.Total)
	})
	for _, tc := range []struct {
		name string
		in   search.Input
	}{
		{"pagination by date", search.Input{Categories: []string{"dance", "family"}}},
		{"pagination by relevance", search.Input{Text: "festival"}},
		{"pagination by distance", search.Input{Near: &search.GeoPoint{Lat: 40.4, Lon: -3.7}, RadiusKm: ptr(700.0), Sort: search.SortDistance}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.First = 37
			seen := map[string]bool{}
			total := -1
			for page := 0; ; page++ {
				require.Less(t, page, 200)
				r := find(t, in)
				if total < 0 {
					total = r.Total
					require.Greater(t, total, 100, "enough results to page")
				}
				for _, h := range r.Hits {
					require.False(t, seen[h.ID], "duplicate %s on page %d", h.ID, page)
					seen[h.ID] = true
				}
				if !r.HasNext {
					break
				}
				in.After = r.Hits[len(r.Hits)-1].Cursor
			}
			require.Len(t, seen, total, "no gaps")
		})
	}
	t.Run("invalid cursor and sort", func(t *testing.T) {
		_, err := svc.Search(ctx, search.Input{First: 5, After: "nope"})
		requireInvalid(t, err)
		_, err = svc.Search(ctx, search.Input{First: 5, Sort: search.SortDistance})
		requireInvalid(t, err)
		r := find(t, search.Input{First: 5})
		_, err = svc.Search(ctx, search.Input{First: 5, Text: "rock", After: r.Hits[4].Cursor})
		requireInvalid(t, err) // a DATE cursor does not continue a RELEVANCE search
	})
	t.Run("facets are sorted by count", func(t *testing.T) {
		r := find(t, search.Input{Facets: true})
		require.True(t, sort.SliceIsSorted(r.Cities, func(i, j int) bool { return r.Cities[i].Count > r.Cities[j].Count }))
		for _, c := range r.Cities {
			require.NotEqual(t, "", strings.TrimSpace(c.Value))
		}
	})
}

func requireInvalid(t *testing.T, err error) {
	t.Helper()
	var inv *apperr.InvalidInputError
	require.ErrorAs(t, err, &inv)
}

func ptr[T any](v T) *T { return &v }
