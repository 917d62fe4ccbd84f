package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	_ "github.com/blevesearch/bleve/v2/analysis/char/asciifolding"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/es"
	_ "github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	_ "github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	_ "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
	bolterrors "go.etcd.io/bbolt/errors"
)

// bleveSchema names the mapping below; an index built with another one is
// rebuilt at open. (An index of events-v3 built before saleStatus and
// available left the documents still has them: never read, so it is not
// rebuilt for that; they go at its next rebuild.)
const bleveSchema = "events-v3"

// Analyzer names of the embedded index.
const (
	anFolding = "folding"    // unicode words, accents and case folded
	anKey     = "folded_key" // the whole value as one folded term
	anStem    = "folding_stem"
)

// Bleve is the embedded engine: a Bleve (scorch) index on disk.
//
// Cost model: one folded copy per text field, plus `all` (every text field,
// for typo matching with a single fuzzy clause per word) and `stem` (name and
// description, Spanish light + English stemming). Sorting reads one doc
// value per hit (`sort`: startsAt then id), DATE-sorted pages search growing
// startsAt windows after the cursor instead of sorting every match, and the
// total/facets of a search are counted apart and kept for StatsTTL.
type Bleve struct {
	idx bleve.Index
	// Fresh is true when the index was created empty at open (missing,
	// corrupt or of another schema): it needs a full rebuild.
	Fresh bool
	// StatsTTL is how long the total and facet counts of a search are
	// reused (default 2 s; negative: never).
	StatsTTL time.Duration

	mu       sync.Mutex // serialises writers: version check + write
	versions map[string]int64
	folding  func(string) []string
	stemming func(string) []string // the anStem analysis

	statsOnce sync.Once
	stats     *ttlCache[searchStats]

	// view answers searches without text (view.go); nil until loaded.
	view  *view
	keyOf func(string) string // the anKey analysis of a value
	// noView answers every search with the index (tests compare the two).
	noView bool
	// separateCounts counts facets in a pass of their own (tests compare).
	separateCounts bool
	// facts are the sort keys and facet values of each segment's
	// documents, for RELEVANCE searches (segfacts.go).
	facts factsCache
	// keySort answers RELEVANCE with Bleve's sort on every match's key
	// instead of byRelevance (tests compare).
	keySort bool
}

// searchStats are the counts of a whole result set.
type searchStats struct {
	total              int
	categories, cities []FacetCount
}

// ErrIndexLocked reports an embedded index held open by another process.
var ErrIndexLocked = errors.New("search: the index under SEARCH_DIR is in use by another process")

