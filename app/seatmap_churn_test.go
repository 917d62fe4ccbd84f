package app

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
)

// TestSeatMapSubscriberChurn: WebSocket subscribers come and go (a
// "complete", a dropped connection, a reconnect) while holds and cancels
// change the map. No subscription outlives its client (the subscriber gauge
// returns to what is left), and a subscriber that stays to the end sees the
// map as Postgres has it.
func TestSeatMapSubscriberChurn(t *testing.T) {
	apps, srvs := seatMapInstances(t, 1)
	a := apps[0]
	eventID, seats := seatMapEvent(t, a)
	url := "ws" + strings.TrimPrefix(srvs[0].URL, "http") + "/graphql"
	// dial subscribes and waits for the snapshot (usable off the test's
	// goroutine: it reports errors instead of failing the test).
	dial := func() (*websocket.Conn, error) {
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		c, _, err := d.Dial(url, nil)
		if err != nil {
			return nil, err
		}
		payload, _ := json.Marshal(map[string]any{"query": seatMapSubscription, "variables": map[string]any{"e": eventID}})
		if err := c.WriteJSON(map[string]any{"type": "connection_init"}); err != nil {
			return nil, err
		}
		if err := c.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": json.RawMessage(payload)}); err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			var m struct{ Type string }
			if err := c.ReadJSON(&m); err != nil {
				return nil, fmt.Errorf("waiting for the snapshot: %w", err)
			}
			if m.Type == "next" {
				_ = c.SetReadDeadline(time.Time{})
				return c, nil
			}
		}
	}

	// The one that stays: it applies every frame to its view.
	stay, err := dial()
	require.NoError(t, err)
	defer stay.Close()
	view := map[string]struct {
		status  string
		version int
	}{}
	var viewMu sync.Mutex
	go func() {
		for {
			var m struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			if stay.ReadJSON(&m) != nil {
				return
			}
			var p seatMapPayload
			if m.Type != "next" || json.Unmarshal(m.Payload, &p) != nil {
				continue
			}
			viewMu.Lock()
			for _, s := range p.Data.SeatMapUpdates.Seats {
				if s.Version > view[s.SeatID].version {
					view[s.SeatID] = struct {
						status  string
						version int
					}{s.Status, s.Version}
				}
			}
			viewMu.Unlock()
		}
	}()

	ctx, stop := context.WithCancel(context.Background())
	var load sync.WaitGroup
	load.Add(1)
	go func() { // holds and cancels on every seat, as fast as they go;
		// each hold is cancelled two holds later, so the last two stay.
		defer load.Done()
		user := auth.User{ID: "churn"}
		var kept []string
		for i := 0; ctx.Err() == nil; i++ {
			h, err := a.Holds.Create(context.Background(), user, holds.CreateRequest{EventID: eventID,
				SeatIDs: []string{seats[i%len(seats)]}, IdempotencyKey: uuid.NewString()})
			if err != nil {
				t.Error(err) // not FailNow: this is not the test's goroutine
				return
			}
			if kept = append(kept, h.ID); len(kept) > 2 {
				if _, err := a.Holds.Cancel(context.Background(), user, kept[0]); err != nil {
					t.Error(err)
					return
				}
				kept = kept[1:]
			}
		}
	}()

	var churn sync.WaitGroup
	for w := range 8 {
		churn.Add(1)
		go func() {
			defer churn.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 6 {
				c, err := dial()
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(r.IntN(150)) * time.Millisecond)
				if r.IntN(2) == 0 {
					_ = c.WriteJSON(map[string]any{"id": "1", "type": "complete"})
				}
				c.Close() // with or without a goodbye
			}
		}()
	}
	churn.Wait()
	stop()
	load.Wait()

	require.Eventually(t, func() bool {
		return a.SeatMap.Subscribers() == 1
	}, 10*time.Second, 50*time.Millisecond, "subscriptions of gone clients must end")

	// The last changes reach the one that stayed: its view is the database's.
	want := map[string]string{}
	rows, err := a.Store.SeatMapSeats(context.Background(), eventID)
	require.NoError(t, err)
	held := 0
	for _, r := range rows {
		want[r.SeatID] = r.Status
		if r.Status == "HELD" {
			held++
		}
	}
	require.Equal(t, 2, held)
	require.Eventually(t, func() bool {
		viewMu.Lock()
		defer viewMu.Unlock()
		for id, st := range want {
			if v, ok := view[id]; ok && v.status != st {
				return false
			}
		}
		return true
	}, 15*time.Second, 50*time.Millisecond, "the staying subscriber's view converges to Postgres")
}
