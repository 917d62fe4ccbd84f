package search

import (
	"encoding/binary"
	"errors"
	"sort"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// A RELEVANCE search needs, of every match, its sort key (to break score
// ties) and, when facets are asked, its category and city. Bleve reads
// them from the doc values for every match (a binary search per field per
// match; most of a text search with many matches). Segments never change,
// so segFacts reads them once per segment, into arrays indexed by the
// segment's document number; a match is then three array reads.

// segFacts is what RELEVANCE searches read of each document of a segment.
type segFacts struct {
	key       []string
	cat, city []int32 // interned facet values (factsCache.names); -1: none
}

// factsCache holds the segFacts of the segments of recent snapshots.
type factsCache struct {
	mu    sync.Mutex
	segs  map[segment.Segment]*segFacts
	ids   map[string]int32
	names []string
}

var errNoFacts = errors.New("search: index reader is not a scorch snapshot")

// snapFacts is a snapshot's segments with their facts and offsets (the
// first global document number of each).
type snapFacts struct {
	facts   []*segFacts
	offsets []uint64
	names   []string
}

// forReader returns the facts of every segment of r, reading those of
// segments it has not seen.
func (c *factsCache) forReader(r index.IndexReader) (snapFacts, error) {
	is, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return snapFacts{}, errNoFacts
	}
	ss := is.Segments()
	out := snapFacts{facts: make([]*segFacts, len(ss)), offsets: make([]uint64, len(ss))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.segs == nil {
		c.segs, c.ids = map[segment.Segment]*segFacts{}, map[string]int32{}
	}
	var running uint64
	built := false
	for i, s := range ss {
		seg := s.Segment()
		out.offsets[i] = running
		running += seg.Count()
		f := c.segs[seg]
		if f == nil {
			var err error
			if f, err = c.read(seg); err != nil {
				return snapFacts{}, err
			}
			c.segs[seg], built = f, true
		}
		out.facts[i] = f
	}
	if built { // forget the segments merged away
		live := make(map[segment.Segment]bool, len(ss))
		for _, s := range ss {
			live[s.Segment()] = true
		}
		for seg := range c.segs {
			if !live[seg] {
				delete(c.segs, seg)
			}
		}
	}
	out.names = c.names
	return out, nil
}

// read reads the facts of every document of seg (c.mu held).
func (c *factsCache) read(seg segment.Segment) (*segFacts, error) {
	n := seg.Count()
	f := &segFacts{key: make([]string, n), cat: make([]int32, n), city: make([]int32, n)}
	dv, ok := seg.(segment.DocValueVisitable)
	if !ok {
		return nil, errNoFacts
	}
	intern := func(b []byte) int32 {
		if id, ok := c.ids[string(b)]; ok {
			return id
		}
		id := int32(len(c.names))
		s := string(b)
		c.ids[s] = id
		c.names = append(c.names, s)
		return id
	}
	fields := []string{"sort", "category_facet", "city_facet"}
	var dvs segment.DocVisitState
	for i := range n {
		f.cat[i], f.city[i] = -1, -1
		var err error
		dvs, err = dv.VisitDocValues(i, fields, func(field string, term []byte) {
			switch field {
			case "sort":
				f.key[i] = string(term)
			case "category_facet":
				f.cat[i] = intern(term)
			case "city_facet":
				f.city[i] = intern(term)
			}
		}, dvs)
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// locate returns the segment and document number within it of a global
// document number.
func (s snapFacts) locate(num uint64) (*segFacts, uint64) {
	i := sort.Search(len(s.offsets), func(i int) bool { return s.offsets[i] > num }) - 1
	return s.facts[i], num - s.offsets[i]
}

// docNum is the global document number of a scorch internal id.
func docNum(id index.IndexInternalID) (uint64, bool) {
	if len(id) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(id), true
}

// facets counts the categories and cities of the documents nums as
// Bleve's terms facet does (the 50 largest, by count then value).
func (s snapFacts) facets(nums []uint64) (cats, cities []FacetCount) {
	cc, ct := make([]int, len(s.names)), make([]int, len(s.names))
	for _, num := range nums {
		f, i := s.locate(num)
		if c := f.cat[i]; c >= 0 {
			cc[c]++
		}
		if c := f.city[i]; c >= 0 {
			ct[c]++
		}
	}
	return s.top(cc), s.top(ct)
}

func (s snapFacts) top(counts []int) []FacetCount { return topFacets(s.names, counts) }
