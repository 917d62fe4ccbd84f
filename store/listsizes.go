package store

import "context"

// ListSizes are the lengths of a venue's lists that a GraphQL query can
// ask for: its sections, all its seats (GA units included, as capacity) and
// its largest section. The complexity limit prices seat lists by them.
type ListSizes struct {
	Sections, Seats, LargestSection int
}

const sqlLargestListSizes = `
SELECT coalesce(max(n), 0)::int, coalesce(max(total), 0)::int, coalesce(max(largest), 0)::int
FROM (SELECT count(*) AS n, sum(capacity) AS total, max(capacity) AS largest FROM sections GROUP BY venue_id) v`

// LargestListSizes are the largest list sizes of any venue.
func (s *Store) LargestListSizes(ctx context.Context) (ListSizes, error) {
	var z ListSizes
	err := s.db.QueryRow(ctx, sqlLargestListSizes).Scan(&z.Sections, &z.Seats, &z.LargestSection)
	return z, mapErr(err)
}
