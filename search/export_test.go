package search

// SetIndexOnly makes b answer every search with the Bleve index, never its
// in-memory view (tests compare the two).
func SetIndexOnly(b *Bleve, on bool) { b.noView = on }

// SetSeparateCounts makes b count the facets of text searches in a pass of
// their own instead of with the page (tests compare the two).
func SetSeparateCounts(b *Bleve, on bool) { b.separateCounts = on }

// SetKeySort makes b answer RELEVANCE searches with Bleve's sort on the
// `sort` doc value of every match (tests compare with byRelevance).
func SetKeySort(b *Bleve, on bool) { b.keySort = on }

// TextIndexAnswers reports whether b's text index answers q (rather than
// leaving it to Bleve's searchers).
func TextIndexAnswers(b *Bleve, q Query) bool {
	_, ok, _ := b.view.searchText(q, textWords(b.folding(q.Text)), b.folding, b.stemming)
	return ok
}

// TypoCandidates are the typo candidates of a folded word in b's text index.
func TypoCandidates(b *Bleve, word string) []string {
	b.view.mu.RLock()
	defer b.view.mu.RUnlock()
	var out []string
	for _, c := range b.view.text.candidates(word, fuzziness(word)) {
		out = append(out, b.view.text.lists[c.list].term)
	}
	return out
}
