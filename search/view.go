package search

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/geo"
)

// view is what the embedded engine keeps in memory of every indexed
// document besides the index itself: its date-ordered sort key, folded
// city and category (as the filters see them), facet values and location
// (as Bleve reads it back). Searches without text (browse, city, category,
// near; DATE or DISTANCE order) are answered from it with the same
// semantics as the Bleve queries they replace (view_test.go compares the
// two), and their totals and facets are counted from it: a scan of
// 100,000 small structs instead of Bleve's faceting over every hit.
//
// It is updated in the same critical section as the index (Bleve.mu)
// after each batch is written, so it mirrors the index.
type view struct {
	mu     sync.RWMutex
	byID   map[string]*fact
	sorted []*fact // by key ("startsAt|id"), as Bleve's `sort` doc value
	// hot has what filters and counts read of sorted[i], contiguous (a
	// scan of 100,000 documents stays in cache).
	hot []hot
	// allCats/allCities count the facet values of every document.
	allCats, allCities []int
	// interned strings: folded keys and facet values.
	ids   map[string]int32
	names []string
	// the positions in sorted of each folded city and category, and of
	// each 1° cell of latitude and longitude (a search scans only those
	// of its most selective filter: candidates)
	byCity, byCat map[int32][]int32
	byCell        map[[2]int16][]int32
	// text is the postings of the text fields (text.go).
	text textIndex
}

// fact is one document in the view.
type fact struct {
	id, key             string
	at                  int64 // startsAt, Unix nanoseconds
	cityKey, catKey     int32 // folded (city_key, category_key)
	cityFacet, catFacet int32 // raw (city_facet, category_facet)
	// qlon/qlat: the location as Bleve decodes it from the index (Morton
	// hash), used for the radius filter and distance order; lat/lon as
	// stored, used for Hit.DistanceKm.
	qlon, qlat, lat, lon float64
	// slot is the document's number in the text index (-1: none yet),
	// terms its postings there, textSum its raw text (0: unknown).
	slot    int32
	terms   []int32
	textSum uint64
}

// hot is what filters read of f.
func (f *fact) hot() hot {
	return hot{at: f.at, qlon: f.qlon, qlat: f.qlat,
		cityKey: f.cityKey, catKey: f.catKey, cityFacet: f.cityFacet, catFacet: f.catFacet}
}

func newView() *view {
	return &view{byID: map[string]*fact{}, ids: map[string]int32{}}
}

// intern returns the id of s (mu held for writing).
func (v *view) intern(s string) int32 {
	if id, ok := v.ids[s]; ok {
		return id
	}
	id := int32(len(v.names))
	v.ids[s] = id
	v.names = append(v.names, s)
	return id
}

// lookup returns the id of s, or -1 (mu held for reading).
func (v *view) lookup(s string) int32 {
	if id, ok := v.ids[s]; ok {
		return id
	}
	return -1
}

// hot is the part of a fact read for every document of a scan.
type hot struct {
	at                  int64
	qlon, qlat          float64
	cityKey, catKey     int32
	cityFacet, catFacet int32
}

// viewDoc is the input of one fact: the raw values plus the folded keys
// computed with the index's analyzers.
type viewDoc struct {
	ID, Key             string
	At                  int64
	CityKey, CatKey     string
	CityFacet, CatFacet string
	Lat, Lon            float64
	// Text is the analysis of the text fields (nil: loaded apart, loadText).
	Text *docText
}

func (v *view) newFact(d viewDoc) *fact {
	h := geo.MortonHash(d.Lon, d.Lat)
	return &fact{id: d.ID, key: d.Key, at: d.At,
		cityKey: v.intern(d.CityKey), catKey: v.intern(d.CatKey),
		cityFacet: v.intern(d.CityFacet), catFacet: v.intern(d.CatFacet),
		qlon: geo.MortonUnhashLon(h), qlat: geo.MortonUnhashLat(h), lat: d.Lat, lon: d.Lon, slot: -1}
}

