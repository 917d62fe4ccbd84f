package search

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/blevesearch/bleve/v2"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// scored is one match of a RELEVANCE search, as the collector saw it.
type scored struct {
	score float64
	id    index.IndexInternalID
	key   string // the `sort` doc value, read only for the candidates
}

// byRelevance returns the first n matches of qq in (score desc, sort key)
// order after the cursor (score, key), with the total count, and Bleve's
// facets when facets is set. It is the order Bleve's collector gives with
// SortOrder{score desc, sort}, without reading the `sort` doc value of
// every match: the collector sorts by score alone (no doc value read per
// hit), every match's score is kept, and the key is read only for the
// matches that can still be on the page (a score at least the n-th best).
func (b *Bleve) byRelevance(ctx context.Context, qq query.Query, n int, after []any, facets bool) ([]*bsearch.DocumentMatch, int, bsearch.FacetResults, error) {
	var afterScore float64
	var afterKey string
	if after != nil {
		var ok1, ok2 bool
		afterScore, ok1 = after[0].(float64)
		afterKey, ok2 = after[1].(string)
		if !ok1 || !ok2 {
			return nil, 0, nil, ErrBadCursor
		}
	}
	req := bleve.NewSearchRequestOptions(qq, n, 0, false)
	req.Sort = bsearch.SortOrder{&bsearch.SortScore{Desc: true}}
	if facets {
		addFacets(req)
	}
	var page []*bsearch.DocumentMatch
	var pageErr error
	handler := func(sctx *bsearch.SearchContext) (bsearch.DocumentMatchHandler, bool, error) {
		var hits []scored
		var ids []byte // the hits' internal ids, back to back
		return func(d *bsearch.DocumentMatch) error {
			if d != nil {
				// strictly after the cursor; equal scores are decided by key below
				if after == nil || d.Score <= afterScore {
					start := len(ids)
					ids = append(ids, d.IndexInternalID...)
					hits = append(hits, scored{score: d.Score, id: ids[start:len(ids):len(ids)]})
				}
				sctx.DocumentMatchPool.Put(d)
				return nil
			}
			page, pageErr = b.relevancePage(sctx.IndexReader, hits, n, after != nil, afterScore, afterKey)
			return nil
		}, false, nil
	}
	ctx = context.WithValue(ctx, bsearch.MakeDocumentMatchHandlerKey, bsearch.MakeDocumentMatchHandler(handler))
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("search: bleve: %w", err)
	}
	if pageErr != nil {
		return nil, 0, nil, fmt.Errorf("search: bleve: %w", pageErr)
	}
	return page, int(res.Total), res.Facets, nil
}

// relevancePage picks the first n of hits in (score desc, key asc) order
// after the cursor, reading the keys (and ids) of the candidates only.
func (b *Bleve) relevancePage(r index.IndexReader, hits []scored, n int, hasAfter bool, afterScore float64, afterKey string) ([]*bsearch.DocumentMatch, error) {
	if n <= 0 || len(hits) == 0 {
		return nil, nil
	}
	dvr, err := r.DocValueReader([]string{"sort"})
	if err != nil {
		return nil, err
	}
	// readKeys reads the keys of hs, in index order
	readKeys := func(hs []scored) error {
		slices.SortFunc(hs, func(a, b scored) int { return bytes.Compare(a.id, b.id) })
		for i := range hs {
			if err := dvr.VisitDocValues(hs[i].id, func(_ string, term []byte) { hs[i].key = string(term) }); err != nil {
				return err
			}
		}
		return nil
	}
	if hasAfter {
		// the matches with the cursor's score come after it by key only
		var ties []scored
		rest := hits[:0:0]
		for _, h := range hits {
			if h.score == afterScore {
				ties = append(ties, h)
			} else {
				rest = append(rest, h)
			}
		}
		if len(ties) > 0 {
			if err := readKeys(ties); err != nil {
				return nil, err
			}
			for _, h := range ties {
				if h.key > afterKey {
					rest = append(rest, h)
				}
			}
		}
		hits = rest
		if len(hits) == 0 {
			return nil, nil
		}
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
	var cand, unread []scored
	for _, h := range hits {
		if h.score < threshold {
			continue
		}
		if h.key == "" {
			unread = append(unread, h)
		} else {
			cand = append(cand, h)
		}
	}
	if err := readKeys(unread); err != nil {
		return nil, err
	}
	cand = append(cand, unread...)
	slices.SortFunc(cand, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	cand = cand[:min(n, len(cand))]
	out := make([]*bsearch.DocumentMatch, len(cand))
	for i, h := range cand {
		id, err := r.ExternalID(h.id)
		if err != nil {
			return nil, err
		}
		out[i] = &bsearch.DocumentMatch{ID: id, Score: h.score, Sort: []string{"_score", h.key}, DecodedSort: []string{"_score", h.key}}
	}
	return out, nil
}
