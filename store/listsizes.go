package store

import "context"

// ListSizes are the lengths of a venue's lists that a GraphQL query can
// ask for: its sections, all its seats (GA units included, as capacity) and
// its largest section. The complexity limit prices seat lists by them.
type ListSizes struct {
	Sections, Seats, LargestSection int
}

const sqlVenueListSizes = `
SELECT count(*)::int, coalesce(sum(capacity), 0)::int, coalesce(max(capacity), 0)::int
FROM sections WHERE venue_id = $1::uuid`

const sqlEventListSizes = `
SELECT count(*)::int, coalesce(sum(s.capacity), 0)::int, coalesce(max(s.capacity), 0)::int
FROM events e JOIN sections s ON s.venue_id = e.venue_id WHERE e.id = $1::uuid`

const sqlLargestListSizes = `
SELECT coalesce(max(n), 0)::int, coalesce(max(total), 0)::int, coalesce(max(largest), 0)::int
FROM (SELECT count(*) AS n, sum(capacity) AS total, max(capacity) AS largest FROM sections GROUP BY venue_id) v`

// VenueListSizes are the list sizes of a venue (zero when there is none).
func (s *Store) VenueListSizes(ctx context.Context, venueID string) (ListSizes, error) {
	var z ListSizes
	err := s.db.QueryRow(ctx, sqlVenueListSizes, venueID).Scan(&z.Sections, &z.Seats, &z.LargestSection)
	return z, mapErr(err)
}

// EventListSizes are the list sizes of an event's venue (zero when there is
// no such event).
func (s *Store) EventListSizes(ctx context.Context, eventID string) (ListSizes, error) {
	var z ListSizes
	err := s.db.QueryRow(ctx, sqlEventListSizes, eventID).Scan(&z.Sections, &z.Seats, &z.LargestSection)
	return z, mapErr(err)
}

// LargestListSizes are the largest list sizes of any venue.
func (s *Store) LargestListSizes(ctx context.Context) (ListSizes, error) {
	var z ListSizes
	err := s.db.QueryRow(ctx, sqlLargestListSizes).Scan(&z.Sections, &z.Seats, &z.LargestSection)
	return z, mapErr(err)
}
