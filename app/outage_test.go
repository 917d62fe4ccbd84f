package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

const outageSecret = "outage-secret-0123456789abcdef"

const outageEventQuery = `query($id: ID!) { event(id: $id) { id name
	venue { name sections { id name } }
	prices { section { id } price { amount currency } }
	seatMap { cursor seats { seatId status } generalAdmission { sectionId available } } } }`

type eventPage struct {
	Event *struct {
		ID    string
		Name  string
		Venue struct {
			Name     string
			Sections []struct{ ID, Name string }
		}
		Prices  []json.RawMessage
		SeatMap struct {
			Cursor string
			Seats  []struct{ SeatID, Status string }
		}
	}
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return resp.StatusCode, out
}

func errCode(errs []map[string]any) string {
	if len(errs) == 0 {
		return ""
	}
	ext, _ := errs[0]["extensions"].(map[string]any)
	code, _ := ext["code"].(string)
	return code
}

// outageApp is the real App on a database of the private primary, with
// (replica != "") or without a read replica.
func outageApp(t *testing.T, primary, replica string) (*app.App, string) {
	a := apptest.New(t, map[string]string{
		"DATABASE_URL":         primary,
		"DATABASE_READ_URL":    replica,
		"SEATMAP_REDIS_PREFIX": testdb.RedisPrefix(t),
		"JWT_HS256_SECRET":     outageSecret,
	})
	return a, apptest.Serve(t, a).URL
}

// TestBrowsingSurvivesPrimaryOutage stops the (private) primary: with the
// streaming replica up, searchEvents, event(id) with venue, prices and
// seat map, and the REST event endpoints keep answering from the replica;
// createHold answers SERVICE_UNAVAILABLE (the primary's health gate fails
// it without waiting for a connection); /readyz says "read-only: replica".
// Once the primary is back, holds work again and /readyz is read-write.
func TestBrowsingSurvivesPrimaryOutage(t *testing.T) {
	pair := testdb.PrivateReplicated(t)
	primaryURL, replicaURL := pair.NewDatabase(t)
	a, base := outageApp(t, primaryURL, replicaURL)
	ev := fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{Name: "Outage Rockers"})
	tok, err := auth.Mint(outageSecret, "ticketing-dev", "ticketing", "fan-"+uuid.NewString()[:8], nil, time.Hour)
	require.NoError(t, err)

	// The search projection indexes the event (from the primary; the
	// fixture writes no outbox row, so catch up by hand).
	_, err = a.Search.CatchUp(t.Context())
	require.NoError(t, err)
	search := `query { searchEvents(filter: {text: "Outage Rockers"}) { totalCount edges { node { id name } } } }`
	// Hits are loaded from the replica, which may lag a moment behind.
	var found struct {
		SearchEvents struct {
			TotalCount int
			Edges      []struct{ Node struct{ ID string } }
		}
	}
	require.Eventually(t, func() bool {
		errs := apptest.GraphQL(t, base, "", search, nil, &found)
		return len(errs) == 0 && len(found.SearchEvents.Edges) == 1
	}, 30*time.Second, 50*time.Millisecond, "searchEvents never found the event: %v", found)
	pair.CaughtUp(t)

	browse := func(t *testing.T) {
		t.Helper()
		var s struct {
			SearchEvents struct {
				TotalCount int
				Edges      []struct{ Node struct{ ID, Name string } }
			}
		}
		require.Empty(t, apptest.GraphQL(t, base, "", search, nil, &s))
		require.Equal(t, 1, s.SearchEvents.TotalCount)
		require.Len(t, s.SearchEvents.Edges, 1, "the hit is loaded")
		require.Equal(t, ev.ID, s.SearchEvents.Edges[0].Node.ID)

		var p eventPage
		require.Empty(t, apptest.GraphQL(t, base, "", outageEventQuery, map[string]any{"id": ev.ID}, &p))
		require.NotNil(t, p.Event)
		require.Equal(t, "Hall", p.Event.Venue.Name)
		require.Len(t, p.Event.Venue.Sections, 2)
		require.Len(t, p.Event.Prices, 2)
		require.Len(t, p.Event.SeatMap.Seats, 10)

		code, body := getJSON(t, base+"/api/events?text=Outage")
		require.Equal(t, http.StatusOK, code, body)
		require.Len(t, body["edges"], 1)
		code, body = getJSON(t, base+"/api/events/"+ev.ID)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "Outage Rockers", body["name"])
	}
	hold := func(key string) []map[string]any {
		var out struct{ CreateHold struct{ ID string } }
		return apptest.GraphQL(t, base, tok,
			`mutation($e: ID!, $s: [ID!], $k: String!) { createHold(input: {eventId: $e, seatIds: $s, idempotencyKey: $k}) { id } }`,
			map[string]any{"e": ev.ID, "s": []string{ev.Seats[0]}, "k": key}, &out)
	}
	browse(t)
	_, ready := getJSON(t, base+"/readyz")
	require.Equal(t, store.ModeReadWrite, ready["mode"])
	// An event nobody has looked at yet: only the replica can show it
	// during the outage (no cache has it).
	fresh := fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{Name: "Fresh"})
	pair.CaughtUp(t)

	pair.StopPrimary(t)

	t.Run("ReplicaServesBrowsing", browse)
	t.Run("ReplicaServesUnseenEvent", func(t *testing.T) {
		var p eventPage
		require.Empty(t, apptest.GraphQL(t, base, "", outageEventQuery, map[string]any{"id": fresh.ID}, &p))
		require.NotNil(t, p.Event)
		require.Equal(t, "Fresh", p.Event.Name)
		require.Len(t, p.Event.SeatMap.Seats, 10)
		code, body := getJSON(t, base+"/api/events/"+fresh.ID)
		require.Equal(t, http.StatusOK, code, body)
	})
	t.Run("HoldsUnavailable", func(t *testing.T) {
		start := time.Now()
		require.Equal(t, "SERVICE_UNAVAILABLE", errCode(hold("during")))
		t.Logf("createHold with the primary down answered in %v", time.Since(start))
		require.False(t, a.PrimaryHealth.Up())
		start = time.Now()
		require.Equal(t, "SERVICE_UNAVAILABLE", errCode(hold("during-2")), "the gate answers without a connection attempt")
		t.Logf("second createHold answered in %v", time.Since(start))
	})
	t.Run("ReadyzSaysReplica", func(t *testing.T) {
		code, ready := getJSON(t, base+"/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code, "the contract: 200 only when Postgres answers")
		require.Equal(t, store.ModeReadOnlyReplica, ready["mode"])
		deps := ready["dependencies"].(map[string]any)
		require.Equal(t, "down", deps["postgres"].(map[string]any)["status"])
		require.Equal(t, "up", deps["postgres_replica"].(map[string]any)["status"])
	})

	pair.StartPrimary(t)
	t.Run("HoldsRecover", func(t *testing.T) {
		require.Eventually(t, func() bool { return len(hold("after")) == 0 }, 30*time.Second, 50*time.Millisecond)
		code, ready := getJSON(t, base+"/readyz")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, store.ModeReadWrite, ready["mode"])
	})
}

