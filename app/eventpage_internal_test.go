package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/holds"
)

type pageCounts struct {
	Available, Held, Sold, Capacity int
}

// eventPage reads an event's availability and the counts of the seat map
// shown with it, in one GraphQL request.
func eventPage(t *testing.T, base, eventID string) (avail, onMap pageCounts) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { event(id: $id) {
	  availability { available held sold capacity }
	  seatMap { seats { status } generalAdmission { available } } } }`, "variables": map[string]any{"id": eventID}})
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Event struct {
				Availability pageCounts
				SeatMap      struct {
					Seats            []struct{ Status string }
					GeneralAdmission []struct{ Available int }
				}
			}
		}
		Errors []json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Empty(t, r.Errors)
	for _, s := range r.Data.Event.SeatMap.Seats {
		switch s.Status {
		case "AVAILABLE":
			onMap.Available++
		case "HELD":
			onMap.Held++
		case "SOLD":
			onMap.Sold++
		}
	}
	for _, g := range r.Data.Event.SeatMap.GeneralAdmission {
		onMap.Available += g.Available
	}
	return r.Data.Event.Availability, onMap
}

// TestEventPageCountsItsMap: an event page's availability is counted off
// the live seat map it shows (catalog.LiveCounts), not by a second count
// of the inventory: the two agree even while Postgres has changes the map
// has not been told of (written here without an outbox row, as a relay
// behind would leave them), and the page follows holds as the map does,
// GA units included.
func TestEventPageCountsItsMap(t *testing.T) {
	apps, srvs := seatMapInstances(t, 1)
	a, base := apps[0], srvs[0].URL
	eventID, seats := seatMapEvent(t, a) // 10 seats and a GA floor of 10

	avail, onMap := eventPage(t, base, eventID)
	require.Equal(t, pageCounts{Available: 20, Capacity: 20}, avail)
	require.Equal(t, avail.Available, onMap.Available)

	// Held in Postgres behind the map's back: a count of the inventory
	// would say 18 available, the map (and so the page) still 20.
	_, err := a.Pool.Exec(context.Background(), `UPDATE inventory SET status = 'HELD', hold_id = gen_random_uuid(), owner = 'elsewhere', expires_at = now() + interval '1 hour'
	  WHERE id IN (SELECT id FROM inventory WHERE event_id = $1 AND seat_id = $2::uuid
	               UNION ALL (SELECT id FROM inventory WHERE event_id = $1 AND unit_no IS NOT NULL ORDER BY unit_no LIMIT 1))`,
		eventID, seats[9])
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // past the projection's Refresh: it checks its stream, which has nothing new
	avail, onMap = eventPage(t, base, eventID)
	require.Equal(t, pageCounts{Available: 20, Capacity: 20}, avail)
	require.Equal(t, onMap, pageCounts{Available: 20})

	// Holds through the service reach the page with the map.
	user := auth.User{ID: "fan"}
	_, err = a.Holds.Create(context.Background(), user, holds.CreateRequest{EventID: eventID,
		SeatIDs: seats[:2], IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	ga, err := a.Holds.Create(context.Background(), user, holds.CreateRequest{EventID: eventID,
		GeneralAdmission: []holds.GARequest{{SectionID: gaSection(t, a, eventID), Quantity: 3}}, IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		avail, onMap = eventPage(t, base, eventID)
		return avail.Held == 6
	}, 10*time.Second, 50*time.Millisecond, "the page's availability never showed the holds: %+v", avail)
	// The relay's recount of the GA floor sees the unit held above, the
	// seat stays as the map had it (no message named it).
	require.Equal(t, pageCounts{Available: 14, Held: 6, Capacity: 20}, avail)
	require.Equal(t, avail.Available, onMap.Available)
	require.Equal(t, 2, onMap.Held)
	require.NotEmpty(t, ga.ID)
}

func gaSection(t *testing.T, a *App, eventID string) string {
	t.Helper()
	var id string
	require.NoError(t, a.Pool.QueryRow(context.Background(),
		`SELECT section_id::text FROM inventory WHERE event_id = $1 AND unit_no IS NOT NULL LIMIT 1`, eventID).Scan(&id))
	return id
}

func saleStatus(t *testing.T, base, eventID string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { event(id: $id) { saleStatus } }`,
		"variables": map[string]any{"id": eventID}})
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Data   struct{ Event struct{ SaleStatus string } }
		Errors []json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Empty(t, r.Errors)
	return r.Data.Event.SaleStatus
}

// TestEventRowsForgottenOnCancel: event rows are answered from memory
// (catalog.EventRowsFreshFor), yet a cancellation shows at once on the
// instance that made it and, through the relay's announcement, on the
// others well before that time is up.
func TestEventRowsForgottenOnCancel(t *testing.T) {
	apps, srvs := seatMapInstances(t, 2)
	eventID, _ := seatMapEvent(t, apps[0])
	for _, s := range srvs {
		require.Equal(t, "ON_SALE", saleStatus(t, s.URL, eventID)) // each instance keeps the row
	}
	require.NoError(t, apps[0].Orders.CancelEvent(context.Background(),
		auth.User{ID: "admin", Roles: []string{"admin"}}, eventID, "storm"))
	require.Equal(t, "ENDED", saleStatus(t, srvs[0].URL, eventID)) // a cancelled sale has ended
	start := time.Now()
	require.Eventually(t, func() bool { return saleStatus(t, srvs[1].URL, eventID) == "ENDED" },
		catalog.EventRowsFreshFor/2, 20*time.Millisecond)
	t.Logf("the other instance showed the cancellation after %s", time.Since(start))
}
