package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	_ "github.com/blevesearch/bleve/v2/analysis/char/asciifolding"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/es"
	_ "github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	_ "github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	_ "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"go.etcd.io/bbolt"
)

// bleveSchema names the mapping below; an index built with another one is
// rebuilt at open.
const bleveSchema = "events-v1"

// Analyzer names of the embedded index.
const (
	anFolding = "folding"    // unicode words, accents and case folded
	anKey     = "folded_key" // the whole value as one folded term
	anES      = "folding_es" // folding + Spanish light stemming
	anEN      = "folding_en" // folding + English stemming
)

// Bleve is the embedded engine: a Bleve (scorch) index on disk.
type Bleve struct {
	idx bleve.Index
	// Fresh is true when the index was created empty at open (missing,
	// corrupt or of another schema): it needs a full rebuild.
	Fresh bool

	mu       sync.Mutex // serialises writers: version check + write
	versions map[string]int64
	folding  func(string) []string
}

// ErrIndexLocked reports an embedded index held open by another process.
var ErrIndexLocked = errors.New("search: the index under SEARCH_DIR is in use by another process")

// OpenBleve opens the index under dir, creating it (Fresh) if it is missing,
// unreadable or of an older schema, or if reset is true.
func OpenBleve(dir string, reset bool) (*Bleve, error) {
	path := filepath.Join(dir, "events.bleve")
	idx, err := bleve.OpenUsing(path, map[string]any{"bolt_timeout": "3s"})
	if err != nil && (errors.Is(err, bbolt.ErrTimeout) || strings.Contains(err.Error(), "timeout")) {
		return nil, ErrIndexLocked
	}
	fresh := false
	if err == nil && reset {
		_ = idx.Close()
		err = errors.New("reset")
	}
	if err == nil {
		if v, _ := idx.GetInternal([]byte("schema")); string(v) != bleveSchema {
			_ = idx.Close()
			err = errors.New("schema changed")
		}
	}
	if err != nil {
		if rmErr := os.RemoveAll(path); rmErr != nil {
			return nil, fmt.Errorf("search: remove %s: %w", path, rmErr)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("search: SEARCH_DIR: %w", err)
		}
		m, err := bleveMapping()
		if err != nil {
			return nil, err
		}
		if idx, err = bleve.New(path, m); err != nil {
			return nil, fmt.Errorf("search: create index: %w", err)
		}
		if err := idx.SetInternal([]byte("schema"), []byte(bleveSchema)); err != nil {
			_ = idx.Close()
			return nil, err
		}
		fresh = true
	}
	b := &Bleve{idx: idx, Fresh: fresh}
	an := idx.Mapping().AnalyzerNamed(anFolding)
	b.folding = func(s string) []string {
		var out []string
		for _, t := range an.Analyze([]byte(s)) {
			out = append(out, string(t.Term))
		}
		return out
	}
	if b.versions, err = b.scanVersions(); err != nil {
		_ = idx.Close()
		return nil, err
	}
	return b, nil
}

func bleveMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	analyzers := map[string]map[string]any{
		anFolding: {"type": "custom", "char_filters": []string{"asciifolding"}, "tokenizer": "unicode",
			"token_filters": []string{"to_lower"}},
		anKey: {"type": "custom", "char_filters": []string{"asciifolding"}, "tokenizer": "single",
			"token_filters": []string{"to_lower"}},
		anES: {"type": "custom", "char_filters": []string{"asciifolding"}, "tokenizer": "unicode",
			"token_filters": []string{"to_lower", "stemmer_es_light"}},
		anEN: {"type": "custom", "char_filters": []string{"asciifolding"}, "tokenizer": "unicode",
			"token_filters": []string{"to_lower", "possessive_en", "stemmer_en_snowball"}},
	}
	for name, cfg := range analyzers {
		if err := m.AddCustomAnalyzer(name, cfg); err != nil {
			return nil, fmt.Errorf("search: analyzer %s: %w", name, err)
		}
	}
	text := func(name, analyzer string) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Name, f.Analyzer, f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = name, analyzer, false, false, false, false
		return f
	}
	keyword := func(name string, docValues bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Name, f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = name, false, false, false, docValues
		return f
	}
	// stored only (read back for distances and catch-up), never queried.
	number := func(store bool) *mapping.FieldMapping {
		f := bleve.NewNumericFieldMapping()
		f.Index, f.Store, f.IncludeInAll, f.DocValues = false, store, false, false
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("name", text("name", anFolding), text("name_es", anES), text("name_en", anEN))
	dm.AddFieldMappingsAt("description", text("description", anFolding), text("description_es", anES), text("description_en", anEN))
	dm.AddFieldMappingsAt("artists", text("artists", anFolding))
	dm.AddFieldMappingsAt("venue", text("venue", anFolding))
	// city: searchable text, a folded key for the filter, the raw value for facets.
	dm.AddFieldMappingsAt("city", text("city", anFolding), text("city_key", anKey), keyword("city_facet", true))
	dm.AddFieldMappingsAt("category", text("category_key", anKey), keyword("category_facet", true))
	dm.AddFieldMappingsAt("country", keyword("country", false))
	dm.AddFieldMappingsAt("saleStatus", keyword("saleStatus", false))
	geo := bleve.NewGeoPointFieldMapping()
	geo.IncludeInAll = false
	dm.AddFieldMappingsAt("location", geo)
	date := bleve.NewDateTimeFieldMapping()
	date.IncludeInAll = false
	dm.AddFieldMappingsAt("startsAt", date)
	dm.AddFieldMappingsAt("lat", number(true))
	dm.AddFieldMappingsAt("lon", number(true))
	dm.AddFieldMappingsAt("version", number(true))
	dm.AddFieldMappingsAt("available", number(false))
	dm.AddFieldMappingsAt("minPrice", number(false))
	dm.AddFieldMappingsAt("maxPrice", number(false))
	m.DefaultMapping = dm
	m.DefaultAnalyzer = anFolding
	m.IndexDynamic, m.StoreDynamic, m.DocValuesDynamic = false, false, false
	return m, nil
}

