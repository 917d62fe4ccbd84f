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
