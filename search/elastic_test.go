package search_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/search"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, v any) {
	t.Helper()
	var got []byte
	switch v := v.(type) {
	case []byte:
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, v, "", "  "))
		got = buf.Bytes()
	default:
		var err error
		got, err = json.MarshalIndent(v, "", "  ")
		require.NoError(t, err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./search -run Golden -update")
	require.Equal(t, string(want), string(got))
}

func TestGoldenESMapping(t *testing.T) {
	var m map[string]any
	require.NoError(t, json.Unmarshal(search.ESMapping(), &m), "the mapping is valid JSON")
	golden(t, "es_mapping", search.ESMapping())
}

func TestGoldenESQueries(t *testing.T) {
	from := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	to := from.Add(30 * 24 * time.Hour)
	madrid := &search.GeoPoint{Lat: 40.4168, Lon: -3.7038}
	// A cursor as a previous page of the distance search would have made it.
	cursor := searchCursor(t, search.SortDistance, []any{1.25, "0190d0c8-0000-7000-8000-000000000001"})
	for name, q := range map[string]search.Query{
		"es_query_text":     {Text: "musica andaluza", From: from, Sort: search.SortRelevance, First: 20, Facets: true},
		"es_query_filters":  {City: "Málaga", Categories: []string{"music", "theatre"}, From: from, To: to, Sort: search.SortDate, First: 10},
		"es_query_distance": {Near: madrid, RadiusKm: 50, From: from, Sort: search.SortDistance, First: 20, After: cursor},
	} {
		t.Run(name, func(t *testing.T) {
			body, err := search.SearchBody(q)
			require.NoError(t, err)
			golden(t, name, body)
		})
	}
	golden(t, "es_bulk", json.RawMessage("["+strings.ReplaceAll(strings.TrimSpace(string(search.BulkBody("events", []search.Document{{
		ID: "e1", Name: "Noche de Música", Artists: []string{"Rosalía"}, City: "Sevilla", Country: "ES",
		Lat: 37.38, Lon: -5.98, StartsAt: from, MinPrice: 1000, MaxPrice: 3000,
		Currency: "EUR", Version: 7,
	}}))), "\n", ",")+"]"))
}

// searchCursor makes a cursor through the public API of a fake engine
// answer: encodeCursor is internal, so ask the embedded format by example.
func searchCursor(t *testing.T, s search.Sort, key []any) string {
	b, err := json.Marshal(map[string]any{"s": s, "k": key})
	require.NoError(t, err)
	return base64URL(b)
}

// fakeES is just enough of Elasticsearch to check what the engine sends.
type fakeES struct {
	mu       sync.Mutex
	requests []string
	aliases  map[string]string // index -> alias
}

func (f *fakeES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodHead && strings.HasPrefix(r.URL.Path, "/_alias/"):
		if len(f.aliases) == 0 {
			w.WriteHeader(http.StatusNotFound)
		}
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/_alias/"):
		out := map[string]any{}
		for idx := range f.aliases {
			out[idx] = map[string]any{}
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.URL.Path == "/_aliases":
		var req struct {
			Actions []map[string]struct{ Index, Alias string } `json:"actions"`
		}
		_ = json.Unmarshal(body, &req)
		for _, a := range req.Actions {
			if add, ok := a["add"]; ok {
				f.aliases[add.Index] = add.Alias
			}
			if rm, ok := a["remove"]; ok {
				delete(f.aliases, rm.Index)
			}
		}
		_, _ = w.Write([]byte(`{"acknowledged":true}`))
	case strings.HasSuffix(r.URL.Path, "/_bulk"):
		_, _ = w.Write([]byte(`{"errors":true,"items":[{"index":{"status":201}},{"index":{"status":409,"error":{"type":"version_conflict_engine_exception"}}}]}`))
	default:
		_, _ = w.Write([]byte(`{"acknowledged":true}`))
	}
}

func TestElasticReindexSwapsAlias(t *testing.T) {
	ctx := context.Background()
	fake := &fakeES{aliases: map[string]string{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	e, fresh, err := search.OpenElastic(ctx, srv.URL, "events")
	require.NoError(t, err)
	require.True(t, fresh)
	require.Len(t, fake.aliases, 1)
	var first string
	for idx := range fake.aliases {
		first = idx
	}
	// A version conflict (an older version) is not an error.
	require.NoError(t, e.Index(ctx, []search.Document{{ID: "a", Version: 2}, {ID: "b", Version: 1}}))

	fake.requests = nil
	require.NoError(t, e.Rebuild(ctx, func(yield func([]search.Document) error) error {
		return yield([]search.Document{{ID: "a", Version: 3}})
	}))
	require.Len(t, fake.aliases, 1)
	require.NotContains(t, fake.aliases, first, "the alias moved to the new index")
	// create new index, bulk into it, refresh, then swap, then drop the old one.
	require.Regexp(t, `^PUT /events-\d+$`, fake.requests[0])
	require.Regexp(t, `/_bulk$`, fake.requests[1])
	require.Regexp(t, `/_refresh$`, fake.requests[2])
	require.Equal(t, "POST /_aliases", fake.requests[4])
	require.Equal(t, "DELETE /"+first, fake.requests[5])
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
