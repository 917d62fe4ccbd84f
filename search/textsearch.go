package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	index "github.com/blevesearch/bleve_index_api"
)

// textWords are the words a text query requires, folded: every word but
// the stop words after the first (textQuery and searchText both read them).
func textWords(folded []string) []string {
	var out []string
	for _, t := range folded {
		if stopWords[t] && len(out) > 0 {
			continue
		}
		out = append(out, t)
	}
	return out
}

// loadText fills the text index from the postings of r (at open: the
// index stores no text, and its postings are what the text index holds).
// Slots follow r's document order, so every list comes out in slot order.
func (v *view) loadText(ctx context.Context, r index.IndexReader) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := &v.text
	t.init()
	var slotOf []int32 // by document number, -1: none
	ids, err := r.DocIDReaderAll()
	if err != nil {
		return err
	}
	defer ids.Close()
	for {
		id, err := ids.Next()
		if err != nil {
			return err
		}
		if id == nil {
			break
		}
		ext, err := r.ExternalID(id)
		if err != nil {
			return err
		}
		f := v.byID[ext]
		num, ok := docNum(id)
		if f == nil || !ok {
			return fmt.Errorf("search: load text: document %q is not in the view", ext)
		}
		f.slot = int32(len(t.bySlot))
		for uint64(len(slotOf)) <= num {
			slotOf = append(slotOf, -1)
		}
		slotOf[num] = f.slot
		t.bySlot = append(t.bySlot, f)
		t.hot = append(t.hot, f.hot())
	}
	for i, field := range textFields {
		dict, err := r.FieldDict(field)
		if err != nil {
			return err
		}
		var terms []string
		for e, err := dict.Next(); e != nil || err != nil; e, err = dict.Next() {
			if err != nil {
				_ = dict.Close()
				return err
			}
			terms = append(terms, e.Term)
		}
		_ = dict.Close()
		for _, term := range terms {
			tfr, err := r.TermFieldReader(ctx, []byte(term), field, true, true, false)
			if err != nil {
				return err
			}
			p := &postings{field: i, term: term}
			var d index.TermFieldDoc
			for {
				m, err := tfr.Next(&d)
				if err != nil {
					_ = tfr.Close()
					return err
				}
				if m == nil {
					break
				}
				num, _ := docNum(m.ID)
				if num >= uint64(len(slotOf)) || slotOf[num] < 0 {
					continue
				}
				slot := slotOf[num]
				p.slots = append(p.slots, slot)
				p.freqs = append(p.freqs, uint16(min(m.Freq, math.MaxUint16)))
				p.norms = append(p.norms, float32(m.Norm))
			}
			_ = tfr.Close()
			if len(p.slots) == 0 {
				continue
			}
			if !slices.IsSorted(p.slots) {
				return fmt.Errorf("search: load text: postings of %s:%s out of order", field, term)
			}
			p.live = len(p.slots)
			id := int32(len(t.lists))
			t.lists = append(t.lists, p)
			t.dict[i][term] = id
			for _, s := range p.slots {
				f := t.bySlot[s]
				f.terms = append(f.terms, id)
			}
		}
	}
	t.allDirty = true
	return nil
}

// textReady reports whether the text index has every document of the
// view (mu held).
func (v *view) textReady() bool {
	return len(v.text.bySlot)-v.text.dead == len(v.byID)
}

