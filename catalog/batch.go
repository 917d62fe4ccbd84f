package catalog

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/store"
)

// Batch getters for dataloaders: one query per call whatever the number of
// keys. Ids that are not UUIDs, or do not exist, are absent from the maps
// returned by the by-id getters; the by-parent getters return an entry
// (possibly empty) for every valid key.

// VenuesByIDs returns venues by id.
func (s *Service) VenuesByIDs(ctx context.Context, ids []string) (map[string]Venue, error) {
	return byID(ctx, s, "VenuesByIDs", ids, onCatalog(s, (*store.Store).VenuesByIDs), func(v Venue) string { return v.ID })
}

// EventsByIDs returns events by id.
func (s *Service) EventsByIDs(ctx context.Context, ids []string) (map[string]Event, error) {
	return byID(ctx, s, "EventsByIDs", ids, onCatalog(s, (*store.Store).EventsByIDs), func(e Event) string { return e.ID })
}

// ArtistsByIDs returns artists by id.
func (s *Service) ArtistsByIDs(ctx context.Context, ids []string) (map[string]Artist, error) {
	return byID(ctx, s, "ArtistsByIDs", ids, onCatalog(s, (*store.Store).ArtistsByIDs), func(a Artist) string { return a.ID })
}

// SectionsByIDs returns sections by id.
func (s *Service) SectionsByIDs(ctx context.Context, ids []string) (map[string]Section, error) {
	return byID(ctx, s, "SectionsByIDs", ids, onCatalog(s, (*store.Store).SectionsByIDs), func(c Section) string { return c.ID })
}

// SeatsByIDs returns seats by id.
func (s *Service) SeatsByIDs(ctx context.Context, ids []string) (map[string]Seat, error) {
	return byID(ctx, s, "SeatsByIDs", ids, onCatalog(s, (*store.Store).SeatsByIDs), func(c Seat) string { return c.ID })
}

// SectionsByVenueIDs returns the sections of each venue in position order.
func (s *Service) SectionsByVenueIDs(ctx context.Context, venueIDs []string) (map[string][]Section, error) {
	return byParent(ctx, s, "SectionsByVenueIDs", venueIDs, onCatalog(s, (*store.Store).SectionsByVenueIDs), func(c Section) (string, Section) { return c.VenueID, c })
}

// SeatsBySectionIDs returns the seats of each section in row then number order.
func (s *Service) SeatsBySectionIDs(ctx context.Context, sectionIDs []string) (map[string][]Seat, error) {
	return byParent(ctx, s, "SeatsBySectionIDs", sectionIDs, onCatalog(s, (*store.Store).SeatsBySectionIDs), func(c Seat) (string, Seat) { return c.SectionID, c })
}

// ArtistsByEventIDs returns the artists of each event in billing order.
func (s *Service) ArtistsByEventIDs(ctx context.Context, eventIDs []string) (map[string][]Artist, error) {
	return byParent(ctx, s, "ArtistsByEventIDs", eventIDs, onCatalog(s, (*store.Store).ArtistsByEventIDs), func(a store.EventArtist) (string, Artist) { return a.EventID, a.Artist })
}

// PricesByEventIDs returns the prices of each event in section order.
func (s *Service) PricesByEventIDs(ctx context.Context, eventIDs []string) (map[string][]Price, error) {
	return byParent(ctx, s, "PricesByEventIDs", eventIDs, onCatalog(s, (*store.Store).PricesByEventIDs), func(p Price) (string, Price) { return p.EventID, p })
}

