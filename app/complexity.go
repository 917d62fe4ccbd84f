package app

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/graph"
	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/store"
)

// Costs of list fields for the complexity limit (MaxQueryComplexity). By
// default gqlgen counts every field as 1 whatever it returns. Here a
// paginated list costs its page size times what is selected in each item,
// and the unpaginated lists of a venue cost by their real length: a venue's
// sections by its number of sections, a seat map's seats by the event's
// seat count (SeatsPerCostUnit seats cost what one item of a page costs),
// a section's seats by the capacity of the venue's largest section. Under
// event(id), venue(id) and seatMapUpdates(eventId) those are the sizes of
// that event or venue; anywhere else (a page of search results) the largest
// of any venue, and never less than the floors below.
const (
	defaultPage = 20 // the contract's default `first`
	// SeatsPerCostUnit is how many seats of a list cost one unit times the
	// fields selected per seat: an event page of a 20,000-seat venue (its
	// sections' seats and its seat map) costs about 1,100.
	SeatsPerCostUnit = 200
	floorSections    = 5    // sections of a venue not known in advance
	floorSeats       = 4000 // seats of a venue not known in advance
)

func page(child int, first *int) int {
	n := defaultPage
	if first != nil && *first > 0 {
		n = *first
	}
	return safeMul(n, child) + 1
}

// costModel is the schema's cost model for the paginated fields (the seat
// and section lists are priced by costWalker, which knows their scope).
func costModel() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	c.Query.SearchEvents = func(child int, _ *model.EventSearchInput, first *int, _ *string) int { return page(child, first) }
	c.Query.Events = func(child int, first *int, _, _, _ *string) int { return page(child, first) }
	c.Query.MyOrders = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Artist.Events = func(child int, first *int, _ *string) int { return page(child, first) }
	return c
}

// listSizer looks up the list sizes of events and venues from the
// catalog (an event's venue and a venue's sections never change: the
// catalog answers them from memory once read, and reads the event row
// through the replica, so the row is then in memory for the resolver that
// answers event(id)), and the largest of any venue from the primary,
// cached for a minute.
type listSizer struct {
	cat    *catalog.Service
	st     *store.Store
	cache  *expirable.LRU[string, store.ListSizes]
	mu     sync.Mutex
	lastOK store.ListSizes // the last largest sizes read, if the database is away
}

func newListSizer(cat *catalog.Service, st *store.Store) *listSizer {
	return &listSizer{cat: cat, st: st, cache: expirable.NewLRU[string, store.ListSizes](10000, nil, time.Minute)}
}

func (l *listSizer) get(ctx context.Context, key string, read func(context.Context) (store.ListSizes, error)) store.ListSizes {
	if z, ok := l.cache.Get(key); ok {
		return z
	}
	z, err := read(ctx)
	if errors.Is(err, errUnknown) {
		return store.ListSizes{} // nothing to return (yet: not remembered)
	}
	if err != nil {
		// The database is away: price as the largest venue seen (the
		// operation will fail anyway if it needs the database).
		l.mu.Lock()
		z = l.lastOK
		l.mu.Unlock()
		return largest(z)
	}
	l.cache.Add(key, z)
	return z
}

func (l *listSizer) event(ctx context.Context, id string) store.ListSizes {
	if l == nil || l.cat == nil {
		return largest(store.ListSizes{})
	}
	if _, err := uuid.Parse(id); err != nil {
		return store.ListSizes{} // no such event: nothing to return
	}
	return l.get(ctx, "e:"+id, func(ctx context.Context) (store.ListSizes, error) {
		e, err := l.cat.GetEvent(ctx, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return store.ListSizes{}, errUnknown
		}
		if err != nil {
			return store.ListSizes{}, err
		}
		return l.venueSizes(ctx, e.VenueID)
	})
}

// errUnknown is an event or a venue the catalog does not know (a venue
// without sections): its sizes are zero and not cached (the replica may not
// have it yet).
var errUnknown = errors.New("no such event or venue")

func (l *listSizer) venue(ctx context.Context, id string) store.ListSizes {
	if l == nil || l.cat == nil {
		return largest(store.ListSizes{})
	}
	if _, err := uuid.Parse(id); err != nil {
		return store.ListSizes{}
	}
	return l.get(ctx, "v:"+id, func(ctx context.Context) (store.ListSizes, error) { return l.venueSizes(ctx, id) })
}

