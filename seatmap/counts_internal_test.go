package seatmap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSnapshotCounts: an event's counts add its seats by status and its GA
// sections' counts; a GA entry without its capacity (a message written
// before GA carried held, sold and capacity) makes the map unable to tell.
func TestSnapshotCounts(t *testing.T) {
	snap := &Snapshot{
		Seats: []Seat{{SeatID: "a", Status: "AVAILABLE"}, {SeatID: "b", Status: "HELD"}, {SeatID: "c", Status: "SOLD"}, {SeatID: "d", Status: "SOLD"}},
		GeneralAdmission: []GA{{SectionID: "f", Available: 5, Held: 2, Sold: 3, Capacity: 10},
			{SectionID: "g", Available: 0, Held: 0, Sold: 4, Capacity: 4}},
	}
	c, ok := snap.counts()
	require.True(t, ok)
	require.Equal(t, Counts{Available: 6, Held: 3, Sold: 9, Capacity: 18}, c)

	old := &Snapshot{GeneralAdmission: []GA{{SectionID: "f", Available: 5, Version: 9}}}
	_, ok = old.counts()
	require.False(t, ok)
}