// scanVersions reads the version of every indexed document.
func (b *Bleve) scanVersions() (map[string]int64, error) {
	out := map[string]int64{}
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 10000, 0, false)
		req.Fields = []string{"version"}
		req.SortBy([]string{"_id"})
		req.Score = bleve.ScoreNone
		if after != nil {
			req.SetSearchAfter(after)
		}
		res, err := b.idx.Search(req)
		if err != nil {
			return nil, fmt.Errorf("search: scan versions: %w", err)
		}
		for _, h := range res.Hits {
			v, _ := h.Fields["version"].(float64)
			out[h.ID] = int64(v)
		}
		if len(res.Hits) < 10000 {
			return out, nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

func bleveDoc(d Document) map[string]any {
	return map[string]any{
		"name": d.Name, "description": d.Description, "artists": d.Artists,
		"venue": d.Venue, "city": d.City, "category": d.Category, "country": d.Country,
		"saleStatus": d.SaleStatus, "location": map[string]any{"lat": d.Lat, "lon": d.Lon},
		"startsAt": d.StartsAt.UTC(), "lat": d.Lat, "lon": d.Lon, "version": float64(d.Version),
		"available": float64(d.Available), "minPrice": float64(d.MinPrice), "maxPrice": float64(d.MaxPrice),
	}
}

// Index upserts docs; a document whose indexed version is newer is kept.
func (b *Bleve) Index(ctx context.Context, docs []Document) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := b.idx.NewBatch()
	applied := map[string]int64{}
	for _, d := range docs {
		if v, ok := b.versions[d.ID]; ok && v > d.Version {
			continue
		}
		if v, ok := applied[d.ID]; ok && v > d.Version {
			continue
		}
		if err := batch.Index(d.ID, bleveDoc(d)); err != nil {
			return fmt.Errorf("search: index %s: %w", d.ID, err)
		}
		applied[d.ID] = d.Version
	}
	if batch.Size() == 0 {
		return nil
	}
	if err := b.idx.Batch(batch); err != nil {
		return fmt.Errorf("search: index batch: %w", err)
	}
	for id, v := range applied {
		b.versions[id] = v
	}
	return nil
}

// Delete removes documents by id.
func (b *Bleve) Delete(ctx context.Context, ids []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := b.idx.NewBatch()
	for _, id := range ids {
		batch.Delete(id)
	}
	if err := b.idx.Batch(batch); err != nil {
		return fmt.Errorf("search: delete: %w", err)
	}
	for _, id := range ids {
		delete(b.versions, id)
	}
	return nil
}

// Versions returns the indexed version of every document.
func (b *Bleve) Versions(ctx context.Context) (map[string]int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int64, len(b.versions))
	for k, v := range b.versions {
		out[k] = v
	}
	return out, nil
}

// Count returns the number of indexed documents.
func (b *Bleve) Count(ctx context.Context) (uint64, error) { return b.idx.DocCount() }

// Close closes the index.
func (b *Bleve) Close() error { return b.idx.Close() }

// textQuery: every significant term must match some field; each term is
// tried exactly (boosted per field), typo-tolerantly, and stemmed.
func (b *Bleve) textQuery(text string) query.Query {
	var terms []query.Query
	for _, t := range b.folding(text) {
		if stopWords[t] && len(terms) > 0 {
			continue
		}
		var any []query.Query
		for _, f := range []struct {
			field string
			boost float64
		}{{"name", boostName}, {"artists", boostArtists}, {"city", boostCity}, {"venue", boostVenue}, {"description", boostDescription}} {
			tq := bleve.NewTermQuery(t)
			tq.SetField(f.field)
			tq.SetBoost(f.boost)
			any = append(any, tq)
			if fz := fuzziness(t); fz > 0 {
				fq := bleve.NewFuzzyQuery(t)
				fq.SetField(f.field)
				fq.SetFuzziness(fz)
				fq.SetPrefix(1)
				fq.SetBoost(f.boost * boostFuzzy)
				any = append(any, fq)
			}
		}
		for _, f := range []string{"name_es", "name_en", "description_es", "description_en"} {
			mq := bleve.NewMatchQuery(t)
			mq.SetField(f)
			mq.SetBoost(boostStem)
			any = append(any, mq)
		}
		terms = append(terms, bleve.NewDisjunctionQuery(any...))
	}
	if len(terms) == 0 {
		return nil
	}
	return bleve.NewConjunctionQuery(terms...)
}

