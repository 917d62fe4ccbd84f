package resolvers

import (
	"context"
	"errors"
	"fmt"
	"github.com/99designs/gqlgen/graphql"
	"net/http"
	"sync"
	"time"

	"github.com/vikstrous/dataloadgen"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/catalog"
)

// Loaders batch the catalog reads of one request: every key asked for while
// a GraphQL response is being resolved goes into one query per loader.
// Created per request by LoaderMiddleware (caches live for one request);
// reach them with LoadersFrom(ctx).
//
// A by-id loader answers apperr.ErrNotFound (wrapped) for an unknown id; the
// by-parent loaders answer an empty list.
type Loaders struct {
	VenueByID           *dataloadgen.Loader[string, catalog.Venue]
	EventByID           *dataloadgen.Loader[string, catalog.Event]
	ArtistByID          *dataloadgen.Loader[string, catalog.Artist]
	SectionByID         *dataloadgen.Loader[string, catalog.Section]
	SeatByID            *dataloadgen.Loader[string, catalog.Seat]
	SectionsByVenueID   *dataloadgen.Loader[string, []catalog.Section]
	SeatsBySectionID    *dataloadgen.Loader[string, []catalog.Seat]
	ArtistsByEventID    *dataloadgen.Loader[string, []catalog.Artist]
	PricesByEventID     *dataloadgen.Loader[string, []catalog.Price]
	AvailabilityByEvent *dataloadgen.Loader[string, catalog.Availability]
}

// loaderWait is how long a loader collects keys before it queries.
const loaderWait = 5 * time.Millisecond

// NewLoaders returns fresh loaders over the catalog; opts (e.g. a longer
// dataloadgen.WithWait in tests) apply after the defaults.
func NewLoaders(cat *catalog.Service, opts ...dataloadgen.Option) *Loaders {
	o := append([]dataloadgen.Option{dataloadgen.WithWait(loaderWait)}, opts...)
	return &Loaders{
		VenueByID:           dataloadgen.NewMappedLoader(notFound("venue", cat.VenuesByIDs), o...),
		EventByID:           dataloadgen.NewMappedLoader(notFound("event", cat.EventsByIDs), o...),
		ArtistByID:          dataloadgen.NewMappedLoader(notFound("artist", cat.ArtistsByIDs), o...),
		SectionByID:         dataloadgen.NewMappedLoader(notFound("section", cat.SectionsByIDs), o...),
		SeatByID:            dataloadgen.NewMappedLoader(notFound("seat", cat.SeatsByIDs), o...),
		SectionsByVenueID:   dataloadgen.NewMappedLoader(cat.SectionsByVenueIDs, o...),
		SeatsBySectionID:    dataloadgen.NewMappedLoader(cat.SeatsBySectionIDs, o...),
		ArtistsByEventID:    dataloadgen.NewMappedLoader(cat.ArtistsByEventIDs, o...),
		PricesByEventID:     dataloadgen.NewMappedLoader(cat.PricesByEventIDs, o...),
		AvailabilityByEvent: dataloadgen.NewMappedLoader(cat.AvailabilityByEventIDs, o...),
	}
}

// notFound makes the keys missing from the map fail with apperr.ErrNotFound
// instead of dataloadgen's own sentinel.
func notFound[T any](what string, fetch func(context.Context, []string) (map[string]T, error)) func(context.Context, []string) (map[string]T, error) {
	return func(ctx context.Context, keys []string) (map[string]T, error) {
		m, err := fetch(ctx, keys)
		if err != nil {
			return nil, err
		}
		var missing dataloadgen.MappedFetchError[string]
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				if missing == nil {
					missing = dataloadgen.MappedFetchError[string]{}
				}
				missing[k] = fmt.Errorf("%s %s: %w", what, k, apperr.ErrNotFound)
			}
		}
		if missing != nil {
			return m, missing
		}
		return m, nil
	}
}

type loadersKey struct{}

// WithLoaders returns ctx carrying l (for tests and non-HTTP callers).
func WithLoaders(ctx context.Context, l *Loaders) context.Context {
	return context.WithValue(ctx, loadersKey{}, &loaderSlot{make: func() *Loaders { return l }})
}

// loaderSlot makes a request's loaders on first use: most requests that
// live long (a WebSocket connection of seat map viewers) never load through
// them, and ten loaders each is a kilobyte per connection.
type loaderSlot struct {
	once sync.Once
	make func() *Loaders
	l    *Loaders
}

// LoadersFrom returns the request's loaders. Without LoaderMiddleware it
// panics: that is a wiring bug.
func LoadersFrom(ctx context.Context) *Loaders {
	slot, ok := ctx.Value(loadersKey{}).(*loaderSlot)
	if !ok {
		panic("resolvers: no loaders in context (LoaderMiddleware missing)")
	}
	slot.once.Do(func() { slot.l = slot.make() })
	return slot.l
}

// LoaderMiddleware gives every request its own Loaders (opts as in NewLoaders).
func LoaderMiddleware(cat *catalog.Service, opts ...dataloadgen.Option) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			slot := &loaderSlot{make: func() *Loaders { return NewLoaders(cat, opts...) }}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), loadersKey{}, slot)))
		})
	}
}

// LoaderOperations gives every GraphQL operation loaders of its own (made
// on first use), for srv.AroundOperations: LoaderMiddleware's are per HTTP
// request, and a WebSocket connection is one request that runs many
// operations, each of which must read fresh data, not the cache of the
// ones before it.
func LoaderOperations(cat *catalog.Service, opts ...dataloadgen.Option) graphql.OperationMiddleware {
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		slot := &loaderSlot{make: func() *Loaders { return NewLoaders(cat, opts...) }}
		return next(context.WithValue(ctx, loadersKey{}, slot))
	}
}

// isNotFound reports whether err means the thing does not exist.
func isNotFound(err error) bool {
	return errors.Is(err, apperr.ErrNotFound) || errors.Is(err, dataloadgen.ErrNotFound)
}
