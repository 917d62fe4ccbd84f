package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// TestSeatMapSharedExecution: subscribers of one instance share the
// execution of a frame only when their documents match; each still gets
// its own selection set, aliases and protocol framing.
func TestSeatMapSharedExecution(t *testing.T) {
	apps, srvs := seatMapInstances(t, 1)
	eventID, seats := seatMapEvent(t, apps[0])
	url := "ws" + strings.TrimPrefix(srvs[0].URL, "http") + "/graphql"
	const aliased = `subscription($e: ID!) { m: seatMapUpdates(eventId: $e) { c: cursor s: seats { id: seatId st: status } } }`

	type sub struct {
		proto, start, data, query string
		vars                      map[string]any
		c                         *websocket.Conn
	}
	subs := []*sub{
		{proto: "graphql-transport-ws", start: "subscribe", data: "next", query: seatMapSubscription, vars: map[string]any{"e": eventID}},
		{proto: "graphql-transport-ws", start: "subscribe", data: "next", query: seatMapSubscription, vars: map[string]any{"e": eventID, "after": "0-0"}},
		{proto: "graphql-ws", start: "start", data: "data", query: seatMapSubscription, vars: map[string]any{"e": eventID}},
		{proto: "graphql-transport-ws", start: "subscribe", data: "next", query: aliased, vars: map[string]any{"e": eventID}},
	}
	read := func(s *sub) json.RawMessage {
		t.Helper()
		require.NoError(t, s.c.SetReadDeadline(time.Now().Add(10*time.Second)))
		for {
			var m struct {
				ID      string          `json:"id"`
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			require.NoError(t, s.c.ReadJSON(&m))
			if m.Type == s.data {
				require.Equal(t, "7", m.ID)
				return m.Payload
			}
			require.Contains(t, []string{"connection_ack", "ka", "ping"}, m.Type, string(m.Payload))
		}
	}
	for _, s := range subs {
		d := websocket.Dialer{Subprotocols: []string{s.proto}}
		c, _, err := d.Dial(url, nil)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		s.c = c
		require.NoError(t, c.WriteJSON(map[string]any{"type": "connection_init"}))
		payload, _ := json.Marshal(map[string]any{"query": s.query, "variables": s.vars})
		require.NoError(t, c.WriteJSON(map[string]any{"id": "7", "type": s.start, "payload": json.RawMessage(payload)}))
		read(s) // the snapshot
	}

	holdSeat(t, apps[0], eventID, seats[0])
	for _, s := range subs[:3] {
		var p seatMapPayload
		require.NoError(t, json.Unmarshal(read(s), &p))
		require.Empty(t, p.Errors)
		require.Len(t, p.Data.SeatMapUpdates.Seats, 1)
		require.Equal(t, seats[0], p.Data.SeatMapUpdates.Seats[0].SeatID)
		require.Equal(t, "HELD", p.Data.SeatMapUpdates.Seats[0].Status)
		require.NotEmpty(t, p.Data.SeatMapUpdates.Cursor)
	}
	var p struct {
		Data struct {
			M struct {
				C string
				S []map[string]string
			}
		}
	}
	require.NoError(t, json.Unmarshal(read(subs[3]), &p))
	require.NotEmpty(t, p.Data.M.C)
	require.Equal(t, []map[string]string{{"id": seats[0], "st": "HELD"}}, p.Data.M.S)
}
