package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// TestWebSocketOperationsDoNotShareLoaders: two queries on one WebSocket
// connection each read fresh data; the second is not served the first's
// dataloader cache (loaders are per operation, not per connection).
func TestWebSocketOperationsDoNotShareLoaders(t *testing.T) {
	apps, srvs := seatMapInstances(t, 1)
	eventID, _ := seatMapEvent(t, apps[0])
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srvs[0].URL, "http")+"/graphql", nil)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.WriteJSON(map[string]any{"type": "connection_init"}))
	name := func(id string) string {
		t.Helper()
		require.NoError(t, c.WriteJSON(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{
			"query": `query($e: ID!) { event(id: $e) { name } }`, "variables": map[string]any{"e": eventID}}}))
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		for {
			var m struct {
				ID      string `json:"id"`
				Type    string `json:"type"`
				Payload struct {
					Data struct{ Event struct{ Name string } }
				} `json:"payload"`
			}
			require.NoError(t, c.ReadJSON(&m))
			if m.Type == "next" && m.ID == id {
				return m.Payload.Data.Event.Name
			}
		}
	}
	require.Equal(t, "Show", name("1"))
	_, err = apps[0].Pool.Exec(context.Background(), `UPDATE events SET name = 'Renamed' WHERE id = $1`, eventID)
	require.NoError(t, err)
	// The catalog keeps event rows too (EventRowsFreshFor); this test is
	// about the loaders, so that memory is told, as a cancellation tells it.
	apps[0].Catalog.ForgetEvents(eventID)
	require.Equal(t, "Renamed", name("2"))
}
