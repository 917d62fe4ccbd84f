package seatmap

import (
	"fmt"
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

// Past maxProjections, each new event's projection drops an old one, never
// one of the recently used (the sample's oldest is older than nearly all).
func TestProjectionsEvictTheLeastRecentlyUsed(t *testing.T) {
	s := New(nil, nil, Config{})
	for i := range maxProjections {
		s.projection(fmt.Sprint(i)).used.Store(int64(i))
	}
	for i := maxProjections; i < maxProjections+1000; i++ {
		s.projection(fmt.Sprint(i)).used.Store(int64(i))
	}
	require.Len(t, s.projs, maxProjections)
	// The newest quarter (the 1,000 new ones among them) all survived: each
	// eviction took the oldest of 16 drawn from all 4,096 (all 16 from the
	// newest quarter: one chance in 4^16). A random pick would drop a
	// quarter of its victims there.
	for i := maxProjections + 1000 - maxProjections/4; i < maxProjections+1000; i++ {
		require.Contains(t, s.projs, fmt.Sprint(i))
	}
}
