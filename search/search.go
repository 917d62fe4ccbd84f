// Package search is the event search projection: documents built from the
// Postgres catalog, kept in an Engine (Bleve on disk by default, or
// Elasticsearch), fed by the outbox relay through Projector and queried by
// searchEvents. Postgres stays the authority: the index may lag by seconds
// and can always be rebuilt from it.
package search

import (
	"context"
	"errors"
	"math"
	"time"
)

// Document is what the index knows of one event.
type Document struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Category    string    `json:"category"`
	Artists     []string  `json:"artists"`
	Venue       string    `json:"venue"`
	City        string    `json:"city"`
	Country     string    `json:"country"`
	Lat         float64   `json:"lat"`
	Lon         float64   `json:"lon"`
	StartsAt    time.Time `json:"startsAt"`
	// No availability nor sale status: nothing searches or sorts by them,
	// and an event's page and every result node read them live
	// (catalog), so the index never follows the inventory (a hold or a
	// sale does not reindex its event).
	MinPrice int64  `json:"minPrice"`
	MaxPrice int64  `json:"maxPrice"`
	Currency string `json:"currency"`
	// Version is events.version: a document never replaces a newer one.
	Version int64 `json:"version"`
	// UpdatedAt is when the event last changed in Postgres (for the lag metric).
	UpdatedAt time.Time `json:"-"`
}

// Sort is the order of search results.
type Sort string

// The sort orders of searchEvents.
const (
	SortRelevance Sort = "RELEVANCE"
	SortDate      Sort = "DATE"
	SortDistance  Sort = "DISTANCE"
)

// GeoPoint is a latitude/longitude in degrees.
type GeoPoint struct {
	Lat, Lon float64
}

// Query is one normalised search (see Service.Search for the defaults).
type Query struct {
	Text       string
	Near       *GeoPoint
	RadiusKm   float64
	City       string
	Categories []string
	// From is inclusive, To exclusive; zero values do not filter.
	From, To time.Time
	Sort     Sort
	// First is the page size; After the opaque cursor of the previous page.
	First int
	After string
	// Facets asks for category and city counts over the whole result set.
	Facets bool
}

// Hit is one result.
type Hit struct {
	ID     string
	Cursor string
	// DistanceKm is set when the query has Near.
	DistanceKm *float64
}

// FacetCount is the number of results with one value.
type FacetCount struct {
	Value string
	Count int
}

// Result is one page of results.
type Result struct {
	Hits        []Hit
	Total       int
	HasNext     bool
	Categories  []FacetCount
	Cities      []FacetCount
	FacetsShown bool
}

// Engine is a search index of Documents.
type Engine interface {
	// Index upserts documents; one whose indexed version is newer is kept.
	Index(ctx context.Context, docs []Document) error
	// Delete removes documents by id.
	Delete(ctx context.Context, ids []string) error
	// Search answers a normalised query.
	Search(ctx context.Context, q Query) (Result, error)
	// Versions returns the indexed version of every document.
	Versions(ctx context.Context) (map[string]int64, error)
	// Count returns the number of indexed documents.
	Count(ctx context.Context) (uint64, error)
	// Close releases the index.
	Close() error
}

// ErrBadCursor reports an `after` cursor this query cannot continue from.
var ErrBadCursor = errors.New("search: invalid cursor")

// ErrNotReady reports an index still being built.
var ErrNotReady = errors.New("search: index not ready")

// DistanceKm is the great-circle distance between two points.
func DistanceKm(a, b GeoPoint) float64 {
	const r = 6371.0088
	rad := math.Pi / 180
	dLat := (b.Lat - a.Lat) * rad
	dLon := (b.Lon - a.Lon) * rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) +
		math.Cos(a.Lat*rad)*math.Cos(b.Lat*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(h)))
}

// fuzziness is the edit distance allowed for a query term of that length
// (embedded engine): none below 5 letters, where a typo makes another word.
func fuzziness(term string) int {
	n := len([]rune(term))
	switch {
	case n <= 4:
		return 0
	case n <= 7:
		return 1
	default:
		return 2
	}
}

// stopWords are Spanish and English words too common to require a match.
var stopWords = map[string]bool{
	"de": true, "del": true, "la": true, "las": true, "el": true, "los": true,
	"en": true, "y": true, "a": true, "con": true, "por": true, "un": true, "una": true,
	"the": true, "of": true, "and": true, "in": true, "at": true, "an": true, "for": true,
}

// Field boosts shared by both engines.
const (
	boostName        = 4.0
	boostArtists     = 3.5
	boostCity        = 2.0
	boostVenue       = 1.5
	boostDescription = 1.0
	boostStem        = 0.6
	boostFuzzy       = 0.4
)
