package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/fixtures"
)

// TestSeatMapWritesTheSelection: Event.seatMap writes itself from the
// snapshot (graph/model/seatmap.go) instead of through gqlgen's execution;
// the bytes must still be exactly the selection: aliases, fragments,
// @skip/@include and __typename, in the order asked, and two selections
// of the same snapshot do not share their bytes.
func TestSeatMapWritesTheSelection(t *testing.T) {
	t.Parallel()
	b := setupEnv(t, nil)
	ev := fixtures.SmallEvent(t, b.app.Pool, fixtures.EventOptions{Seats: 3})
	const query = `query($id: ID!, $yes: Boolean!) { event(id: $id) { seatMap { __typename e: eventId ... on SeatMap { cursor }
	  seats { ...S st: status v2: version @skip(if: $yes) }
	  ga: generalAdmission { __typename available @include(if: $yes) sectionId } } } }
	fragment S on SeatMapSeat { seatId sectionId v: version }`
	snap, err := b.app.SeatMap.Snapshot(t.Context(), ev.ID)
	require.NoError(t, err)
	for _, yes := range []bool{true, false, true} {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"id": ev.ID, "yes": yes}})
		r := b.post(t, string(body))
		require.Empty(t, r.Errors)
		var data struct {
			Event struct{ SeatMap json.RawMessage }
		}
		require.NoError(t, json.Unmarshal(r.Data, &data))

		var want strings.Builder
		fmt.Fprintf(&want, `{"__typename":"SeatMap","e":%q,"cursor":%q,"seats":[`, ev.ID, snap.Cursor)
		for i, s := range snap.Seats {
			if i > 0 {
				want.WriteString(",")
			}
			fmt.Fprintf(&want, `{"seatId":%q,"sectionId":%q,"v":%d,"st":%q`, s.SeatID, s.SectionID, s.Version, s.Status)
			if !yes {
				fmt.Fprintf(&want, `,"v2":%d`, s.Version)
			}
			want.WriteString("}")
		}
		want.WriteString(`],"ga":[`)
		for i, g := range snap.GeneralAdmission {
			if i > 0 {
				want.WriteString(",")
			}
			want.WriteString(`{"__typename":"GeneralAdmissionState"`)
			if yes {
				fmt.Fprintf(&want, `,"available":%d`, g.Available)
			}
			fmt.Fprintf(&want, `,"sectionId":%q}`, g.SectionID)
		}
		want.WriteString(`]}`)
		require.Len(t, snap.Seats, 3)
		require.Equal(t, want.String(), string(data.Event.SeatMap), "yes=%v", yes)
	}
}
