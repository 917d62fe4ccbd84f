package search

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/catalog"
)

// EventLoader loads events by id from the catalog (authoritative). An id
// with no event is missing from the map.
type EventLoader func(ctx context.Context, ids []string) (map[string]catalog.Event, error)

// Page is one page of searchEvents, as both faces answer it: the engine's
// result, and its hits in order, each with the catalog's event.
type Page struct {
	Result
	// Edges are the hits whose event still exists, in the engine's order
	// (an event deleted since it was indexed is left out of the page).
	Edges []Edge
}

// Edge is one hit of a page with its event.
type Edge struct {
	Hit
	Event catalog.Event
}

// EndCursor is the cursor of the page's last hit (nil when it has none).
func (p Page) EndCursor() *string {
	if n := len(p.Hits); n > 0 {
		return &p.Hits[n-1].Cursor
	}
	return nil
}

// Events runs searchEvents: the projection picks and orders the events
// (Search), their details come from the catalog (s.Catalog, the
// authoritative rows). The events of a page are kept for as long as a
// search result (CacheTTL; search may lag by design), so a repeated search
// does not wait for Postgres, the shared bottleneck of a busy sale.
func (s *Service) Events(ctx context.Context, in Input) (Page, error) {
	if s == nil || s.Catalog == nil {
		return Page{}, fmt.Errorf("search not configured: %w", apperr.ErrServiceUnavailable)
	}
	res, err := s.Search(ctx, in)
	if err != nil {
		return Page{}, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	events, err := s.pageEvents(ctx, ids)
	if err != nil {
		return Page{}, err
	}
	p := Page{Result: res, Edges: make([]Edge, 0, len(res.Hits))}
	for _, h := range res.Hits {
		if e, ok := events[h.ID]; ok {
			p.Edges = append(p.Edges, Edge{Hit: h, Event: e})
		}
	}
	return p, nil
}

// pageEvents loads the events of a page (cached unless CacheTTL < 0).
func (s *Service) pageEvents(ctx context.Context, ids []string) (map[string]catalog.Event, error) {
	if s.CacheTTL < 0 || len(ids) == 0 {
		return s.Catalog(ctx, ids)
	}
	s.pagesOnce.Do(func() {
		ttl := s.CacheTTL
		if ttl == 0 {
			ttl = time.Second
		}
		s.pages = NewCache[map[string]catalog.Event](ttl, 2*time.Second)
	})
	return s.pages.Get(ctx, strings.Join(ids, ","), func(ctx context.Context) (map[string]catalog.Event, error) {
		return s.Catalog(ctx, ids)
	})
}
