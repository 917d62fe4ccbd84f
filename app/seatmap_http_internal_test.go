package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/testdb"
)

// seatMapInstances starts n Apps over one database and one Redis prefix,
// like n `ticketing serve` processes; only the first runs the workers.
func seatMapInstances(t *testing.T, n int) ([]*App, []*httptest.Server) {
	t.Helper()
	env := map[string]string{"DATABASE_URL": testdb.NewDatabase(t), "REDIS_URL": testdb.RedisURL(),
		"SEATMAP_REDIS_PREFIX": testdb.RedisPrefix(t)}
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	var apps []*App
	var srvs []*httptest.Server
	for i := 0; i < n; i++ {
		cfg.SearchDir = t.TempDir() // each instance its own embedded index, as each process
		a, err := New(context.Background(), cfg, log)
		require.NoError(t, err)
		t.Cleanup(a.Close)
		srv := httptest.NewServer(a.Handler())
		t.Cleanup(srv.Close)
		apps, srvs = append(apps, a), append(srvs, srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { apps[0].RunWorkers(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return apps, srvs
}

// seatMapEvent creates an event on sale (fixtures.SmallEvent).
func seatMapEvent(t *testing.T, a *App) (eventID string, seats []string) {
	ev := fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{})
	return ev.ID, ev.Seats
}

func holdSeat(t *testing.T, a *App, eventID, seat string) {
	t.Helper()
	_, err := a.Holds.Create(context.Background(), auth.User{ID: "u1"}, holds.CreateRequest{
		EventID: eventID, SeatIDs: []string{seat}, IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
}

const seatMapSubscription = `subscription($e: ID!, $after: String) { seatMapUpdates(eventId: $e, after: $after) {
  cursor snapshot { cursor seats { seatId status version } } seats { seatId status version } } }`

type seatMapPayload struct {
	Data struct {
		SeatMapUpdates struct {
			Cursor   string `json:"cursor"`
			Snapshot *struct {
				Seats []struct{ SeatID, Status string } `json:"seats"`
			} `json:"snapshot"`
			Seats []struct {
				SeatID, Status string
				Version        int
			} `json:"seats"`
		} `json:"seatMapUpdates"`
	} `json:"data"`
	Errors []any `json:"errors"`
}

// TestSeatMapAcrossInstances: a hold made through instance A reaches
// GraphQL subscribers of instance B over both WebSocket subprotocols and
// SSE, and Event.seatMap.cursor resumes without a gap.
func TestSeatMapAcrossInstances(t *testing.T) {
	apps, srvs := seatMapInstances(t, 2)
	eventID, seats := seatMapEvent(t, apps[0])
	vars := map[string]any{"e": eventID}

	type proto struct{ name, start, data string }
	var conns []*websocket.Conn
	for _, p := range []proto{{"graphql-transport-ws", "subscribe", "next"}, {"graphql-ws", "start", "data"}} {
		d := websocket.Dialer{Subprotocols: []string{p.name}}
		c, _, err := d.Dial("ws"+strings.TrimPrefix(srvs[1].URL, "http")+"/graphql", nil)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.WriteJSON(map[string]any{"type": "connection_init"}))
		payload, _ := json.Marshal(map[string]any{"query": seatMapSubscription, "variables": vars})
		require.NoError(t, c.WriteJSON(map[string]any{"id": "1", "type": p.start, "payload": json.RawMessage(payload)}))
		first := wsNext(t, c, p.data)
		require.NotNil(t, first.Data.SeatMapUpdates.Snapshot, p.name)
		require.Len(t, first.Data.SeatMapUpdates.Snapshot.Seats, len(seats))
		conns = append(conns, c)
	}
	sse := graphqlSSE(t, srvs[1].URL, vars)
	require.NotNil(t, sse.next(t).Data.SeatMapUpdates.Snapshot)

	holdSeat(t, apps[0], eventID, seats[0])
	for i, c := range conns {
		u := wsNext(t, c, map[int]string{0: "next", 1: "data"}[i])
		require.Equal(t, seats[0], u.Data.SeatMapUpdates.Seats[0].SeatID)
		require.Equal(t, "HELD", u.Data.SeatMapUpdates.Seats[0].Status)
	}
	u := sse.next(t)
	require.Equal(t, "HELD", u.Data.SeatMapUpdates.Seats[0].Status)

	// Event.seatMap.cursor, then a subscription after it: the change made
	// after the snapshot arrives, with no snapshot resent.
	var q struct {
		Data struct {
			Event struct {
				SeatMap struct {
					Cursor string `json:"cursor"`
				} `json:"seatMap"`
			} `json:"event"`
		} `json:"data"`
	}
	body, _ := json.Marshal(map[string]any{"query": `query($e: ID!) { event(id: $e) { seatMap { cursor } } }`, "variables": vars})
	resp, err := http.Post(srvs[1].URL+"/graphql", "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&q))
	resp.Body.Close()
	cursor := q.Data.Event.SeatMap.Cursor
	require.NotEmpty(t, cursor)
	holdSeat(t, apps[0], eventID, seats[1])
	resumed := graphqlSSE(t, srvs[0].URL, map[string]any{"e": eventID, "after": cursor})
	for {
		u := resumed.next(t)
		require.Nil(t, u.Data.SeatMapUpdates.Snapshot)
		if len(u.Data.SeatMapUpdates.Seats) > 0 && u.Data.SeatMapUpdates.Seats[len(u.Data.SeatMapUpdates.Seats)-1].SeatID == seats[1] {
			break
		}
	}
}

func wsNext(t *testing.T, c *websocket.Conn, typ string) seatMapPayload {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	for {
		var m struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, c.ReadJSON(&m))
		if m.Type == typ {
			var p seatMapPayload
			require.NoError(t, json.Unmarshal(m.Payload, &p))
			require.Empty(t, p.Errors)
			return p
		}
		require.Contains(t, []string{"connection_ack", "ka", "ping", "pong"}, m.Type, string(m.Payload))
	}
}

type sseReader struct{ ch chan seatMapPayload }

// graphqlSSE runs the subscription over gqlgen's SSE transport.
func graphqlSSE(t *testing.T, url string, vars map[string]any) *sseReader {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": seatMapSubscription, "variables": vars})
	req, _ := http.NewRequest("POST", url+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { resp.Body.Close() })
	r := &sseReader{ch: make(chan seatMapPayload, 16)}
	go func() {
		defer close(r.ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var p seatMapPayload
				if json.Unmarshal([]byte(d), &p) == nil && (p.Data.SeatMapUpdates.Cursor != "" || p.Errors != nil) {
					r.ch <- p
				}
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return r
}

func (r *sseReader) next(t *testing.T) seatMapPayload {
	t.Helper()
	select {
	case p, ok := <-r.ch:
		require.True(t, ok, "stream ended")
		require.Empty(t, p.Errors, fmt.Sprint(p.Errors))
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return seatMapPayload{}
	}
}

// One WebSocket connection holds at most MaxSubscriptionsPerConnection live
// subscriptions: the next gets RATE_LIMITED and complete; ending one makes
// room again.
func TestSubscriptionsPerConnectionCap(t *testing.T) {
	apps, srvs := seatMapInstances(t, 1)
	eventID, _ := seatMapEvent(t, apps[0])
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srvs[0].URL, "http")+"/graphql", nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.WriteJSON(map[string]any{"type": "connection_init"}))
	payload, _ := json.Marshal(map[string]any{"query": seatMapSubscription, "variables": map[string]any{"e": eventID}})
	subscribe := func(id string) {
		require.NoError(t, c.WriteJSON(map[string]any{"id": id, "type": "subscribe", "payload": json.RawMessage(payload)}))
	}
	type message struct {
		ID      string          `json:"id"`
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	until := func(id string) message {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		for {
			var m message
			require.NoError(t, c.ReadJSON(&m))
			if m.ID == id {
				return m
			}
		}
	}
	for i := range MaxSubscriptionsPerConnection {
		id := fmt.Sprint(i)
		subscribe(id)
		m := until(id)
		require.Equal(t, "next", m.Type, string(m.Payload))
		require.NotContains(t, string(m.Payload), "errors")
	}
	subscribe("over")
	m := until("over")
	require.Equal(t, "next", m.Type)
	var p struct {
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(m.Payload, &p))
	require.Len(t, p.Errors, 1, string(m.Payload))
	require.Equal(t, "RATE_LIMITED", p.Errors[0].Extensions["code"])
	require.EqualValues(t, MaxSubscriptionsPerConnection, p.Errors[0].Extensions["limit"])
	require.Equal(t, "complete", until("over").Type)

	require.NoError(t, c.WriteJSON(map[string]any{"id": "0", "type": "complete"}))
	for m = until("0"); m.Type == "next"; m = until("0") { // a frame sent before the complete was read
	}
	require.Equal(t, "complete", m.Type)
	subscribe("again")
	m = until("again")
	require.Equal(t, "next", m.Type)
	require.NotContains(t, string(m.Payload), "errors")
}
