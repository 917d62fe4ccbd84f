package store

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// The Postgres full-text baseline of the search benchmark (bench/search):
// what a team might run instead of a search engine, built the way it should
// be: a denormalised search table (one row per event with its venue's city
// and position and a stored, weighted tsvector of name, artists, city,
// venue and description, as triggers would maintain it), GIN on the
// tsvector and b-trees for the filters and the date order. Not used by the
// product.
const (
	sqlBaselineFunc = `CREATE OR REPLACE FUNCTION search_unaccent(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$ SELECT public.unaccent('public.unaccent'::regdictionary, $1) $$`
	sqlBaselineTable = `CREATE TABLE IF NOT EXISTS search_baseline AS
SELECT e.id, e.starts_at, e.category, v.city, lower(search_unaccent(v.city)) AS city_key, v.lat, v.lon,
	setweight(to_tsvector('simple', search_unaccent(e.name)), 'A') ||
	setweight(to_tsvector('simple', search_unaccent(COALESCE((SELECT string_agg(a.name, ' ') FROM event_artists ea
		JOIN artists a ON a.id = ea.artist_id WHERE ea.event_id = e.id), ''))), 'A') ||
	setweight(to_tsvector('simple', search_unaccent(v.city)), 'B') ||
	setweight(to_tsvector('simple', search_unaccent(v.name)), 'C') ||
	setweight(to_tsvector('simple', search_unaccent(e.description)), 'D') AS tsv
FROM events e JOIN venues v ON v.id = e.venue_id`
	baselineDistance = `(12742 * asin(sqrt(power(sin(radians(b.lat - $%[1]d) / 2), 2) +
	cos(radians($%[1]d)) * cos(radians(b.lat)) * power(sin(radians(b.lon - $%[2]d) / 2), 2))))`
)

var sqlBaselineIndexes = []string{
	`CREATE INDEX IF NOT EXISTS search_baseline_tsv ON search_baseline USING gin (tsv)`,
	`CREATE INDEX IF NOT EXISTS search_baseline_starts ON search_baseline (starts_at, id)`,
	`CREATE INDEX IF NOT EXISTS search_baseline_city ON search_baseline (city_key, starts_at, id)`,
	`CREATE INDEX IF NOT EXISTS search_baseline_category ON search_baseline (category, starts_at, id)`,
	`CREATE INDEX IF NOT EXISTS search_baseline_geo ON search_baseline (lat, lon)`,
	`ANALYZE search_baseline`,
}

// BaselineQuery is a search for the Postgres baseline.
type BaselineQuery struct {
	Text       string
	City       string
	Categories []string
	From, To   time.Time
	Lat, Lon   *float64
	RadiusKm   float64
	// Sort: "RELEVANCE", "DATE" or "DISTANCE".
	Sort  string
	Limit int
	// Facets also counts the results by category and city.
	Facets bool
}

// SearchBaselinePrepare creates the immutable unaccent wrapper, the search
// table and its indexes.
func (s *Store) SearchBaselinePrepare(ctx context.Context) error {
	for _, q := range append([]string{sqlBaselineFunc, sqlBaselineTable}, sqlBaselineIndexes...) {
		if _, err := s.db.Exec(ctx, q); err != nil {
			return wrap("search baseline prepare", err)
		}
	}
	return nil
}

// SearchBaselineDrop removes what SearchBaselinePrepare created.
func (s *Store) SearchBaselineDrop(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `DROP TABLE IF EXISTS search_baseline`)
	return wrap("search baseline drop", err)
}

// SearchBaseline answers q with Postgres full-text search: event ids of the
// first page and the total count (and, with q.Facets, one more query for
// the category and city counts).
func (s *Store) SearchBaseline(ctx context.Context, q BaselineQuery) (ids []string, total int, err error) {
	args := []any{q.From}
	where := []string{"b.starts_at >= $1"}
	arg := func(v any) int { args = append(args, v); return len(args) }
	var rank string
	if q.Text != "" {
		n := arg(q.Text)
		where = append(where, fmt.Sprintf("b.tsv @@ plainto_tsquery('simple', search_unaccent($%d))", n))
		rank = fmt.Sprintf("ts_rank(b.tsv, plainto_tsquery('simple', search_unaccent($%d)))", n)
	}
	if !q.To.IsZero() {
		where = append(where, fmt.Sprintf("b.starts_at < $%d", arg(q.To)))
	}
	if q.City != "" {
		where = append(where, fmt.Sprintf("b.city_key = lower(search_unaccent($%d))", arg(q.City)))
	}
	if len(q.Categories) > 0 {
		where = append(where, fmt.Sprintf("b.category = ANY($%d)", arg(q.Categories)))
	}
	var dist string
	if q.Lat != nil {
		la, lo := arg(*q.Lat), arg(*q.Lon)
		dist = fmt.Sprintf(baselineDistance, la, lo)
		// a bounding box the (lat, lon) index can use, then the exact distance
		dLat := q.RadiusKm / 111.2
		dLon := dLat / max(0.01, cosDeg(*q.Lat))
		where = append(where,
			fmt.Sprintf("b.lat BETWEEN $%d AND $%d", arg(*q.Lat-dLat), arg(*q.Lat+dLat)),
			fmt.Sprintf("b.lon BETWEEN $%d AND $%d", arg(*q.Lon-dLon), arg(*q.Lon+dLon)),
			fmt.Sprintf("%s <= $%d", dist, arg(q.RadiusKm)))
	}
	order := "b.starts_at, b.id"
	switch {
	case q.Sort == "RELEVANCE" && rank != "":
		order = rank + " DESC, b.starts_at, b.id"
	case q.Sort == "DISTANCE" && dist != "":
		order = dist + ", b.id"
	}
	cond := strings.Join(where, " AND ")
	sql := `SELECT b.id::text, count(*) OVER ()::int FROM search_baseline b WHERE ` +
		cond + " ORDER BY " + order + fmt.Sprintf(" LIMIT $%d", arg(q.Limit))
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, wrap("search baseline", err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id, &total); err != nil {
			rows.Close()
			return nil, 0, wrap("search baseline", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || !q.Facets {
		return ids, total, wrap("search baseline", err)
	}
	facets := `SELECT count(*) FROM search_baseline b WHERE ` + cond + ` GROUP BY GROUPING SETS ((b.category), (b.city))`
	if _, err := s.db.Exec(ctx, facets, args[:len(args)-1]...); err != nil {
		return nil, 0, wrap("search baseline facets", err)
	}
	return ids, total, nil
}

func cosDeg(d float64) float64 { return math.Cos(d * math.Pi / 180) }
