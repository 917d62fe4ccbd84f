package search

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/document"
	lev "github.com/blevesearch/vellum/levenshtein"
)

// The in-memory text index: what the embedded engine's text queries
// (textQuery) read of the Bleve index, kept next to the view so that a text
// search is answered without Bleve's searchers (at 100,000 events they were
// two thirds of a search's CPU: an iterator, a DocumentMatch and a heap step
// per posting of every clause).
//
// It holds, per analysed field the text query reads, each term's postings
// (document slot and term frequency) and each document's field norm, as
// Bleve's index has them, and scores a query the way Bleve's searchers do:
// TermQueryScorer's tf-idf for each term, DisjunctionQueryScorer's coord for
// each word's clauses and the typo candidates, ConjunctionQueryScorer's sum
// over the words, with the query norm of the outermost searcher, every sum
// taken in the order Bleve's searchers take it (their children sorted by
// count). Scores are therefore Bleve's, bit for bit, and so are pages and
// cursors (TestTextAnswersAsTheIndex). One difference: typo candidates are
// the terms some live document has; Bleve also proposes terms left in a
// segment's dictionary by deleted documents until a merge drops them.

// textFields are the analysed fields textQuery reads.
var textFields = [...]string{"name", "artists", "city", "venue", "description", "all", "stem"}

const (
	tfAll  = 5 // index of "all" in textFields
	tfStem = 6 // index of "stem"
	nText  = len(textFields)
)

// textFieldIndex maps a field name to its index in textFields.
var textFieldIndex = func() map[string]int {
	m := map[string]int{}
	for i, f := range textFields {
		m[f] = i
	}
	return m
}()

// disjunctionSliceMax is the most clauses Bleve's disjunction scores with
// its slice searcher (searcher.DisjunctionHeapTakeover); above it, a heap
// searcher adds the clause scores in another order, and the index answers.
const disjunctionSliceMax = 10

// postings are one term's documents in one field, by slot.
type postings struct {
	field int
	term  string
	slots []int32
	freqs []uint16
	norms []float32 // the document's field norm
	live  int       // documents alive with the term (Bleve's term count)
}

// termFreq is a term and its frequency in a field of a document.
type termFreq struct {
	term string
	freq int
}

// docText is the analysis of a document's text fields.
type docText struct {
	sum   uint64 // of the raw values: an unchanged text keeps its postings
	terms [nText][]termFreq
	norms [nText]float32
}

// analyzeText analyses the text fields of a mapped document with their
// own analyzers (as Bleve does when indexing it).
func analyzeText(doc *document.Document, d Document) *docText {
	out := &docText{sum: textSum(d)}
	var lens [nText]int
	var freqs [nText]map[string]int
	for _, f := range doc.Fields {
		tf, ok := f.(*document.TextField)
		if !ok {
			continue
		}
		i, ok := textFieldIndex[tf.Name()]
		if !ok {
			continue
		}
		tf.Analyze()
		lens[i] += tf.AnalyzedLength()
		if freqs[i] == nil {
			freqs[i] = map[string]int{}
		}
		for term, f := range tf.AnalyzedTokenFrequencies() {
			freqs[i][term] += f.Frequency()
		}
	}
	for i := range nText {
		for term, n := range freqs[i] {
			out.terms[i] = append(out.terms[i], termFreq{term, n})
		}
		slices.SortFunc(out.terms[i], func(a, b termFreq) int { return strings.Compare(a.term, b.term) })
		out.norms[i] = textNorm(lens[i])
	}
	return out
}

// textNorm is Bleve's field norm for a field of n tokens (zapx keeps it as
// a float32).
func textNorm(n int) float32 { return float32(1.0 / math.Sqrt(float64(n))) }

// textSum identifies the raw text of d.
func textSum(d Document) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, s := range append([]string{d.Name, d.Description, d.Venue, d.City}, d.Artists...) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * prime
		}
		h = (h ^ 0xff) * prime
	}
	return h | 1 // 0: unknown (loaded from the index)
}

// textIndex is the postings of the text fields (guarded by view.mu).
type textIndex struct {
	dict  [nText]map[string]int32 // term -> lists index
	lists []*postings
	hot   []hot // by slot: what the filters read
	// bySlot is the document of each slot (nil: free); dead counts the
	// free slots, reclaimed by compact.
	bySlot []*fact
	dead   int
	// allTerms are the terms of `all` in order (typo candidates), rebuilt
	// when a term is added; fuzzy caches the candidates of a word.
	allTerms []string
	allDirty bool
	fuzzyMu  sync.Mutex
	fuzzy    map[string][]fuzzyCand
}