// AvailabilityByEventIDs counts the inventory of each event (zero counts for
// an event without inventory). With live counts (UseLiveCounts) an event
// whose live map this instance holds up to date is counted off it, and so
// is a lone event (an event page: the map its page shows is loaded once,
// for both); the rest are counted in Postgres, in one query.
func (s *Service) AvailabilityByEventIDs(ctx context.Context, eventIDs []string) (map[string]Availability, error) {
	ids := validUUIDs(eventIDs)
	out := make(map[string]Availability, len(ids))
	for _, id := range ids {
		out[id] = Availability{EventID: id}
	}
	if s.live != nil {
		ids = s.liveAvailability(ctx, ids, out)
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := store.ReadLive(s.reads, func(st *store.Store) ([]Availability, error) {
		return st.InventoryAvailability(ctx, ids)
	})
	if err != nil {
		if fallback(err) {
			if m, ok := staleMap[Availability](&s.stale, "availability", ids); ok {
				return m, nil
			}
		}
		return nil, fmt.Errorf("availability: %w", err)
	}
	for _, a := range rows {
		out[a.EventID] = a
	}
	for _, id := range ids {
		s.stale.put("availability", id, out[id])
	}
	return out, nil
}

// LiveCounts counts an event's units off its live seat map (the seat map
// service, adapted by the app): Counts loads the map when it must,
// CachedCounts only answers from a map held and up to date. ok false: the
// map cannot tell, count in Postgres.
type LiveCounts interface {
	Counts(ctx context.Context, eventID string) (a Availability, ok bool, err error)
	CachedCounts(eventID string) (Availability, bool)
}

// UseLiveCounts makes availability read the live seat map's counts (see
// AvailabilityByEventIDs). Call it before use.
func (s *Service) UseLiveCounts(l LiveCounts) { s.live = l }

// CachedAvailability answers from a live map held and up to date (for the
// request loaders: no batch wait); false without one.
func (s *Service) CachedAvailability(eventID string) (Availability, bool) {
	if s.live == nil {
		return Availability{}, false
	}
	return s.live.CachedCounts(eventID)
}

// liveAvailability fills out with the events live counts can answer and
// returns the others.
func (s *Service) liveAvailability(ctx context.Context, ids []string, out map[string]Availability) []string {
	if len(ids) == 1 {
		if a, ok, err := s.live.Counts(ctx, ids[0]); err == nil && ok {
			out[ids[0]] = a
			return nil
		}
		return ids
	}
	rest := ids[:0:0]
	for _, id := range ids {
		if a, ok := s.live.CachedCounts(id); ok {
			out[id] = a
		} else {
			rest = append(rest, id)
		}
	}
	return rest
}

// byID loads rows by id (those of an immutable kind already in memory are
// not loaded again: immutable.go); while Postgres cannot be reached it
// answers from the last good rows (lastGood) when it has every id.
func byID[T any](ctx context.Context, s *Service, kind string, ids []string, load func(context.Context, []string) ([]T, error), key func(T) string) (map[string]T, error) {
	ids = validUUIDs(ids)
	out, ids := cachedRows[T](s, kind, ids, nil)
	if out == nil {
		out = make(map[string]T, len(ids))
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := load(ctx, ids)
	if err != nil {
		if fallback(err) {
			if m, ok := staleMap[T](&s.stale, kind, ids); ok {
				maps.Copy(out, m)
				return out, nil
			}
		}
		return nil, err
	}
	for _, r := range rows {
		out[key(r)] = r
		s.stale.put(kind, key(r), r)
	}
	return out, nil
}

// byParent loads the children of each id; like byID it falls back to the
// last good answer of every id.
func byParent[R, T any](ctx context.Context, s *Service, kind string, ids []string, load func(context.Context, []string) ([]R, error), split func(R) (string, T)) (map[string][]T, error) {
	ids = validUUIDs(ids)
	out, ids := cachedRows(s, kind, ids, nonEmpty[T])
	if out == nil {
		out = make(map[string][]T, len(ids))
	}
	for _, id := range ids {
		out[id] = []T{}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := load(ctx, ids)
	if err != nil {
		if fallback(err) {
			if m, ok := staleMap[[]T](&s.stale, kind, ids); ok {
				maps.Copy(out, m)
				return out, nil
			}
		}
		return nil, err
	}
	for _, r := range rows {
		k, v := split(r)
		out[k] = append(out[k], v)
	}
	for _, id := range ids {
		s.stale.put(kind, id, out[id])
	}
	return out, nil
}

// validUUID reports whether id is a UUID in canonical form (as the database
// prints it, so that map keys match).
func validUUID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

func validUUIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if validUUID(id) {
			out = append(out, id)
		}
	}
	return out
}

// Cursors are opaque: base64url of "<starts_at RFC 3339 nano>|<id>".
func encodeCursor(c store.EventCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.StartsAt.UTC().Format(time.RFC3339Nano) + "|" + c.ID))
}

func decodeCursor(s string) (store.EventCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.EventCursor{}, err
	}
	at, id, ok := strings.Cut(string(b), "|")
	if !ok || !validUUID(id) {
		return store.EventCursor{}, errors.New("bad cursor")
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return store.EventCursor{}, err
	}
	return store.EventCursor{StartsAt: t, ID: id}, nil
}