// apply upserts docs (the last of an id wins, as in a Bleve batch) and
// removes the ids in del.
func (v *view) apply(docs []viewDoc, del []string) {
	if len(docs) == 0 && len(del) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	gone := map[*fact]bool{}
	fresh := map[string]*fact{}
	for _, id := range del {
		if old, ok := v.byID[id]; ok {
			gone[old] = true
			delete(v.byID, id)
			v.text.remove(old)
		}
		delete(fresh, id)
	}
	for _, d := range docs {
		f := v.newFact(d)
		old, ok := v.byID[d.ID]
		switch {
		case ok && d.Text != nil && old.textSum == d.Text.sum:
			gone[old] = true
			v.text.move(old, f) // the same text: the same postings
		case ok:
			gone[old] = true
			v.text.remove(old)
			fallthrough
		default:
			if d.Text != nil {
				v.text.add(f, d.Text)
			}
		}
		v.byID[d.ID] = f
		fresh[d.ID] = f
	}
	v.text.compact()
	add := make([]*fact, 0, len(fresh))
	for _, f := range fresh {
		add = append(add, f)
	}
	slices.SortFunc(add, func(a, b *fact) int { return strings.Compare(a.key, b.key) })
	// merge the survivors of sorted with add (both in key order)
	out := make([]*fact, 0, len(v.sorted)-len(gone)+len(add))
	i := 0
	for _, f := range v.sorted {
		if gone[f] {
			continue
		}
		for i < len(add) && add[i].key < f.key {
			out = append(out, add[i])
			i++
		}
		out = append(out, f)
	}
	out = append(out, add[i:]...)
	v.sorted = out
	v.hot = make([]hot, len(out))
	v.allCats, v.allCities = make([]int, len(v.names)), make([]int, len(v.names))
	v.byCity, v.byCat, v.byCell = map[int32][]int32{}, map[int32][]int32{}, map[[2]int16][]int32{}
	for i, f := range out {
		v.byCity[f.cityKey] = append(v.byCity[f.cityKey], int32(i))
		v.byCat[f.catKey] = append(v.byCat[f.catKey], int32(i))
		c := cellOf(f.qlat, f.qlon)
		v.byCell[c] = append(v.byCell[c], int32(i))
	}
	for i, f := range out {
		v.hot[i] = f.hot()
		v.allCats[f.catFacet]++
		v.allCities[f.cityFacet]++
	}
}

// viewable reports whether the view answers q: no text, DATE or DISTANCE order.
func viewable(q Query) bool {
	return q.Text == "" && (q.Sort == SortDate || (q.Sort == SortDistance && q.Near != nil))
}

// viewFilter is q's restrictions over facts (mu held for reading).
type viewFilter struct {
	none           bool // a city or categories no document has
	city           int32
	cats           []int32
	near           bool
	lon, lat, maxD float64 // km
	// a box around the circle (a cheap check before the haversine); wider
	// than the circle: the haversine decides.
	dLat, dLon     float64
	lonBox         bool
	from, to       int64
	hasFrom, hasTo bool
}

func (v *view) filter(q Query, fold func(string) []string) (viewFilter, error) {
	f := viewFilter{city: -1}
	if q.City != "" {
		// as the city_key term query: the query's folded words joined by spaces
		if f.city = v.lookup(strings.Join(fold(q.City), " ")); f.city < 0 {
			f.none = true
		}
	}
	if len(q.Categories) > 0 {
		for _, c := range q.Categories {
			if id := v.lookup(strings.Join(fold(c), " ")); id >= 0 {
				f.cats = append(f.cats, id)
			}
		}
		if len(f.cats) == 0 {
			f.none = true
		}
	}
	if q.Near != nil {
		// as Bleve's geo distance query: haversine on the decoded point <= radius
		m, err := geo.ParseDistance(fmt.Sprintf("%gkm", q.RadiusKm))
		if err != nil {
			return f, err
		}
		f.near, f.lon, f.lat, f.maxD = true, q.Near.Lon, q.Near.Lat, m/1000
		// conservative: the smallest earth radius, plus 1%
		rad := m * 1.01 / 6356752.0
		f.dLat = rad * 180 / math.Pi
		if lat := q.Near.Lat * math.Pi / 180; math.Abs(lat)+rad < math.Pi/2-0.01 {
			if s := math.Sin(rad) / math.Cos(lat); s < 1 {
				f.lonBox, f.dLon = true, math.Asin(s)*180/math.Pi
			}
		}
	}
	if !q.From.IsZero() {
		f.from, f.hasFrom = q.From.UnixNano(), true
	}
	if !q.To.IsZero() {
		f.to, f.hasTo = q.To.UnixNano(), true
	}
	return f, nil
}