type fuzzyCand struct {
	list int32
	dist uint8
}

func (t *textIndex) init() {
	for i := range t.dict {
		if t.dict[i] == nil {
			t.dict[i] = map[string]int32{}
		}
	}
}

// add gives f a new slot with the postings of dt (view.mu held).
func (t *textIndex) add(f *fact, dt *docText) {
	t.init()
	slot := int32(len(t.bySlot))
	t.bySlot = append(t.bySlot, f)
	t.hot = append(t.hot, f.hot())
	f.slot, f.textSum = slot, dt.sum
	f.terms = f.terms[:0]
	for i := range nText {
		for _, tf := range dt.terms[i] {
			id, ok := t.dict[i][tf.term]
			if !ok {
				id = int32(len(t.lists))
				t.lists = append(t.lists, &postings{field: i, term: tf.term})
				t.dict[i][tf.term] = id
				if i == tfAll {
					t.allDirty = true
				}
			}
			p := t.lists[id]
			p.slots = append(p.slots, slot)
			p.freqs = append(p.freqs, uint16(min(tf.freq, math.MaxUint16)))
			p.norms = append(p.norms, dt.norms[i])
			p.live++
			f.terms = append(f.terms, id)
		}
	}
}

// remove frees f's slot (view.mu held).
func (t *textIndex) remove(f *fact) {
	if f.slot < 0 || int(f.slot) >= len(t.bySlot) || t.bySlot[f.slot] != f {
		return
	}
	for _, id := range f.terms {
		t.lists[id].live--
	}
	t.bySlot[f.slot] = nil
	t.dead++
}

// move hands old's slot and postings to f (an unchanged text).
func (t *textIndex) move(old, f *fact) {
	f.slot, f.textSum, f.terms = old.slot, old.textSum, old.terms
	t.bySlot[f.slot] = f
	t.hot[f.slot] = f.hot()
}

// compact renumbers the live slots and drops the postings of freed ones
// once they are a fifth of the slots (view.mu held).
func (t *textIndex) compact() {
	if t.dead < 1024 || t.dead*5 < len(t.bySlot) {
		return
	}
	renum := make([]int32, len(t.bySlot))
	var live []*fact
	for s, f := range t.bySlot {
		renum[s] = -1
		if f != nil {
			renum[s] = int32(len(live))
			f.slot = int32(len(live))
			live = append(live, f)
		}
	}
	hots := make([]hot, 0, len(live))
	for s, h := range t.hot {
		if renum[s] >= 0 {
			hots = append(hots, h)
		}
	}
	t.hot = hots
	for _, p := range t.lists {
		if p == nil {
			continue
		}
		if p.live == 0 {
			delete(t.dict[p.field], p.term)
			if p.field == tfAll {
				t.allDirty = true
			}
			p.slots, p.freqs, p.norms = nil, nil, nil
			continue
		}
		slots, freqs, norms := make([]int32, 0, p.live), make([]uint16, 0, p.live), make([]float32, 0, p.live)
		for j, s := range p.slots {
			if n := renum[s]; n >= 0 {
				slots, freqs, norms = append(slots, n), append(freqs, p.freqs[j]), append(norms, p.norms[j])
			}
		}
		p.slots, p.freqs, p.norms = slots, freqs, norms
	}
	t.bySlot, t.dead = live, 0
}

// candidates are the typo candidates of word in `all` within fz edits,
// the first letter fixed, in term order (Bleve's fuzzy searcher with
// prefix 1); view.mu held for reading.
func (t *textIndex) candidates(word string, fz int) []fuzzyCand {
	key := string(rune('0'+fz)) + word
	t.fuzzyMu.Lock()
	if t.allDirty || t.allTerms == nil {
		t.allTerms = t.allTerms[:0]
		for term := range t.dict[tfAll] {
			t.allTerms = append(t.allTerms, term)
		}
		slices.Sort(t.allTerms)
		t.allDirty, t.fuzzy = false, nil
	}
	if c, ok := t.fuzzy[key]; ok {
		t.fuzzyMu.Unlock()
		return c
	}
	terms := t.allTerms
	t.fuzzyMu.Unlock()

	prefix := word
	for i := range word {
		if i >= 1 {
			prefix = word[:i]
			break
		}
	}
	var out []fuzzyCand
	if dfa, err := levBuilders()[fz-1].BuildDfa(word, uint8(fz)); err == nil {
		lo, _ := slices.BinarySearch(terms, prefix)
		for _, term := range terms[lo:] {
			if !strings.HasPrefix(term, prefix) {
				break
			}
			if ok, d := dfa.MatchAndDistance(term); ok {
				out = append(out, fuzzyCand{t.dict[tfAll][term], d})
			}
		}
	}
	t.fuzzyMu.Lock()
	if t.fuzzy == nil || len(t.fuzzy) > 10000 {
		t.fuzzy = map[string][]fuzzyCand{}
	}
	t.fuzzy[key] = out
	t.fuzzyMu.Unlock()
	return out
}

