package search

// SetIndexOnly makes b answer every search with the Bleve index, never its
// in-memory view (tests compare the two).
func SetIndexOnly(b *Bleve, on bool) { b.noView = on }
