package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The Postgres full-text baseline of the search benchmark (bench/search):
// what a team might run instead of a search engine. Not used by the product.
const (
	sqlBaselineFunc = `CREATE OR REPLACE FUNCTION search_unaccent(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$ SELECT public.unaccent('public.unaccent'::regdictionary, $1) $$`
	sqlBaselineIndex = `CREATE INDEX IF NOT EXISTS events_fts_baseline ON events
USING gin (to_tsvector('simple', search_unaccent(name || ' ' || description)))`
	baselineDoc      = `to_tsvector('simple', search_unaccent(e.name || ' ' || e.description))`
	baselineDistance = `(12742 * asin(sqrt(power(sin(radians(v.lat - $%[1]d) / 2), 2) +
	cos(radians($%[1]d)) * cos(radians(v.lat)) * power(sin(radians(v.lon - $%[2]d) / 2), 2))))`
)

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
}

// SearchBaselinePrepare creates the immutable unaccent wrapper and the GIN
// index of the baseline.
func (s *Store) SearchBaselinePrepare(ctx context.Context) error {
	for _, q := range []string{sqlBaselineFunc, sqlBaselineIndex, "ANALYZE events"} {
		if _, err := s.db.Exec(ctx, q); err != nil {
			return wrap("search baseline prepare", err)
		}
	}
	return nil
}

// SearchBaseline answers q with Postgres full-text search (tsvector + GIN +
// unaccent): event ids of the first page and the total count.
func (s *Store) SearchBaseline(ctx context.Context, q BaselineQuery) (ids []string, total int, err error) {
	args := []any{q.From}
	where := []string{"e.starts_at >= $1"}
	arg := func(v any) int { args = append(args, v); return len(args) }
	var rank string
	if q.Text != "" {
		n := arg(q.Text)
		where = append(where, fmt.Sprintf("%s @@ plainto_tsquery('simple', search_unaccent($%d))", baselineDoc, n))
		rank = fmt.Sprintf("ts_rank(%s, plainto_tsquery('simple', search_unaccent($%d)))", baselineDoc, n)
	}
	if !q.To.IsZero() {
		where = append(where, fmt.Sprintf("e.starts_at < $%d", arg(q.To)))
	}
	if q.City != "" {
		where = append(where, fmt.Sprintf("lower(search_unaccent(v.city)) = lower(search_unaccent($%d))", arg(q.City)))
	}
	if len(q.Categories) > 0 {
		where = append(where, fmt.Sprintf("e.category = ANY($%d)", arg(q.Categories)))
	}
	var dist string
	if q.Lat != nil {
		dist = fmt.Sprintf(baselineDistance, arg(*q.Lat), arg(*q.Lon))
		where = append(where, fmt.Sprintf("%s <= $%d", dist, arg(q.RadiusKm)))
	}
	order := "e.starts_at, e.id"
	switch {
	case q.Sort == "RELEVANCE" && rank != "":
		order = rank + " DESC, e.starts_at, e.id"
	case q.Sort == "DISTANCE" && dist != "":
		order = dist + ", e.id"
	}
	sql := `SELECT e.id::text, count(*) OVER ()::int FROM events e JOIN venues v ON v.id = e.venue_id WHERE ` +
		strings.Join(where, " AND ") + " ORDER BY " + order + fmt.Sprintf(" LIMIT $%d", arg(q.Limit))
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, wrap("search baseline", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id, &total); err != nil {
			return nil, 0, wrap("search baseline", err)
		}
		ids = append(ids, id)
	}
	return ids, total, wrap("search baseline", rows.Err())
}