// levBuilders are Bleve's Levenshtein automaton builders (edit distance 1
// and 2, transpositions counting as one edit).
var levBuilders = sync.OnceValue(func() [2]*lev.LevenshteinAutomatonBuilder {
	var out [2]*lev.LevenshteinAutomatonBuilder
	for i := range out {
		b, err := lev.NewLevenshteinAutomatonBuilder(uint8(i+1), true)
		if err != nil {
			panic(err)
		}
		out[i] = b
	}
	return out
})

// qnode is one searcher of Bleve's tree for a text query: a term (list,
// possibly nil) or a disjunction of kids, sorted as Bleve sorts them.
type qnode struct {
	list               *postings
	boost, idf, weight float64
	qw                 float64 // queryBoost * idf * queryNorm
	count              int
	kids               []*qnode
}

func termNode(p *postings, boost float64, docTotal int) *qnode {
	n := &qnode{list: p, boost: boost}
	if p != nil {
		n.count = p.live
	}
	n.idf = 1.0 + math.Log(float64(docTotal)/float64(uint64(n.count)+1))
	w := n.boost * n.idf
	n.weight = w * w
	return n
}

// disjunctionNode sorts kids by count (sort.Sort, as Bleve's
// OrderedSearcherList: the same comparisons give the same order).
func disjunctionNode(kids []*qnode) *qnode {
	sort.Sort(byCount(kids))
	n := &qnode{kids: kids}
	for _, k := range kids {
		n.count += k.count
		n.weight += k.weight
	}
	return n
}

type byCount []*qnode

func (s byCount) Len() int           { return len(s) }
func (s byCount) Less(i, j int) bool { return s[i].count < s[j].count }
func (s byCount) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

func (n *qnode) setNorm(qn float64) {
	n.qw = n.boost * n.idf * qn
	for _, k := range n.kids {
		k.setNorm(qn)
	}
}

// textPlan is Bleve's searcher tree of textQuery(words): a conjunction of
// one disjunction per word. ok is false when Bleve would not score it this
// way (a stem analysis that is not one term, more typo candidates than its
// slice searcher takes).
func (t *textIndex) textPlan(words []string, stem func(string) []string, docTotal int) (*qnode, bool) {
	t.init()
	term := func(field int, w string, boost float64) *qnode {
		var p *postings
		if id, ok := t.dict[field][w]; ok {
			p = t.lists[id]
		}
		return termNode(p, boost, docTotal)
	}
	var conj []*qnode
	for _, w := range words {
		kids := []*qnode{
			term(0, w, boostName), term(1, w, boostArtists), term(2, w, boostCity),
			term(3, w, boostVenue), term(4, w, boostDescription),
		}
		if fz := fuzziness(w); fz > 0 {
			var cands []*qnode
			for _, c := range t.candidates(w, fz) {
				p := t.lists[c.list]
				if p.live == 0 { // a term no live document has: not in a merged dictionary
					continue
				}
				cands = append(cands, termNode(p, boostFuzzy*(1/float64(c.dist+1)), docTotal))
			}
			switch {
			case len(cands) == 0:
				kids = append(kids, term(tfAll, w, boostFuzzy))
			case len(cands) == 1: // the same as a disjunction of it
				kids = append(kids, cands[0])
			case len(cands) > disjunctionSliceMax:
				return nil, false
			default:
				kids = append(kids, disjunctionNode(cands))
			}
		}
		// the stem clause is a match query, a disjunction of its one term:
		// the same count, weight and score (0 + s, times coord 1/1) as
		// the term alone
		st := stem(w)
		if len(st) != 1 {
			return nil, false
		}
		kids = append(kids, term(tfStem, st[0], boostStem))
		conj = append(conj, disjunctionNode(kids))
	}
	root := disjunctionNode(conj) // sorted and weighed like the conjunction
	root.setNorm(1.0 / math.Sqrt(root.weight))
	return root, true
}

