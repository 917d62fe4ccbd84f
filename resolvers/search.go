package resolvers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/search"
)

// searchEvents runs searchEvents: the search projection picks and orders the
// events; their details are loaded from Postgres by id (authoritative; kept
// with the page for a second, see pageNodes), and an event deleted since it
// was indexed is left out of the page.
func (r *Resolver) searchEvents(ctx context.Context, filter *model.EventSearchInput, first *int, after *string) (*model.EventConnection, error) {
	if r.Search == nil {
		return nil, fmt.Errorf("search not configured: %w", apperr.ErrServiceUnavailable)
	}
	in := search.Input{First: orDefault(first, 20), After: orZero(after),
		Facets: slices.Contains(graphql.CollectAllFields(ctx), "facets")}
	if f := filter; f != nil {
		in.Text, in.City, in.Categories = orZero(f.Text), orZero(f.City), f.Categories
		in.RadiusKm, in.From, in.To = f.RadiusKm, f.From, f.To
		if f.Near != nil {
			in.Near = &search.GeoPoint{Lat: f.Near.Lat, Lon: f.Near.Lon}
		}
		if f.Sort != nil {
			in.Sort = search.Sort(*f.Sort)
		}
	}
	res, err := r.Search.Search(ctx, in)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	events, err := r.searchNodes(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := &model.EventConnection{Edges: []*model.EventEdge{}, TotalCount: res.Total,
		PageInfo: &model.PageInfo{HasNextPage: res.HasNext}}
	for _, h := range res.Hits {
		if e, ok := events[h.ID]; ok {
			out.Edges = append(out.Edges, &model.EventEdge{Cursor: h.Cursor, Node: toModelEvent(e), DistanceKm: h.DistanceKm})
		}
	}
	if n := len(res.Hits); n > 0 {
		out.PageInfo.EndCursor = &res.Hits[n-1].Cursor
	}
	if res.FacetsShown {
		out.Facets = &model.SearchFacets{Categories: toModelFacets(res.Categories), Cities: toModelFacets(res.Cities)}
	}
	return out, nil
}

// pageNodes caches the events of a page of search hits for a second, like
// the page itself (Service.CacheTTL; search may lag by design), so a
// repeated search does not wait for Postgres, the shared bottleneck of a
// busy sale. Keys include the catalog service: Apps in one process (tests)
// never share rows.
var pageNodes = search.NewCache[map[string]catalog.Event](time.Second, 2*time.Second)

// searchNodes loads the events of a page (cached unless search caching is
// off, Service.CacheTTL < 0).
func (r *Resolver) searchNodes(ctx context.Context, ids []string) (map[string]catalog.Event, error) {
	if r.Search.CacheTTL < 0 {
		return r.Catalog.EventsByIDs(ctx, ids)
	}
	key := fmt.Sprintf("%p|%s", r.Catalog, strings.Join(ids, ","))
	return pageNodes.Get(ctx, key, func(ctx context.Context) (map[string]catalog.Event, error) {
		return r.Catalog.EventsByIDs(ctx, ids)
	})
}

func toModelFacets(fs []search.FacetCount) []*model.FacetCount {
	out := make([]*model.FacetCount, len(fs))
	for i, f := range fs {
		out[i] = &model.FacetCount{Value: f.Value, Count: f.Count}
	}
	return out
}