// TestCatalogCacheWithoutReplica: without DATABASE_READ_URL, an event page
// loaded while the primary answered is served from the last good answers
// while it is down; an event never loaded answers SERVICE_UNAVAILABLE (the
// cache never invents), and /readyz says "read-only: cache".
func TestCatalogCacheWithoutReplica(t *testing.T) {
	pair := testdb.PrivateReplicated(t)
	primaryURL, _ := pair.NewDatabase(t)
	a, base := outageApp(t, primaryURL, "")
	seen := fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{Name: "Seen"})
	unseen := fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{Name: "Unseen"})
	var p eventPage
	require.Empty(t, apptest.GraphQL(t, base, "", outageEventQuery, map[string]any{"id": seen.ID}, &p))
	code, _ := getJSON(t, base+"/api/events/"+seen.ID)
	require.Equal(t, http.StatusOK, code)

	pair.StopPrimary(t)
	require.Eventually(t, func() bool { return !a.PrimaryHealth.Up() }, 10*time.Second, 20*time.Millisecond)

	var again eventPage
	require.Empty(t, apptest.GraphQL(t, base, "", outageEventQuery, map[string]any{"id": seen.ID}, &again))
	require.NotNil(t, again.Event)
	require.Equal(t, p.Event.Name, again.Event.Name)
	require.Len(t, again.Event.Prices, 2)
	require.Len(t, again.Event.SeatMap.Seats, 10)
	code, body := getJSON(t, base+"/api/events/"+seen.ID)
	require.Equal(t, http.StatusOK, code, body)

	errs := apptest.GraphQL(t, base, "", outageEventQuery, map[string]any{"id": unseen.ID}, &again)
	require.Equal(t, "SERVICE_UNAVAILABLE", errCode(errs), fmt.Sprint(errs))
	_, ready := getJSON(t, base+"/readyz")
	require.Equal(t, store.ModeReadOnlyCache, ready["mode"])
}
