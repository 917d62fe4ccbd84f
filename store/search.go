package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SearchDoc is everything the search projection indexes about one event.
type SearchDoc struct {
	ID          string    `db:"id"`
	Name        string    `db:"name"`
	Description string    `db:"description"`
	Category    string    `db:"category"`
	StartsAt    time.Time `db:"starts_at"`
	Version     int64     `db:"version"`
	UpdatedAt   time.Time `db:"updated_at"`
	VenueName   string    `db:"venue_name"`
	City        string    `db:"city"`
	Country     string    `db:"country"`
	Lat         float64   `db:"lat"`
	Lon         float64   `db:"lon"`
	Artists     []string  `db:"artists"`
	MinPrice    *int64    `db:"min_price"`
	MaxPrice    *int64    `db:"max_price"`
	Currency    *string   `db:"currency"`
}

// SearchVersion is the current version of one event.
type SearchVersion struct {
	ID      string `db:"id"`
	Version int64  `db:"version"`
}

const (
	searchDocSelect = `SELECT e.id, e.name, e.description, e.category, e.starts_at,
	e.version, e.updated_at,
	v.name AS venue_name, v.city, v.country, v.lat, v.lon,
	COALESCE((SELECT array_agg(a.name ORDER BY ea.position) FROM event_artists ea
		JOIN artists a ON a.id = ea.artist_id WHERE ea.event_id = e.id), '{}') AS artists,
	p.min_price, p.max_price, p.currency
FROM events e
JOIN venues v ON v.id = e.venue_id
LEFT JOIN LATERAL (SELECT min(amount) AS min_price, max(amount) AS max_price, min(currency) AS currency
	FROM event_prices WHERE event_id = e.id) p ON true`

	sqlSearchDocsByIDs = searchDocSelect + ` WHERE e.id = ANY($1::uuid[])`
	sqlSearchDocsPage  = searchDocSelect + `
WHERE ($1::uuid IS NULL OR e.id > $1::uuid) ORDER BY e.id LIMIT $2`
	sqlSearchVersions = `SELECT id, version FROM events`
)

// SearchDocsByIDs loads the search documents of the events that exist among ids.
func (s *Store) SearchDocsByIDs(ctx context.Context, ids []string) ([]SearchDoc, error) {
	return searchRows[SearchDoc](ctx, s, "search docs by ids", sqlSearchDocsByIDs, ids)
}

// SearchDocsPage loads up to limit search documents in id order after
// afterID ("" for the first page), for full rebuilds.
func (s *Store) SearchDocsPage(ctx context.Context, afterID string, limit int) ([]SearchDoc, error) {
	var after any
	if afterID != "" {
		after = afterID
	}
	return searchRows[SearchDoc](ctx, s, "search docs page", sqlSearchDocsPage, after, limit)
}

// SearchVersions returns the current version of every event.
func (s *Store) SearchVersions(ctx context.Context) ([]SearchVersion, error) {
	return searchRows[SearchVersion](ctx, s, "search versions", sqlSearchVersions)
}

// searchRows runs a query and scans every row into T by column name.
func searchRows[T any](ctx context.Context, s *Store, op, sql string, args ...any) ([]T, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	return out, wrap(op, err)
}
