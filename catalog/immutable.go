package catalog

// Venues (with their sections and seats), artists, an event's artists and
// an event's prices never change once created: store/ has no statement that
// updates or deletes them, and each is created in the one transaction that
// creates its parent. Once loaded, they are answered from memory (the
// last-good cache, whatever its age) without a query, so an event page or a
// page of search hits asks Postgres only for what can change (the event
// rows, availability), and the dataloaders answer them at once instead of
// waiting for a batch (the Cached* getters). Events are not in this list:
// a cancellation changes them.
//
// An empty list (a venue not seen yet, or not yet on the replica) is never
// answered from memory: it is loaded again.
var immutable = map[string]bool{
	"VenuesByIDs": true, "ArtistsByIDs": true, "SectionsByIDs": true, "SeatsByIDs": true,
	"SectionsByVenueIDs": true, "SeatsBySectionIDs": true, "ArtistsByEventIDs": true, "PricesByEventIDs": true,
}

// cachedRows splits ids into the answers of an immutable kind already in
// memory and the ids still to load (all of them for other kinds).
func cachedRows[T any](s *Service, kind string, ids []string, usable func(T) bool) (map[string]T, []string) {
	if !immutable[kind] {
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
	if !immutable[kind] {
		return zero, false
	}
	v, ok := s.stale.peek(kind, id)
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