// dateOnly reports whether f has no filter besides the date range.
func (f *viewFilter) dateOnly() bool { return f.city < 0 && f.cats == nil && !f.near }

// match reports whether x passes f's filters other than the date range.
func (f *viewFilter) match(x *hot) bool {
	ok, _ := f.matchKm(x)
	return ok
}

// matchKm is match, with the haversine distance in km from f's point
// when f has one (geo.Haversin is symmetric to the bit, so it is also the
// distance Bleve's sort computes from the point).
func (f *viewFilter) matchKm(x *hot) (bool, float64) {
	if f.city >= 0 && x.cityKey != f.city {
		return false, 0
	}
	if f.cats != nil && !slices.Contains(f.cats, x.catKey) {
		return false, 0
	}
	if !f.near {
		return true, 0
	}
	if math.Abs(x.qlat-f.lat) > f.dLat {
		return false, 0
	}
	if f.lonBox {
		dl := math.Abs(x.qlon - f.lon)
		if dl > 180 {
			dl = 360 - dl
		}
		if dl > f.dLon {
			return false, 0
		}
	}
	km := geo.Haversin(x.qlon, x.qlat, f.lon, f.lat)
	return km <= f.maxD, km
}

// cellOf is the 1° cell of a location.
func cellOf(lat, lon float64) [2]int16 {
	return [2]int16{int16(math.Floor(lat)), int16(math.Floor(lon))}
}

// candidates are the positions in [lo, hi), relative to lo and in order,
// of the documents that can pass f: those of its city, else of its
// categories, else of the cells its circle's box touches, else all. f
// still decides each of them.
func (v *view) candidates(f *viewFilter, lo, hi int) iter.Seq[int] {
	var lists [][]int32
	switch {
	case f.city >= 0:
		lists = [][]int32{v.byCity[f.city]}
	case f.cats != nil:
		for _, c := range f.cats {
			lists = append(lists, v.byCat[c])
		}
	case f.near && f.lonBox && f.lon-f.dLon > -180 && f.lon+f.dLon < 180 && f.lat-f.dLat > -90 && f.lat+f.dLat < 90 &&
		(math.Floor(f.lat+f.dLat)-math.Floor(f.lat-f.dLat)+1)*(math.Floor(f.lon+f.dLon)-math.Floor(f.lon-f.dLon)+1) <= 64:
		for la := math.Floor(f.lat - f.dLat); la <= f.lat+f.dLat; la++ {
			for lo := math.Floor(f.lon - f.dLon); lo <= f.lon+f.dLon; lo++ {
				lists = append(lists, v.byCell[cellOf(la, lo)])
			}
		}
	}
	return func(yield func(int) bool) {
		if lists == nil {
			for i := range hi - lo {
				if !yield(i) {
					return
				}
			}
			return
		}
		// each list's part in [lo, hi), merged: the smallest head first
		heads := make([][]int32, 0, len(lists))
		for _, l := range lists {
			a, _ := slices.BinarySearch(l, int32(lo))
			b, _ := slices.BinarySearch(l, int32(hi))
			if a < b {
				heads = append(heads, l[a:b])
			}
		}
		for len(heads) > 0 {
			m := 0
			for j := 1; j < len(heads); j++ {
				if heads[j][0] < heads[m][0] {
					m = j
				}
			}
			if !yield(int(heads[m][0]) - lo) {
				return
			}
			if heads[m] = heads[m][1:]; len(heads[m]) == 0 {
				heads = slices.Delete(heads, m, m+1)
			}
		}
	}
}