// OpenBleve opens the index under dir, creating it (Fresh) if it is missing,
// unreadable or of an older schema, or if reset is true.
func OpenBleve(dir string, reset bool) (*Bleve, error) {
	path := filepath.Join(dir, "events.bleve")
	idx, err := bleve.OpenUsing(path, map[string]any{"bolt_timeout": "3s"})
	if err != nil && (errors.Is(err, bolterrors.ErrTimeout) || strings.Contains(err.Error(), "timeout")) {
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
	as := idx.Mapping().AnalyzerNamed(anStem)
	b.stemming = func(s string) []string {
		var out []string
		for _, t := range as.Analyze([]byte(s)) {
			out = append(out, string(t.Term))
		}
		return out
	}
	ak := idx.Mapping().AnalyzerNamed(anKey)
	b.keyOf = func(s string) string {
		ts := ak.Analyze([]byte(s))
		if len(ts) == 0 {
			return ""
		}
		return string(ts[0].Term)
	}
	if b.versions, err = b.scanVersions(); err != nil {
		_ = idx.Close()
		return nil, err
	}
	if err := b.loadText(); err != nil {
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
		// Spanish light stemming, then English: "músicas", "music" and
		// "musica" meet; the same chain runs on the query side.
		anStem: {"type": "custom", "char_filters": []string{"asciifolding"}, "tokenizer": "unicode",
			"token_filters": []string{"to_lower", "stemmer_es_light", "stemmer_en_snowball"}},
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
	// docValues fields are also stored: the view is loaded from them at open.
	keyword := func(name string, docValues bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Name, f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = name, docValues, false, false, docValues
		return f
	}
	// stored only (read back for distances and catch-up), never queried.
	number := func(store bool) *mapping.FieldMapping {
		f := bleve.NewNumericFieldMapping()
		f.Index, f.Store, f.IncludeInAll, f.DocValues = false, store, false, false
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range []string{"name", "description", "artists", "venue", "all"} {
		dm.AddFieldMappingsAt(f, text(f, anFolding))
	}
	dm.AddFieldMappingsAt("stem", text("stem", anStem))
	// city: searchable text, a folded key for the filter, the raw value for facets.
	dm.AddFieldMappingsAt("city", text("city", anFolding), text("city_key", anKey), keyword("city_facet", true))
	dm.AddFieldMappingsAt("category", text("category_key", anKey), keyword("category_facet", true))
	dm.AddFieldMappingsAt("country", keyword("country", false))
	// sort: "<startsAt>|<id>", the only doc value read per hit when sorting.
	dm.AddFieldMappingsAt("sort", keyword("sort", true))
	geo := bleve.NewGeoPointFieldMapping()
	geo.IncludeInAll = false
	dm.AddFieldMappingsAt("location", geo)
	date := bleve.NewDateTimeFieldMapping()
	date.IncludeInAll, date.DocValues = false, false
	dm.AddFieldMappingsAt("startsAt", date)
	dm.AddFieldMappingsAt("lat", number(true))
	dm.AddFieldMappingsAt("lon", number(true))
	dm.AddFieldMappingsAt("version", number(true))
	dm.AddFieldMappingsAt("minPrice", number(false))
	dm.AddFieldMappingsAt("maxPrice", number(false))
	dm.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping()) // no composite field
	m.DefaultMapping = dm
	m.DefaultAnalyzer = anFolding
	m.IndexDynamic, m.StoreDynamic, m.DocValuesDynamic = false, false, false
	return m, nil
}

// sortLayout makes startsAt sort as a string (fixed width, UTC).
const sortLayout = "2006-01-02T15:04:05.000000000Z"

// sortKey is the `sort` value of a document: startsAt, then id.
func sortKey(startsAt time.Time, id string) string {
	return startsAt.UTC().Format(sortLayout) + "|" + id
}

// scanVersions reads the version of every indexed document and loads the
// view from the stored fields.
func (b *Bleve) scanVersions() (map[string]int64, error) {
	out := map[string]int64{}
	var docs []viewDoc
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 10000, 0, false)
		req.Fields = []string{"version", "sort", "city_facet", "category_facet", "lat", "lon"}
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
			key, _ := h.Fields["sort"].(string)
			city, _ := h.Fields["city_facet"].(string)
			cat, _ := h.Fields["category_facet"].(string)
			lat, _ := h.Fields["lat"].(float64)
			lon, _ := h.Fields["lon"].(float64)
			at, _, _ := strings.Cut(key, "|")
			t, err := time.Parse(sortLayout, at)
			if err != nil {
				return nil, fmt.Errorf("search: scan versions: document %s has no sort key", h.ID)
			}
			docs = append(docs, b.viewDoc(h.ID, t, city, cat, lat, lon))
		}
		if len(res.Hits) < 10000 {
			b.view = newView()
			b.view.apply(docs, nil)
			return out, nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// loadText fills the view's text index from the index's postings.
func (b *Bleve) loadText() error {
	adv, err := b.idx.Advanced()
	if err != nil {
		return fmt.Errorf("search: load text: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return fmt.Errorf("search: load text: %w", err)
	}
	defer r.Close()
	if err := b.view.loadText(context.Background(), r); err != nil {
		return fmt.Errorf("search: load text: %w", err)
	}
	return nil
}

// viewDoc is the view's input for a document.
func (b *Bleve) viewDoc(id string, startsAt time.Time, city, category string, lat, lon float64) viewDoc {
	return viewDoc{ID: id, Key: sortKey(startsAt, id), At: startsAt.UTC().UnixNano(),
		CityKey: b.keyOf(city), CatKey: b.keyOf(category), CityFacet: city, CatFacet: category, Lat: lat, Lon: lon}
}

// validSortTime reports whether s is the time part of a sort key.
func validSortTime(s string) bool {
	_, err := time.Parse(sortLayout, s)
	return err == nil
}

func bleveDoc(d Document) map[string]any {
	all := strings.Join(append([]string{d.Name, d.City, d.Venue, d.Description}, d.Artists...), " ")
	return map[string]any{
		"name": d.Name, "description": d.Description, "artists": d.Artists,
		"venue": d.Venue, "city": d.City, "category": d.Category, "country": d.Country,
		"all": all, "stem": d.Name + " " + d.Description, "sort": sortKey(d.StartsAt, d.ID),
		"location": map[string]any{"lat": d.Lat, "lon": d.Lon},
		"startsAt": d.StartsAt.UTC(), "lat": d.Lat, "lon": d.Lon, "version": float64(d.Version),
		"minPrice": float64(d.MinPrice), "maxPrice": float64(d.MaxPrice),
	}
}

// plainDocValues are the doc value fields read per hit (sorting, facets):
// stored unchunked and uncompressed (as Bleve stores geo points), so reading
// one value needs no chunk decompression. (zapx merges assume the two
// options go together.)
var plainDocValues = map[string]bool{"sort": true, "category_facet": true, "city_facet": true}

// document maps d with the index mapping, then stores the doc values of
// plainDocValues uncompressed (an option the mapping cannot express).
func (b *Bleve) document(d Document) (*document.Document, error) {
	doc := document.NewDocument(d.ID)
	if err := b.idx.Mapping().MapDocument(doc, bleveDoc(d)); err != nil {
		return nil, err
	}
	for i, f := range doc.Fields {
		if tf, ok := f.(*document.TextField); ok && plainDocValues[tf.Name()] {
			doc.Fields[i] = document.NewTextFieldCustom(tf.Name(), tf.ArrayPositions(), tf.Value(),
				tf.Options()|index.SkipDVChunking|index.SkipDVCompression, tf.Analyzer())
		}
	}
	return doc, nil
}

// Index upserts docs; a document whose indexed version is newer is kept.
func (b *Bleve) Index(ctx context.Context, docs []Document) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := b.idx.NewBatch()
	applied := map[string]int64{}
	var vdocs []viewDoc
	for _, d := range docs {
		if v, ok := b.versions[d.ID]; ok && v > d.Version {
			continue
		}
		if v, ok := applied[d.ID]; ok && v > d.Version {
			continue
		}
		doc, err := b.document(d)
		if err != nil {
			return fmt.Errorf("search: index %s: %w", d.ID, err)
		}
		if err := batch.IndexAdvanced(doc); err != nil {
			return fmt.Errorf("search: index %s: %w", d.ID, err)
		}
		applied[d.ID] = d.Version
		vd := b.viewDoc(d.ID, d.StartsAt, d.City, d.Category, d.Lat, d.Lon)
		vd.Text = analyzeText(doc, d)
		vdocs = append(vdocs, vd)
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
	b.view.apply(vdocs, nil)
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
	b.view.apply(nil, ids)
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

// Compact merges the index into one segment (after a full rebuild): fewer,
// larger segments make every dictionary lookup and doc value read cheaper.
func (b *Bleve) Compact(ctx context.Context) error {
	adv, err := b.idx.Advanced()
	if err != nil {
		return err
	}
	if s, ok := adv.(*scorch.Scorch); ok {
		return s.ForceMerge(ctx, nil)
	}
	return nil
}

// textQuery: every significant term must match some field, exactly
// (boosted per field), with a typo (on `all`, words of 5 letters or more)
// or stemmed.
func (b *Bleve) textQuery(text string) query.Query {
	var terms []query.Query
	for _, t := range textWords(b.folding(text)) {
		var any []query.Query
		for _, f := range []struct {
			field string
			boost float64
		}{{"name", boostName}, {"artists", boostArtists}, {"city", boostCity}, {"venue", boostVenue}, {"description", boostDescription}} {
			tq := bleve.NewTermQuery(t)
			tq.SetField(f.field)
			tq.SetBoost(f.boost)
			any = append(any, tq)
		}
		if fz := fuzziness(t); fz > 0 {
			fq := bleve.NewFuzzyQuery(t)
			fq.SetField("all")
			fq.SetFuzziness(fz)
			fq.SetPrefix(1)
			fq.SetBoost(boostFuzzy)
			any = append(any, fq)
		}
		mq := bleve.NewMatchQuery(t)
		mq.SetField("stem")
		mq.SetBoost(boostStem)
		any = append(any, mq)
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

// dateRange is startsAt in [from, to); zero bounds are open.
func dateRange(from, to time.Time) query.Query {
	if from.IsZero() && to.IsZero() {
		return nil
	}
	t, f := true, false
	dq := bleve.NewDateRangeInclusiveQuery(from, to, &t, &f)
	dq.SetField("startsAt")
	return filter(dq)
}

// filters are the restrictions of q besides text and dates.
func (b *Bleve) filters(q Query) []query.Query {
	var must []query.Query
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
	return must
}

func all(qs ...query.Query) query.Query {
	var must []query.Query
	for _, q := range qs {
		if q != nil {
			must = append(must, q)
		}
	}
	switch len(must) {
	case 0:
		return bleve.NewMatchAllQuery()
	case 1:
		return must[0]
	}
	return bleve.NewConjunctionQuery(must...)
}

// coordinates are the stored fields a page of q needs (for distances).
func coordinates(q Query) []string {
	if q.Near == nil {
		return nil
	}
	return []string{"lat", "lon"}
}

// match is text restricted by filters; filters never score, so they are
// evaluated as plain bitmaps (Bleve's filter clause).
func match(text query.Query, filters ...query.Query) query.Query {
	f := all(filters...)
	if text == nil {
		return f
	}
	if _, ok := f.(*query.MatchAllQuery); ok {
		return text
	}
	bq := bleve.NewBooleanQuery()
	bq.AddMust(text)
	bq.AddFilter(f)
	return bq
}

// matchDates is text restricted by filters and startsAt in [from, to).
// The date range is left out when no indexed document starts outside it
// (the view knows every document's start): Bleve checks a range filter
// against every hit of the text, the dearest part of a text search over
// many upcoming events.
func (b *Bleve) matchDates(text query.Query, filters []query.Query, from, to time.Time) query.Query {
	if b.view != nil && !b.noView && !b.view.outside(from, to) {
		return match(text, filters...)
	}
	return match(text, append(filters[:len(filters):len(filters)], dateRange(from, to))...)
}

var sortByKey = &bsearch.SortField{Field: "sort", Type: bsearch.SortFieldAsString}

// Search answers a normalised query.
//
// Searches without text are answered by the view; text searches by the
// view's text index (text.go) as the index would answer them, unless the
// query is of a shape it leaves to Bleve.
func (b *Bleve) Search(ctx context.Context, q Query) (Result, error) {
	if !b.noView {
		if viewable(q) {
			return b.view.search(q, b.folding)
		}
		if q.Text != "" {
			if res, ok, err := b.view.searchText(q, textWords(b.folding(q.Text)), b.folding, b.stemming); ok {
				return res, err
			}
		}
	}
	return b.searchIndex(ctx, q)
}

// searchIndex answers q with the Bleve index.
func (b *Bleve) searchIndex(ctx context.Context, q Query) (Result, error) {
	var text query.Query
	if q.Text != "" {
		text = b.textQuery(q.Text)
	}
	filters := b.filters(q)
	filters = filters[:len(filters):len(filters)] // appends copy
	var order bsearch.SortOrder
	switch q.Sort {
	case SortRelevance:
		order = bsearch.SortOrder{&bsearch.SortScore{Desc: true}, sortByKey}
	case SortDistance:
		gs, err := bsearch.NewSortGeoDistance("location", "km", q.Near.Lon, q.Near.Lat, false)
		if err != nil {
			return Result{}, err
		}
		order = bsearch.SortOrder{gs, sortByKey}
	default:
		order = bsearch.SortOrder{sortByKey}
	}
	var after []string
	if q.After != "" {
		key, err := decodeCursor(q.After, q.Sort, len(order))
		if err != nil {
			return Result{}, err
		}
		if after, err = keyStrings(key); err != nil {
			return Result{}, err
		}
	}

	var out Result
	var hits []*bsearch.DocumentMatch
	var err error
	if q.Sort == SortDate {
		if hits, err = b.byDate(ctx, q, text, filters, after); err != nil {
			return Result{}, err
		}
		st, err := b.counts(ctx, q, text, filters)
		if err != nil {
			return Result{}, err
		}
		out.Total, out.Categories, out.Cities = st.total, st.categories, st.cities
	} else if q.Sort == SortRelevance && q.Near == nil && !b.keySort {
		var cursor []any
		if q.After != "" {
			cursor, _ = decodeCursor(q.After, q.Sort, len(order))
		}
		cached, fresh := b.cachedStats(q)
		rp, err := b.byRelevance(ctx, b.matchDates(text, filters, q.From, q.To), q.First+1, cursor, q.Facets && !fresh && !b.separateCounts)
		if err != nil {
			return Result{}, err
		}
		hits, out.Total = rp.hits, rp.total
		var hit *searchStats
		if fresh {
			hit = &cached
		}
		if err := b.pageFacets(ctx, q, text, filters, &out, hit, func() ([]FacetCount, []FacetCount) { return rp.cats, rp.cities }); err != nil {
			return Result{}, err
		}
	} else {
		req := bleve.NewSearchRequestOptions(b.matchDates(text, filters, q.From, q.To), q.First+1, 0, false)
		req.Sort = order
		if q.Sort == SortDistance {
			req.Score = bleve.ScoreNone
		}
		req.Fields = coordinates(q)
		if after != nil {
			req.SetSearchAfter(after)
		}
		// facets: counted in the same pass as the page (one evaluation of
		// the text query), unless fresh counts are cached
		var cached *searchStats
		if q.Facets {
			if st, ok := b.cachedStats(q); ok && !b.separateCounts {
				cached = &st
			} else if !b.separateCounts {
				addFacets(req)
			}
		}
		res, err := b.idx.SearchInContext(ctx, req)
		if err != nil {
			return Result{}, fmt.Errorf("search: bleve: %w", err)
		}
		hits, out.Total = res.Hits, int(res.Total)
		if err := b.pageFacets(ctx, q, text, filters, &out, cached, func() ([]FacetCount, []FacetCount) {
			return bleveFacet(res.Facets["categories"]), bleveFacet(res.Facets["cities"])
		}); err != nil {
			return Result{}, err
		}
	}
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
		if out.Categories == nil {
			out.Categories = []FacetCount{}
		}
		if out.Cities == nil {
			out.Cities = []FacetCount{}
		}
	}
	return out, nil
}

// byDate returns the first First+1 matches of match in (startsAt, id) order
// after the cursor key. Rather than sorting every match, it searches
// startsAt windows from the cursor on (1 day, then 8 times wider, the
// fourth open-ended) until the page is full.
func (b *Bleve) byDate(ctx context.Context, q Query, text query.Query, filters []query.Query, after []string) ([]*bsearch.DocumentMatch, error) {
	need := q.First + 1
	lo := q.From
	if after != nil {
		at, _, _ := strings.Cut(after[0], "|")
		t, err := time.Parse(sortLayout, at)
		if err != nil {
			return nil, ErrBadCursor
		}
		if t.After(lo) {
			lo = t
		}
	}
	var hits []*bsearch.DocumentMatch
	span := 24 * time.Hour
	for i := 0; ; i++ {
		if !q.To.IsZero() && !lo.Before(q.To) {
			return hits, nil
		}
		end := lo.Add(span)
		last := i == 3 || (!q.To.IsZero() && !end.Before(q.To))
		if last {
			end = q.To
		}
		req := bleve.NewSearchRequestOptions(match(text, append(filters[:len(filters):len(filters)], dateRange(lo, end))...), need-len(hits), 0, false)
		req.Sort = bsearch.SortOrder{sortByKey}
		req.Score = bleve.ScoreNone
		req.Fields = coordinates(q)
		if i == 0 && after != nil {
			req.SetSearchAfter(after)
		}
		res, err := b.idx.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("search: bleve: %w", err)
		}
		hits = append(hits, res.Hits...)
		if len(hits) >= need || last {
			return hits, nil
		}
		lo, span = end, span*8
	}
}

// pageFacets sets out's facets when the query selects them: counted apart
// (separateCounts), else from fresh cached counts (cached), else those
// counted with the page (counted), which are then cached.
func (b *Bleve) pageFacets(ctx context.Context, q Query, text query.Query, filters []query.Query, out *Result, cached *searchStats, counted func() ([]FacetCount, []FacetCount)) error {
	switch {
	case !q.Facets:
	case b.separateCounts:
		st, err := b.counts(ctx, q, text, filters)
		if err != nil {
			return err
		}
		out.Categories, out.Cities = st.categories, st.cities
	case cached != nil:
		out.Categories, out.Cities = cached.categories, cached.cities
	default:
		out.Categories, out.Cities = counted()
		b.putStats(q, searchStats{total: out.Total, categories: out.Categories, cities: out.Cities})
	}
	return nil
}

// counts are the total and (if asked) facet counts of q's whole result set,
// counted without sorting or scoring and reused for StatsTTL.
func (b *Bleve) counts(ctx context.Context, q Query, text query.Query, filters []query.Query) (searchStats, error) {
	if b.StatsTTL < 0 {
		return b.count(ctx, q, text, filters)
	}
	b.initStats()
	return b.stats.get(ctx, statsKey(q), q.From, 2*time.Second, func(ctx context.Context) (searchStats, error) {
		return b.count(ctx, q, text, filters)
	})
}

func (b *Bleve) initStats() {
	b.statsOnce.Do(func() {
		ttl := b.StatsTTL
		if ttl == 0 {
			ttl = 2 * time.Second
		}
		b.stats = newTTLCache[searchStats](ttl)
	})
}

// statsKey identifies the result set of q (not its order or page).
func statsKey(q Query) string {
	k := q
	k.From, k.Sort, k.First, k.After, k.Near = time.Time{}, "", 0, "", nil
	key := fmt.Sprintf("%#v", k)
	if q.Near != nil {
		key += fmt.Sprint(*q.Near)
	}
	return key
}

// cachedStats returns fresh cached counts of q's result set, if any.
func (b *Bleve) cachedStats(q Query) (searchStats, bool) {
	if b.StatsTTL < 0 {
		return searchStats{}, false
	}
	b.initStats()
	return b.stats.peek(statsKey(q), q.From)
}

// putStats caches counts of q's result set counted with a page.
func (b *Bleve) putStats(q Query, st searchStats) {
	if b.StatsTTL < 0 {
		return
	}
	b.initStats()
	b.stats.put(statsKey(q), q.From, st)
}

func addFacets(req *bleve.SearchRequest) {
	req.AddFacet("categories", bleve.NewFacetRequest("category_facet", 50))
	req.AddFacet("cities", bleve.NewFacetRequest("city_facet", 50))
}

// count counts q's result set (and its facets if asked).
func (b *Bleve) count(ctx context.Context, q Query, text query.Query, filters []query.Query) (searchStats, error) {
	req := bleve.NewSearchRequestOptions(b.matchDates(text, filters, q.From, q.To), 0, 0, false)
	req.Score = bleve.ScoreNone
	if q.Facets {
		addFacets(req)
	}
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return searchStats{}, fmt.Errorf("search: bleve: %w", err)
	}
	st := searchStats{total: int(res.Total)}
	if q.Facets {
		st.categories, st.cities = bleveFacet(res.Facets["categories"]), bleveFacet(res.Facets["cities"])
	}
	return st, nil
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
