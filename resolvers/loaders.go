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
	VenueByID           *Loader[string, catalog.Venue]
	EventByID           *Loader[string, catalog.Event]
	ArtistByID          *Loader[string, catalog.Artist]
	SectionByID         *Loader[string, catalog.Section]
	SeatByID            *Loader[string, catalog.Seat]
	SectionsByVenueID   *Loader[string, []catalog.Section]
	SeatsBySectionID    *Loader[string, []catalog.Seat]
	ArtistsByEventID    *Loader[string, []catalog.Artist]
	PricesByEventID     *Loader[string, []catalog.Price]
	AvailabilityByEvent *Loader[string, catalog.Availability]
}

// Loader is a dataloader that first asks the catalog's memory (cached: the
// rows that never change, catalog/immutable.go): a key found there is
// answered at once, without waiting loaderWait for a batch.
type Loader[K comparable, V any] struct {
	*dataloadgen.Loader[K, V]
	cached func(K) (V, bool)
}

// Load answers key from the catalog's memory, else through the batch.
func (l *Loader[K, V]) Load(ctx context.Context, key K) (V, error) {
	if l.cached != nil {
		if v, ok := l.cached(key); ok {
			return v, nil
		}
	}
	return l.Loader.Load(ctx, key)
}

func newLoader[V any](fetch func(context.Context, []string) (map[string]V, error), cached func(string) (V, bool), o []dataloadgen.Option) *Loader[string, V] {
	return &Loader[string, V]{Loader: dataloadgen.NewMappedLoader(fetch, o...), cached: cached}
}

// loaderWait is how long a loader collects keys before it queries: the
// sibling fields that ask for keys together (a page of events' venues) do
// so within microseconds, and every level of a response waits it once.
const loaderWait = time.Millisecond

// NewLoaders returns fresh loaders over the catalog; opts (e.g. a longer
// dataloadgen.WithWait in tests) apply after the defaults.
func NewLoaders(cat *catalog.Service, opts ...dataloadgen.Option) *Loaders {
	o := append([]dataloadgen.Option{dataloadgen.WithWait(loaderWait)}, opts...)
	return &Loaders{
		VenueByID:           newLoader(notFound("venue", cat.VenuesByIDs), cat.CachedVenue, o),
		EventByID:           newLoader(notFound("event", cat.EventsByIDs), cat.CachedEvent, o),
		ArtistByID:          newLoader(notFound("artist", cat.ArtistsByIDs), cat.CachedArtist, o),
		SectionByID:         newLoader(notFound("section", cat.SectionsByIDs), cat.CachedSection, o),
		SeatByID:            newLoader(notFound("seat", cat.SeatsByIDs), cat.CachedSeat, o),
		SectionsByVenueID:   newLoader(cat.SectionsByVenueIDs, cat.CachedSectionsOfVenue, o),
		SeatsBySectionID:    newLoader(cat.SeatsBySectionIDs, cat.CachedSeatsOfSection, o),
		ArtistsByEventID:    newLoader(cat.ArtistsByEventIDs, cat.CachedArtistsOfEvent, o),
		PricesByEventID:     newLoader(cat.PricesByEventIDs, cat.CachedPricesOfEvent, o),
		AvailabilityByEvent: newLoader(cat.AvailabilityByEventIDs, cat.CachedAvailability, o),
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