// search answers a query for which viewable is true.
// outside reports whether any document starts outside [from, to) (a zero
// bound is open): when none does, a date filter restricts nothing.
func (v *view) outside(from, to time.Time) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if len(v.hot) == 0 {
		return false
	}
	first, last := v.hot[0].at, v.hot[len(v.hot)-1].at
	return (!from.IsZero() && first < from.UnixNano()) || (!to.IsZero() && last >= to.UnixNano())
}

func (v *view) search(q Query, fold func(string) []string) (Result, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	f, err := v.filter(q, fold)
	if err != nil {
		return Result{}, err
	}
	var out Result
	if q.Facets {
		out.FacetsShown, out.Categories, out.Cities = true, []FacetCount{}, []FacetCount{}
	}
	// the date range is a range of sorted
	lo, hi := 0, len(v.sorted)
	if f.hasFrom {
		lo, _ = slices.BinarySearchFunc(v.hot, f.from, func(x hot, t int64) int { return cmpInt(x.at, t) })
	}
	if f.hasTo {
		hi, _ = slices.BinarySearchFunc(v.hot, f.to, func(x hot, t int64) int { return cmpInt(x.at, t) })
		hi = max(hi, lo)
	}
	if f.none {
		if q.After != "" {
			if _, err := decodeCursor(q.After, q.Sort, map[Sort]int{SortDate: 1, SortDistance: 2}[q.Sort]); err != nil {
				return Result{}, err
			}
		}
		return out, nil
	}
	rng, hots := v.sorted[lo:hi], v.hot[lo:hi]
	var cats, cities []int
	if q.Facets {
		cats, cities = make([]int, len(v.names)), make([]int, len(v.names))
	}
	// tally reports whether a document matches the filters, counting it
	// in the total and the facets if it does, and its distance in km
	tally := func(y *hot) (bool, float64) {
		ok, km := f.matchKm(y)
		if !ok {
			return false, 0
		}
		out.Total++
		if cats != nil {
			cats[y.catFacet]++
			cities[y.cityFacet]++
		}
		return true, km
	}
	if q.Sort == SortDate {
		var after string
		if q.After != "" {
			key, err := decodeCursor(q.After, SortDate, 1)
			if err != nil {
				return Result{}, err
			}
			s, ok := key[0].(string)
			if !ok {
				return Result{}, ErrBadCursor
			}
			if at, _, _ := strings.Cut(s, "|"); !validSortTime(at) {
				return Result{}, ErrBadCursor
			}
			after = s
		}
		start := 0
		if after != "" {
			start, _ = slices.BinarySearchFunc(rng, after, func(x *fact, k string) int { return strings.Compare(x.key, k) })
			for start < len(rng) && rng[start].key <= after {
				start++
			}
		}
		if f.dateOnly() {
			// every document of the range: the page is a slice of it, and
			// the counts are those of every document less those outside it
			out.Total = len(hots)
			if cats != nil {
				copy(cats, v.allCats)
				copy(cities, v.allCities)
				for _, part := range [][]hot{v.hot[:lo], v.hot[hi:]} {
					for i := range part {
						cats[part[i].catFacet]--
						cities[part[i].cityFacet]--
					}
				}
			}
			for _, x := range rng[start:min(len(rng), start+q.First+1)] {
				out.Hits = append(out.Hits, Hit{ID: x.id, Cursor: encodeCursor(SortDate, []any{x.key})})
			}
			hots = nil
		}
		for i := range v.candidates(&f, lo, hi) {
			if hots == nil {
				break
			}
			if ok, _ := tally(&hots[i]); !ok {
				continue
			}
			if i >= start && len(out.Hits) <= q.First {
				x := rng[i]
				h := Hit{ID: x.id, Cursor: encodeCursor(SortDate, []any{x.key})}
				if q.Near != nil {
					d := DistanceKm(*q.Near, GeoPoint{Lat: x.lat, Lon: x.lon})
					h.DistanceKm = &d
				}
				out.Hits = append(out.Hits, h)
			}
		}
	} else {
		var cd float64
		var ckey string
		if q.After != "" {
			key, err := decodeCursor(q.After, SortDistance, 2)
			if err != nil {
				return Result{}, err
			}
			ds, ok1 := key[0].(string)
			ks, ok2 := key[1].(string)
			if !ok1 || !ok2 {
				return Result{}, ErrBadCursor
			}
			if cd, err = strconv.ParseFloat(ds, 64); err != nil {
				return Result{}, ErrBadCursor
			}
			ckey = ks
		}
		page := nearest{n: q.First + 1}
		for i := range v.candidates(&f, lo, hi) {
			ok, km := tally(&hots[i])
			if !ok {
				continue
			}
			x := rng[i]
			// as Bleve's geo distance sort (km: meters / 1000)
			d := km * 1000 / 1000
			if q.After != "" && (d < cd || (d == cd && x.key <= ckey)) {
				continue
			}
			page.add(nearFact{x, d})
		}
		out.Hits = page.hits(*q.Near)
	}
	if len(out.Hits) > q.First {
		out.Hits, out.HasNext = out.Hits[:q.First], true
	}
	if q.Facets {
		out.Categories, out.Cities = v.facet(cats), v.facet(cities)
	}
	return out, nil
}

