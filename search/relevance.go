package search

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/blevesearch/bleve/v2"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// scored is one match of a RELEVANCE search.
type scored struct {
	score float64
	num   uint64 // global document number in the snapshot (or text slot)
	key   string
}

// relevancePage is a page of a RELEVANCE search with the total and facets.
type relevancePage struct {
	hits          []*bsearch.DocumentMatch
	total         int
	cats, cities  []FacetCount
	facetsCounted bool
}

// byRelevance returns the first n matches of qq in (score desc, sort key)
// order after the cursor (score, key), the total and, when facets is set,
// the facets of every match: the answer of Bleve's collector with
// SortOrder{score desc, sort} and terms facets, without its doc value
// reads per match. The collector sorts by score alone (its fast path) and
// hands every match to a handler that keeps its score and document
// number; at the end, still on the same snapshot, keys and facet values
// come from the segments' facts (segfacts.go), and keys are compared only
// for the matches whose score can still be on the page.
func (b *Bleve) byRelevance(ctx context.Context, qq query.Query, n int, after []any, facets bool) (relevancePage, error) {
	var afterScore float64
	var afterKey string
	if after != nil {
		var ok1, ok2 bool
		afterScore, ok1 = after[0].(float64)
		afterKey, ok2 = after[1].(string)
		if !ok1 || !ok2 {
			return relevancePage{}, ErrBadCursor
		}
	}
	req := bleve.NewSearchRequestOptions(qq, n, 0, false)
	req.Sort = bsearch.SortOrder{&bsearch.SortScore{Desc: true}}
	var out relevancePage
	var endErr error
	handler := func(sctx *bsearch.SearchContext) (bsearch.DocumentMatchHandler, bool, error) {
		var hits []scored
		return func(d *bsearch.DocumentMatch) error {
			if d != nil {
				num, ok := docNum(d.IndexInternalID)
				if !ok {
					return errNoFacts
				}
				hits = append(hits, scored{score: d.Score, num: num})
				sctx.DocumentMatchPool.Put(d)
				return nil
			}
			sf, err := b.facts.forReader(sctx.IndexReader)
			if err != nil {
				endErr = err
				return nil
			}
			if facets {
				nums := make([]uint64, len(hits))
				for i, h := range hits {
					nums[i] = h.num
				}
				out.cats, out.cities = sf.facets(nums)
				out.facetsCounted = true
			}
			out.hits, endErr = pickRelevance(sctx.IndexReader, sf, hits, n, after != nil, afterScore, afterKey)
			return nil
		}, false, nil
	}
	ctx = context.WithValue(ctx, bsearch.MakeDocumentMatchHandlerKey, bsearch.MakeDocumentMatchHandler(handler))
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return relevancePage{}, fmt.Errorf("search: bleve: %w", err)
	}
	if endErr != nil {
		return relevancePage{}, fmt.Errorf("search: bleve: %w", endErr)
	}
	out.total = int(res.Total)
	return out, nil
}

// pickRelevance picks the first n of hits in (score desc, key asc) order
// after the cursor.
func pickRelevance(r index.IndexReader, sf snapFacts, hits []scored, n int, hasAfter bool, afterScore float64, afterKey string) ([]*bsearch.DocumentMatch, error) {
	key := func(num uint64) string {
		f, i := sf.locate(num)
		return f.key[i]
	}
	cand := topRelevance(hits, n, hasAfter, afterScore, afterKey, key)
	out := make([]*bsearch.DocumentMatch, len(cand))
	for i, h := range cand {
		id, err := r.ExternalID(binary.BigEndian.AppendUint64(nil, h.num))
		if err != nil {
			return nil, err
		}
		out[i] = &bsearch.DocumentMatch{ID: id, Score: h.score, DecodedSort: []string{"_score", h.key}}
	}
	return out, nil
}

// topRelevance returns the first n of hits in (score desc, key asc) order
// after the cursor, with their keys: the keys of only the hits whose score
// can still be on the page are read. hits is reordered.
func topRelevance(hits []scored, n int, hasAfter bool, afterScore float64, afterKey string, key func(num uint64) string) []scored {
	if hasAfter { // strictly after the cursor
		hits = slices.DeleteFunc(hits, func(h scored) bool {
			return h.score > afterScore || (h.score == afterScore && key(h.num) <= afterKey)
		})
	}
	if n <= 0 || len(hits) == 0 {
		return nil
	}
	// the n-th best score: nothing below it can be on the page
	threshold := hits[0].score
	if len(hits) > n {
		best := make([]float64, 0, n) // the n best scores so far, descending
		for _, h := range hits {
			if len(best) == n && h.score <= best[n-1] {
				continue
			}
			i, _ := slices.BinarySearchFunc(best, h.score, func(a, t float64) int { return cmp.Compare(t, a) })
			if len(best) < n {
				best = append(best, 0)
			}
			copy(best[i+1:], best[i:len(best)-1])
			best[i] = h.score
		}
		threshold = best[n-1]
	} else {
		for _, h := range hits {
			threshold = min(threshold, h.score)
		}
	}
	var cand []scored
	for _, h := range hits {
		if h.score >= threshold {
			h.key = key(h.num)
			cand = append(cand, h)
		}
	}
	slices.SortFunc(cand, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	return cand[:min(n, len(cand))]
}
