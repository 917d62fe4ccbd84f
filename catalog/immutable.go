package catalog

import (
	"context"
	"time"
)

// Venues (with their sections and seats), artists, an event's artists and
// an event's prices never change once created: store/ has no statement that
// updates or deletes them, and each is created in the one transaction that
// creates its parent. Once loaded, they are answered from memory (the
// last-good cache, whatever its age) without a query, so an event page or a
// page of search hits asks Postgres only for what can change (the event
// rows, availability), and the dataloaders answer them at once instead of
// waiting for a batch (the Cached* getters). Events are not in this list:
// a cancellation changes them; see fresh.
//
// An empty list (a venue not seen yet, or not yet on the replica) is never
// answered from memory: it is loaded again.
var immutable = map[string]bool{
	"VenuesByIDs": true, "ArtistsByIDs": true, "SectionsByIDs": true, "SeatsByIDs": true,
	"SectionsByVenueIDs": true, "SeatsBySectionIDs": true, "ArtistsByEventIDs": true, "PricesByEventIDs": true,
}

// fresh lists the kinds that can change and are answered from memory all
// the same, for how long after they were read. An event row changes only
// when the event is cancelled (store.CancelEvent, the one UPDATE of
// events): the instance that cancels forgets it at once (orders.Config.
// EventChanged), every other one when the relay announces the event's
// change (app/search.go), and a row is read again after
// EventRowsFreshFor whatever it heard, so a lost announcement, or a row
// read from a replica a moment behind, is not kept longer. Browsing may
// show an event's cancellation that late; holds, orders and payments
// read the event in their own transactions.
var fresh = map[string]time.Duration{"EventsByIDs": EventRowsFreshFor}

// EventRowsFreshFor is how long an event row is answered from memory.
const EventRowsFreshFor = 10 * time.Second

// ForgetEvents makes the next read of each event's row go to Postgres
// (the row stays the outage fallback, lastGood).
func (s *Service) ForgetEvents(eventIDs ...string) { s.stale.forget("EventsByIDs", eventIDs) }

// CachedEvent is the event if its row was read within EventRowsFreshFor
// and not forgotten since (no query).
func (s *Service) CachedEvent(id string) (Event, bool) {
	return cached[Event](s, "EventsByIDs", id, nil)
}

// cachedRows splits ids into the answers of an immutable or fresh kind
// already in memory and the ids still to load (all of them for other
// kinds).
func cachedRows[T any](s *Service, kind string, ids []string, usable func(T) bool) (map[string]T, []string) {
	if !immutable[kind] && fresh[kind] == 0 {
		return nil, ids
	}
	var hit map[string]T
	miss := ids[:0:0]
	for _, id := range ids {
		if v, ok := cached(s, kind, id, usable); ok {
			if hit == nil {
				hit = make(map[string]T, len(ids))
			}
			hit[id] = v
		} else {
			miss = append(miss, id)
		}
	}
	return hit, miss
}

func cached[T any](s *Service, kind, id string, usable func(T) bool) (T, bool) {
	var zero T
	var v any
	var ok bool
	switch {
	case immutable[kind]:
		v, ok = s.stale.peek(kind, id)
	case fresh[kind] > 0:
		v, ok = s.stale.within(kind, id, fresh[kind])
	}
	if !ok {
		return zero, false
	}
	t, ok := v.(T)
	if !ok || (usable != nil && !usable(t)) {
		return zero, false
	}
	return t, true
}

func nonEmpty[T any](xs []T) bool { return len(xs) > 0 }

// CachedVenue is the venue if it is in memory (no query).
func (s *Service) CachedVenue(id string) (Venue, bool) {
	return cached[Venue](s, "VenuesByIDs", id, nil)
}

// CachedArtist is the artist if it is in memory (no query).
func (s *Service) CachedArtist(id string) (Artist, bool) {
	return cached[Artist](s, "ArtistsByIDs", id, nil)
}

// CachedSection is the section if it is in memory (no query).
func (s *Service) CachedSection(id string) (Section, bool) {
	return cached[Section](s, "SectionsByIDs", id, nil)
}

// CachedSeat is the seat if it is in memory (no query).
func (s *Service) CachedSeat(id string) (Seat, bool) { return cached[Seat](s, "SeatsByIDs", id, nil) }

// CachedSectionsOfVenue are the venue's sections if they are in memory.
func (s *Service) CachedSectionsOfVenue(venueID string) ([]Section, bool) {
	return cached(s, "SectionsByVenueIDs", venueID, nonEmpty[Section])
}

// CachedSeatsOfSection are the section's seats if they are in memory.
func (s *Service) CachedSeatsOfSection(sectionID string) ([]Seat, bool) {
	return cached(s, "SeatsBySectionIDs", sectionID, nonEmpty[Seat])
}

// CachedArtistsOfEvent are the event's artists if they are in memory.
func (s *Service) CachedArtistsOfEvent(eventID string) ([]Artist, bool) {
	return cached(s, "ArtistsByEventIDs", eventID, nonEmpty[Artist])
}

// CachedPricesOfEvent are the event's prices if they are in memory.
func (s *Service) CachedPricesOfEvent(eventID string) ([]Price, bool) {
	return cached(s, "PricesByEventIDs", eventID, nonEmpty[Price])
}

// Warm loads into memory what an event page of each event reads from the
// catalog: its row (answered from memory for EventRowsFreshFor), its
// venue, the venue's sections, its artists, its prices and their sections
// (kept: immutable). app.Warm calls it before the instance takes traffic.
func (s *Service) Warm(ctx context.Context, eventIDs []string) error {
	const batch = 500
	for i := 0; i < len(eventIDs); i += batch {
		ids := eventIDs[i:min(i+batch, len(eventIDs))]
		evs, err := s.EventsByIDs(ctx, ids)
		if err != nil {
			return err
		}
		venues := map[string]bool{}
		for _, e := range evs {
			venues[e.VenueID] = true
		}
		vids := keys(venues)
		if _, err := s.VenuesByIDs(ctx, vids); err != nil {
			return err
		}
		if _, err := s.SectionsByVenueIDs(ctx, vids); err != nil {
			return err
		}
		if _, err := s.ArtistsByEventIDs(ctx, ids); err != nil {
			return err
		}
		prices, err := s.PricesByEventIDs(ctx, ids)
		if err != nil {
			return err
		}
		sections := map[string]bool{}
		for _, ps := range prices {
			for _, p := range ps {
				sections[p.SectionID] = true
			}
		}
		if _, err := s.SectionsByIDs(ctx, keys(sections)); err != nil {
			return err
		}
	}
	return nil
}