// textScratch is one search's working memory, by slot.
type textScratch struct {
	acc     [2][]float64 // clause sums: [0] a word's, [1] a typo disjunction's
	cnt     [2][]uint8
	touched [2][]int32
	total   []float64 // the sum over the words so far
	words   []uint8   // how many words matched
	matched []int32
	found   []scoredSlot // the matches
	kept    []scored     // the matches past the filters and the cursor
}

// scratches keeps textScratches between searches: a few megabytes each at
// 100,000 documents, so not a sync.Pool, which every GC empties (each
// search after it would allocate and clear its own).
var scratches = make(chan *textScratch, 32)

func getScratch() *textScratch {
	select {
	case s := <-scratches:
		return s
	default:
		return &textScratch{}
	}
}

func putScratch(s *textScratch) {
	select {
	case scratches <- s:
	default:
	}
}

func (s *textScratch) size(n int) {
	if len(s.total) >= n {
		return
	}
	n = n + n/4
	for i := range 2 {
		s.acc[i], s.cnt[i] = make([]float64, n), make([]uint8, n)
	}
	s.total, s.words = make([]float64, n), make([]uint8, n)
}

// leaf adds the scores of a term to acc at level l, in its turn (Bleve's
// TermQueryScorer.Score).
func (t *textIndex) leaf(s *textScratch, l int, n *qnode) {
	p := n.list
	if p == nil {
		return
	}
	acc, cnt := s.acc[l], s.cnt[l]
	dead := t.dead > 0
	for j, slot := range p.slots {
		if dead && t.bySlot[slot] == nil {
			continue
		}
		tf := math.Sqrt(float64(p.freqs[j]))
		score := tf * float64(p.norms[j]) * n.idf
		if n.qw != 1.0 {
			score = score * n.qw
		}
		if cnt[slot] == 0 {
			s.touched[l] = append(s.touched[l], slot)
		}
		acc[slot] += score
		cnt[slot]++
	}
}

// disjunction evaluates n at level l: the sum of the matching kids' scores
// (in n's order) times coord, left in acc[l] for the slots in touched[l].
func (t *textIndex) disjunction(s *textScratch, l int, n *qnode) {
	for _, k := range n.kids {
		if k.kids == nil {
			t.leaf(s, l, k)
			continue
		}
		// a nested disjunction, evaluated one level down, then added
		t.disjunction(s, l+1, k)
		acc, cnt := s.acc[l], s.cnt[l]
		for _, slot := range s.touched[l+1] {
			if cnt[slot] == 0 {
				s.touched[l] = append(s.touched[l], slot)
			}
			acc[slot] += s.acc[l+1][slot]
			cnt[slot]++
			s.acc[l+1][slot], s.cnt[l+1][slot] = 0, 0
		}
		s.touched[l+1] = s.touched[l+1][:0]
	}
	total := float64(len(n.kids))
	for _, slot := range s.touched[l] {
		coord := float64(s.cnt[l][slot]) / total
		s.acc[l][slot] = s.acc[l][slot] * coord
	}
}

// scoredSlot is a match of a text query.
type scoredSlot struct {
	slot  int32
	score float64
}

// matches evaluates the plan: every slot matching all the words, with its
// score (Bleve's ConjunctionQueryScorer: the words' scores summed in the
// plan's order). The scratch's buffers are left clean.
func (t *textIndex) matches(s *textScratch, root *qnode, out []scoredSlot) []scoredSlot {
	s.size(len(t.bySlot))
	s.matched = s.matched[:0]
	for w, word := range root.kids {
		t.disjunction(s, 0, word)
		for _, slot := range s.touched[0] {
			if int(s.words[slot]) == w {
				s.total[slot] += s.acc[0][slot]
				s.words[slot]++
				if w == 0 {
					s.matched = append(s.matched, slot)
				}
			}
			s.acc[0][slot], s.cnt[0][slot] = 0, 0
		}
		s.touched[0] = s.touched[0][:0]
	}
	all := uint8(len(root.kids))
	for _, slot := range s.matched {
		if s.words[slot] == all {
			out = append(out, scoredSlot{slot, s.total[slot]})
		}
		s.total[slot], s.words[slot] = 0, 0
	}
	return out
}
