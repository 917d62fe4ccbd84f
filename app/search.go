package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/search"
)

// initSearch opens the engine of SEARCH_BACKEND, registers its metrics,
// readiness check and outbox projection, and brings it up to date with
// Postgres in the background (a full rebuild when the index is new, else a
// catch-up). If the engine cannot be opened, searchEvents answers
// SERVICE_UNAVAILABLE and everything else works.
func (a *App) initSearch() {
	engine, fresh, cleanup, err := OpenSearchEngine(context.Background(), a.Cfg.SearchBackend, searchDir(a.Cfg), a.Cfg.ElasticsearchURL, false)
	if err != nil {
		a.Log.Error("search unavailable", "err", err)
		a.AddReadinessCheck("search", func(context.Context) error { return err }, false)
		return
	}
	a.Search = search.NewService(engine, a.Store, a.Log)
	a.Search.Now = a.Now
	if err := a.Search.RegisterMetrics(a.Metrics); err != nil {
		a.Log.Warn("search metrics", "err", err)
	}
	a.AddReadinessCheck("search", a.Search.Ready, false)
	a.Projections = append(a.Projections, outbox.ProjectorSink(a.Search))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		if err := a.Search.Start(ctx, fresh); err != nil && ctx.Err() == nil {
			a.Log.Error("search start-up", "err", err, "after", time.Since(start).String())
		}
	}()
	a.searchStop = func() {
		cancel()
		<-done
		_ = engine.Close()
		cleanup()
	}
}

// SearchDir is where the embedded index of cfg's database lives:
// SEARCH_DIR/<database name>.
func SearchDir(cfg config.Config) string {
	db := "ticketing"
	if u, err := url.Parse(cfg.DatabaseURL); err == nil && strings.Trim(u.Path, "/") != "" {
		db = strings.Trim(u.Path, "/")
	}
	return filepath.Join(cfg.SearchDir, db)
}

// searchDir is SearchDir, except under `go test` with the default
// SEARCH_DIR: then "" (a temporary directory), so tests never share or lock
// an index nor leave one in the source tree.
func searchDir(cfg config.Config) string {
	if testing.Testing() && cfg.SearchDir == "./data/search" {
		return ""
	}
	return SearchDir(cfg)
}

// OpenSearchEngine opens the engine of backend ("embedded" under dir, or
// "elasticsearch" at esURL); fresh reports an index that needs a full
// rebuild, reset forces one. An empty dir means a temporary directory that
// cleanup removes.
func OpenSearchEngine(ctx context.Context, backend, dir, esURL string, reset bool) (engine search.Engine, fresh bool, cleanup func(), err error) {
	cleanup = func() {}
	switch backend {
	case "elasticsearch":
		e, fresh, err := search.OpenElastic(ctx, esURL, "events")
		if err != nil {
			return nil, false, cleanup, err
		}
		return e, fresh || reset, cleanup, nil
	default:
		if dir == "" {
			if dir, err = os.MkdirTemp("", "ticketing-search-"); err != nil {
				return nil, false, cleanup, fmt.Errorf("search: %w", err)
			}
			tmp := dir
			cleanup = func() { _ = os.RemoveAll(tmp) }
		}
		b, err := search.OpenBleve(dir, reset)
		if err != nil {
			cleanup()
			return nil, false, func() {}, err
		}
		return b, b.Fresh, cleanup, nil
	}
}

// restEvent is an event of GET /api/events (the fields of the GraphQL Event
// that need no further loading).
type restEvent struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Category    string     `json:"category"`
	StartsAt    time.Time  `json:"startsAt"`
	EndsAt      *time.Time `json:"endsAt,omitempty"`
	VenueID     string     `json:"venueId"`
}

// searchEventsREST is GET /api/events?text=&lat=&lon=&radiusKm=&city=&category=&from=&to=&first=&after=
// (searchEvents; category may repeat; optional sort=RELEVANCE|DATE|DISTANCE).
func (a *App) searchEventsREST(w http.ResponseWriter, r *http.Request) {
	fail := func(err error) {
		d, known := apperr.Describe(err)
		if !known {
			a.Log.ErrorContext(r.Context(), "GET /api/events", "err", err)
		}
		writeError(w, r, d.HTTPStatus, d.Code, d.Message)
	}
	if a.Search == nil {
		fail(apperr.ErrServiceUnavailable)
		return
	}
	q := r.URL.Query()
	in := search.Input{Text: q.Get("text"), City: q.Get("city"), Categories: q["category"],
		After: q.Get("after"), Sort: search.Sort(q.Get("sort")), First: 20, Facets: true}
	num := func(name string) (*float64, error) {
		if q.Get(name) == "" {
			return nil, nil
		}
		f, err := strconv.ParseFloat(q.Get(name), 64)
		if err != nil {
			return nil, apperr.Invalid(name, "not a number")
		}
		return &f, nil
	}
	when := func(name string) (*time.Time, error) {
		if q.Get(name) == "" {
			return nil, nil
		}
		t, err := time.Parse(time.RFC3339, q.Get(name))
		if err != nil {
			return nil, apperr.Invalid(name, "not an RFC 3339 time")
		}
		return &t, nil
	}
	lat, err1 := num("lat")
	lon, err2 := num("lon")
	radius, err3 := num("radiusKm")
	first, err4 := num("first")
	from, err5 := when("from")
	to, err6 := when("to")
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		fail(err)
		return
	}
	if (lat == nil) != (lon == nil) {
		fail(apperr.Invalid("lat", "lat and lon go together"))
		return
	}
	if lat != nil {
		in.Near = &search.GeoPoint{Lat: *lat, Lon: *lon}
	}
	if first != nil {
		in.First = int(*first)
	}
	in.RadiusKm, in.From, in.To = radius, from, to
	res, err := a.Search.Search(r.Context(), in)
	if err != nil {
		fail(err)
		return
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	events, err := a.Catalog.EventsByIDs(r.Context(), ids)
	if err != nil {
		fail(err)
		return
	}
	type edge struct {
		Cursor     string    `json:"cursor"`
		DistanceKm *float64  `json:"distanceKm,omitempty"`
		Node       restEvent `json:"node"`
	}
	out := struct {
		Edges      []edge `json:"edges"`
		PageInfo   any    `json:"pageInfo"`
		TotalCount int    `json:"totalCount"`
		Facets     any    `json:"facets"`
	}{Edges: []edge{}, TotalCount: res.Total, Facets: map[string]any{"categories": res.Categories, "cities": res.Cities}}
	var end *string
	for _, h := range res.Hits {
		end = &h.Cursor
		if e, ok := events[h.ID]; ok {
			out.Edges = append(out.Edges, edge{Cursor: h.Cursor, DistanceKm: h.DistanceKm, Node: restEvent{
				ID: e.ID, Name: e.Name, Description: e.Description, Category: e.Category,
				StartsAt: e.StartsAt, EndsAt: e.EndsAt, VenueID: e.VenueID}})
		}
	}
	out.PageInfo = map[string]any{"hasNextPage": res.HasNext, "endCursor": end}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