// nearFact is a document and its distance (Bleve's geo distance sort).
type nearFact struct {
	x *fact
	d float64
}

// nearest keeps the first n documents by (distance, key) of those added:
// a max-heap of them (most added documents are further than its top, one
// comparison of distances).
type nearest struct {
	n    int
	heap []nearFact
}

func nearer(a, b nearFact) int {
	if a.d != b.d {
		if a.d < b.d {
			return -1
		}
		return 1
	}
	return strings.Compare(a.x.key, b.x.key)
}

func (p *nearest) add(c nearFact) {
	h := p.heap
	if len(h) == p.n {
		if p.n == 0 || nearer(c, h[0]) >= 0 {
			return
		}
		h[0] = c // replace the furthest, sift down
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(h) && nearer(h[l], h[m]) > 0 {
				m = l
			}
			if l+1 < len(h) && nearer(h[l+1], h[m]) > 0 {
				m = l + 1
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
		return
	}
	h = append(h, c) // sift up
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if nearer(h[i], h[parent]) <= 0 {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	p.heap = h
}

// hits are the documents kept, nearest first.
func (p *nearest) hits(from GeoPoint) []Hit {
	slices.SortFunc(p.heap, nearer)
	var out []Hit
	for _, h := range p.heap {
		d := DistanceKm(from, GeoPoint{Lat: h.x.lat, Lon: h.x.lon})
		out = append(out, Hit{ID: h.x.id, DistanceKm: &d,
			Cursor: encodeCursor(SortDistance, []any{strconv.FormatFloat(h.d, 'f', -1, 64), h.x.key})})
	}
	return out
}

// facet is Bleve's terms facet of counts (topFacets).
func (v *view) facet(counts []int) []FacetCount { return topFacets(v.names, counts) }

// topFacets is Bleve's terms facet of counts by value id (names): the 50
// largest, by count then value. The in-memory view and the relevance
// pages' segment arrays both count this way.
func topFacets(names []string, counts []int) []FacetCount {
	out := []FacetCount{}
	for id, n := range counts {
		if n > 0 {
			out = append(out, FacetCount{Value: names[id], Count: n})
		}
	}
	slices.SortFunc(out, func(a, b FacetCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out[:min(len(out), 50)]
}

// smallest returns the n smallest elements of s (in no order); s is reordered.
func smallest[T any](s []T, n int, cmp func(a, b T) int) []T {
	// quickselect
	lo, hi := 0, len(s)-1
	for lo < hi {
		p := s[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for cmp(s[i], p) < 0 {
				i++
			}
			for cmp(s[j], p) > 0 {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		switch {
		case n-1 <= j:
			hi = j
		case n-1 >= i:
			lo = i
		default:
			return s[:n]
		}
	}
	return s[:n]
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
