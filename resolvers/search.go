package resolvers

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"

	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/search"
)

// searchEvents runs searchEvents (search.Service.Events, as REST does).
func (r *Resolver) searchEvents(ctx context.Context, filter *model.EventSearchInput, first *int, after *string) (*model.EventConnection, error) {
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
	p, err := r.Search.Events(ctx, in)
	if err != nil {
		return nil, err
	}
	out := &model.EventConnection{Edges: make([]*model.EventEdge, len(p.Edges)), TotalCount: p.Total,
		PageInfo: &model.PageInfo{HasNextPage: p.HasNext, EndCursor: p.EndCursor()}}
	for i, e := range p.Edges {
		out.Edges[i] = &model.EventEdge{Cursor: e.Cursor, Node: toModelEvent(e.Event), DistanceKm: e.DistanceKm}
	}
	if p.FacetsShown {
		out.Facets = &model.SearchFacets{Categories: toModelFacets(p.Categories), Cities: toModelFacets(p.Cities)}
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
