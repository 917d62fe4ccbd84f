package seatmap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Projections are dropped least recently used first when they hold more
// seats than maxProjectionEntries together, never the one just loaded.
func TestProjectionsBoundedBySeats(t *testing.T) {
	s := New(nil, nil, Config{})
	big := maxProjectionEntries / 3
	for i, id := range []string{"a", "b", "c"} {
		p := s.projection(id)
		p.used.Store(int64(i))
		s.loaded(id, p, big)
	}
	require.Len(t, s.projs, 3)
	p := s.projection("d")
	p.used.Store(0) // the oldest, but just loaded: kept
	s.loaded("d", p, big)
	require.Len(t, s.projs, 3)
	require.NotContains(t, s.projs, "a")
	require.Contains(t, s.projs, "d")
	require.LessOrEqual(t, s.projEntries, maxProjectionEntries)

	s.loaded("d", p, 10) // reloaded smaller
	require.Equal(t, 2*big+10, s.projEntries)
}