// venueSizes adds up the venue's sections (none: errUnknown).
func (l *listSizer) venueSizes(ctx context.Context, venueID string) (store.ListSizes, error) {
	m, err := l.cat.SectionsByVenueIDs(ctx, []string{venueID})
	if err != nil {
		return store.ListSizes{}, err
	}
	if len(m[venueID]) == 0 {
		return store.ListSizes{}, errUnknown
	}
	var z store.ListSizes
	for _, s := range m[venueID] {
		z.Sections++
		z.Seats += s.Capacity
		z.LargestSection = max(z.LargestSection, s.Capacity)
	}
	return z, nil
}

// anyVenue is the scope of a list whose venue is not known in advance.
func (l *listSizer) anyVenue(ctx context.Context) store.ListSizes {
	if l == nil || l.st == nil {
		return largest(store.ListSizes{})
	}
	return largest(l.get(ctx, "largest", func(ctx context.Context) (store.ListSizes, error) {
		z, err := l.st.LargestListSizes(ctx)
		if err == nil {
			l.mu.Lock()
			l.lastOK = z
			l.mu.Unlock()
		}
		return z, err
	}))
}

func largest(z store.ListSizes) store.ListSizes {
	z.Sections = max(z.Sections, floorSections)
	z.Seats = max(z.Seats, floorSeats)
	z.LargestSection = max(z.LargestSection, floorSeats)
	return z
}

// costWalker is gqlgen's complexity.Calculate with a scope: the list sizes
// of the venue whose lists the fields below return.
type costWalker struct {
	es    graphql.ExecutableSchema
	vars  map[string]any
	sizes *listSizer
	// anyVenue is looked up once per operation, when first needed.
	anyVenue *store.ListSizes
}

func (w *costWalker) unknown(ctx context.Context) store.ListSizes {
	if w.anyVenue == nil {
		z := w.sizes.anyVenue(ctx)
		w.anyVenue = &z
	}
	return *w.anyVenue
}

// seatUnits prices n seats.
func seatUnits(n int) int { return max(1, (n+SeatsPerCostUnit-1)/SeatsPerCostUnit) }

func (w *costWalker) set(ctx context.Context, set ast.SelectionSet, scope *store.ListSizes) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Definition == nil || s.ObjectDefinition == nil || s.Name == "__schema" || s.Name == "__type" {
				continue // introspection: its depth is bounded by validation
			}
			total = safeAdd(total, w.field(ctx, s, scope))
		case *ast.FragmentSpread:
			if s.Definition != nil {
				total = safeAdd(total, w.set(ctx, s.Definition.SelectionSet, scope))
			}
		case *ast.InlineFragment:
			total = safeAdd(total, w.set(ctx, s.SelectionSet, scope))
		}
	}
	return total
}

func (w *costWalker) field(ctx context.Context, f *ast.Field, scope *store.ListSizes) int {
	key := f.ObjectDefinition.Name + "." + f.Name
	var args map[string]any
	inner := scope
	switch key {
	case "Query.event", "Query.venue", "Subscription.seatMapUpdates":
		args = f.ArgumentMap(w.vars)
		id, _ := args["id"].(string)
		var z store.ListSizes
		switch key {
		case "Query.event":
			z = w.sizes.event(ctx, id)
		case "Query.venue":
			z = w.sizes.venue(ctx, id)
		default:
			id, _ = args["eventId"].(string)
			z = w.sizes.event(ctx, id)
		}
		inner = &z
	}
	lists := func() store.ListSizes {
		if scope != nil {
			return *scope
		}
		return w.unknown(ctx)
	}
	child := w.set(ctx, f.SelectionSet, inner)
	switch key {
	case "SeatMap.seats", "SeatMapUpdate.seats":
		return safeMul(seatUnits(lists().Seats), child) + 1
	case "Section.seats":
		return safeMul(seatUnits(lists().LargestSection), child) + 1
	case "Venue.sections":
		return safeMul(max(1, lists().Sections), child) + 1
	}
	if args == nil {
		args = f.ArgumentMap(w.vars)
	}
	if c, ok := w.es.Complexity(ctx, f.ObjectDefinition.Name, f.Name, child, args); ok {
		return c
	}
	return safeAdd(child, 1)
}

func safeAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

func safeMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}