// searchText answers a text query from the view and its text index as
// the Bleve index would (same matches, scores, order, cursors, totals and
// facets). ok is false when it cannot (textPlan), and the index answers.
func (v *view) searchText(q Query, words []string, fold, stem func(string) []string) (res Result, ok bool, err error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if !v.textReady() || len(words) == 0 {
		return Result{}, false, nil
	}
	var after []any
	if q.After != "" {
		n := map[Sort]int{SortRelevance: 2, SortDate: 1, SortDistance: 2}[q.Sort]
		if after, err = decodeCursor(q.After, q.Sort, n); err != nil {
			return Result{}, true, err
		}
	}
	var afterScore, afterDist float64
	var afterKey string
	if after != nil {
		var ok1, ok2 bool
		switch q.Sort {
		case SortRelevance:
			afterScore, ok1 = after[0].(float64)
			afterKey, ok2 = after[1].(string)
		case SortDate:
			afterKey, ok1 = after[0].(string)
			at, _, _ := strings.Cut(afterKey, "|")
			ok2 = ok1 && validSortTime(at)
		case SortDistance:
			var ds string
			ds, ok1 = after[0].(string)
			afterKey, ok2 = after[1].(string)
			if ok1 {
				afterDist, err = strconv.ParseFloat(ds, 64)
				ok1 = err == nil
			}
		}
		if !ok1 || !ok2 {
			return Result{}, true, ErrBadCursor
		}
	}
	f, err := v.filter(q, fold)
	if err != nil {
		return Result{}, true, err
	}
	var out Result
	if q.Facets {
		out.FacetsShown, out.Categories, out.Cities = true, []FacetCount{}, []FacetCount{}
	}
	if f.none {
		return out, true, nil
	}
	t := &v.text
	root, ok := t.textPlan(words, stem, len(v.byID))
	if !ok {
		return Result{}, false, nil
	}
	s := getScratch()
	defer putScratch(s)
	s.found = t.matches(s, root, s.found[:0])

	var cats, cities []int
	if q.Facets {
		cats, cities = make([]int, len(v.names)), make([]int, len(v.names))
	}
	keyOf := func(slot uint64) string { return t.bySlot[slot].key }
	kept := s.kept[:0]
	near := nearest{n: q.First + 1}
	for _, m := range s.found {
		h := &t.hot[m.slot]
		if (f.hasFrom && h.at < f.from) || (f.hasTo && h.at >= f.to) {
			continue
		}
		ok, km := f.matchKm(h)
		if !ok {
			continue
		}
		out.Total++
		if cats != nil {
			cats[h.catFacet]++
			cities[h.cityFacet]++
		}
		switch q.Sort {
		case SortRelevance:
			kept = append(kept, scored{score: m.score, num: uint64(m.slot)})
		case SortDate:
			if x := t.bySlot[m.slot]; after == nil || x.key > afterKey {
				kept = append(kept, scored{num: uint64(m.slot), key: x.key})
			}
		case SortDistance:
			x := t.bySlot[m.slot]
			// as Bleve's geo distance sort (km: meters / 1000)
			d := km * 1000 / 1000
			if after != nil && (d < afterDist || (d == afterDist && x.key <= afterKey)) {
				continue
			}
			near.add(nearFact{x, d})
		}
	}
	s.kept = kept
	hit := func(x *fact, cursor []any) Hit {
		h := Hit{ID: x.id, Cursor: encodeCursor(q.Sort, cursor)}
		if q.Near != nil {
			d := DistanceKm(*q.Near, GeoPoint{Lat: x.lat, Lon: x.lon})
			h.DistanceKm = &d
		}
		return h
	}
	switch q.Sort {
	case SortRelevance:
		for _, h := range topRelevance(kept, q.First+1, after != nil, afterScore, afterKey, keyOf) {
			out.Hits = append(out.Hits, hit(t.bySlot[h.num], []any{h.score, h.key}))
		}
	case SortDate:
		cmp := func(a, b scored) int { return strings.Compare(a.key, b.key) }
		n := min(len(kept), q.First+1)
		page := smallest(kept, n, cmp)
		slices.SortFunc(page, cmp)
		for _, h := range page {
			out.Hits = append(out.Hits, hit(t.bySlot[h.num], []any{h.key}))
		}
	case SortDistance:
		out.Hits = near.hits(*q.Near)
	}
	if len(out.Hits) > q.First {
		out.Hits, out.HasNext = out.Hits[:q.First], true
	}
	if q.Facets {
		out.Categories, out.Cities = v.facet(cats), v.facet(cities)
	}
	return out, true, nil
}