// filter makes a query that only restricts (its score is ignored).
func filter(q query.Query) query.Query {
	if bq, ok := q.(query.BoostableQuery); ok {
		bq.SetBoost(0)
	}
	return q
}

// Search answers a normalised query.
func (b *Bleve) Search(ctx context.Context, q Query) (Result, error) {
	var must []query.Query
	if q.Text != "" {
		if tq := b.textQuery(q.Text); tq != nil {
			must = append(must, tq)
		}
	}
	if !q.From.IsZero() || !q.To.IsZero() {
		t, f := true, false
		dq := bleve.NewDateRangeInclusiveQuery(q.From, q.To, &t, &f)
		dq.SetField("startsAt")
		must = append(must, filter(dq))
	}
	if q.City != "" {
		tq := bleve.NewTermQuery(strings.Join(b.folding(q.City), " "))
		tq.SetField("city_key")
		must = append(must, filter(tq))
	}
	if len(q.Categories) > 0 {
		var any []query.Query
		for _, c := range q.Categories {
			tq := bleve.NewTermQuery(strings.Join(b.folding(c), " "))
			tq.SetField("category_key")
			any = append(any, filter(tq))
		}
		must = append(must, filter(bleve.NewDisjunctionQuery(any...)))
	}
	if q.Near != nil {
		gq := bleve.NewGeoDistanceQuery(q.Near.Lon, q.Near.Lat, fmt.Sprintf("%gkm", q.RadiusKm))
		gq.SetField("location")
		must = append(must, filter(gq))
	}
	var root query.Query = bleve.NewMatchAllQuery()
	if len(must) > 0 {
		root = bleve.NewConjunctionQuery(must...)
	}

	req := bleve.NewSearchRequestOptions(root, q.First+1, 0, false)
	startsAt := &bsearch.SortField{Field: "startsAt", Type: bsearch.SortFieldAsDate}
	id := &bsearch.SortDocID{}
	switch q.Sort {
	case SortRelevance:
		// No date tie-break: it would read doc values of every hit.
		req.Sort = bsearch.SortOrder{&bsearch.SortScore{Desc: true}, id}
	case SortDistance:
		gs, err := bsearch.NewSortGeoDistance("location", "km", q.Near.Lon, q.Near.Lat, false)
		if err != nil {
			return Result{}, err
		}
		req.Sort = bsearch.SortOrder{gs, id}
		req.Score = bleve.ScoreNone
	default:
		req.Sort = bsearch.SortOrder{startsAt, id}
		req.Score = bleve.ScoreNone
	}
	if q.After != "" {
		key, err := decodeCursor(q.After, q.Sort, len(req.Sort))
		if err != nil {
			return Result{}, err
		}
		if req.SearchAfter, err = keyStrings(key); err != nil {
			return Result{}, err
		}
	}
	if q.Near != nil {
		req.Fields = []string{"lat", "lon"}
	}
	if q.Facets {
		req.AddFacet("categories", bleve.NewFacetRequest("category_facet", 50))
		req.AddFacet("cities", bleve.NewFacetRequest("city_facet", 50))
	}
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("search: bleve: %w", err)
	}
	out := Result{Total: int(res.Total)}
	hits := res.Hits
	if len(hits) > q.First {
		hits, out.HasNext = hits[:q.First], true
	}
	for _, h := range hits {
		key := make([]any, len(h.DecodedSort))
		for i, v := range h.DecodedSort {
			key[i] = v
		}
		if q.Sort == SortRelevance {
			key[0] = h.Score
		}
		hit := Hit{ID: h.ID, Cursor: encodeCursor(q.Sort, key)}
		if q.Near != nil {
			lat, _ := h.Fields["lat"].(float64)
			lon, _ := h.Fields["lon"].(float64)
			d := DistanceKm(*q.Near, GeoPoint{Lat: lat, Lon: lon})
			hit.DistanceKm = &d
		}
		out.Hits = append(out.Hits, hit)
	}
	if q.Facets {
		out.FacetsShown = true
		out.Categories = bleveFacet(res.Facets["categories"])
		out.Cities = bleveFacet(res.Facets["cities"])
	}
	return out, nil
}

func bleveFacet(f *bsearch.FacetResult) []FacetCount {
	out := []FacetCount{}
	if f == nil || f.Terms == nil {
		return out
	}
	for _, t := range f.Terms.Terms() {
		out = append(out, FacetCount{Value: t.Term, Count: t.Count})
	}
	return out
}
