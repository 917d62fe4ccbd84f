package resolvers

import (
	"context"
	"fmt"
	"slices"

	"github.com/99designs/gqlgen/graphql"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/search"
)

// searchEvents runs searchEvents: the search projection picks and orders the
// events; their details are loaded from Postgres by id (authoritative), and
// an event deleted since it was indexed is left out of the page.
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
	events, err := r.Catalog.EventsByIDs(ctx, ids)
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

func toModelFacets(fs []search.FacetCount) []*model.FacetCount {
	out := make([]*model.FacetCount, len(fs))
	for i, f := range fs {
		out[i] = &model.FacetCount{Value: f.Value, Count: f.Count}
	}
	return out
}
