package main

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// SeatInfo is a seat of the venue.
type SeatInfo struct {
	ID, Section, Row string
	Num, RowIdx      int
}

// Section is a section of the venue.
type Section struct {
	ID, Name, Kind string
	Capacity       int
}

// LiveMap is a live view of the event's seat map: Event.seatMap once, then
// seatMapUpdates over WebSocket (graphql-transport-ws), applied by version.
// Buyers share a few views (a 10,000-seat snapshot per buyer would be 1 MB
// of JSON each); conflicts on stale seats are expected and retried.
type LiveMap struct {
	mu      sync.RWMutex
	order   []SeatInfo     // best first: section, row, number
	idx     map[string]int // seat id -> index in order
	status  []byte         // 'A', 'H', 'S'
	version []int64
	ga      map[string]int // GA section -> available
	gaVer   map[string]int64
	cursor  string
	// Frames counts the subscription messages applied; Resyncs the snapshots.
	Frames, Resyncs atomic.Int64
}

// NewLiveMap builds the view of the venue's seats (sections in order).
func NewLiveMap(seats []SeatInfo) *LiveMap {
	m := &LiveMap{order: seats, idx: map[string]int{}, status: make([]byte, len(seats)), version: make([]int64, len(seats)),
		ga: map[string]int{}, gaVer: map[string]int64{}}
	for i, s := range seats {
		m.idx[s.ID] = i
		m.status[i] = 'A'
	}
	return m
}

type mapSeat struct {
	SeatID  string `json:"seatId"`
	Status  string `json:"status"`
	Version int64  `json:"version"`
}

type mapGA struct {
	SectionID string `json:"sectionId"`
	Available int    `json:"available"`
	Version   int64  `json:"version"`
}

type seatMapSnap struct {
	Cursor           string    `json:"cursor"`
	Seats            []mapSeat `json:"seats"`
	GeneralAdmission []mapGA   `json:"generalAdmission"`
}

const seatMapFields = `cursor seats { seatId status version } generalAdmission { sectionId available version }`

func (m *LiveMap) apply(seats []mapSeat, ga []mapGA, cursor string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range seats {
		if i, ok := m.idx[s.SeatID]; ok && s.Version >= m.version[i] {
			m.version[i], m.status[i] = s.Version, s.Status[0]
		}
	}
	for _, g := range ga {
		if g.Version >= m.gaVer[g.SectionID] {
			m.gaVer[g.SectionID], m.ga[g.SectionID] = g.Version, g.Available
		}
	}
	if cursor != "" {
		m.cursor = cursor
	}
}

// Snapshot loads Event.seatMap into the view.
func (m *LiveMap) Snapshot(ctx context.Context, c *Client, eventID string) error {
	var out struct {
		Event struct{ SeatMap seatMapSnap } `json:"event"`
	}
	err := c.Do(ctx, "", `query($id: ID!) { event(id: $id) { seatMap { `+seatMapFields+` } } }`, map[string]any{"id": eventID}, &out)
	if err != nil {
		return err
	}
	s := out.Event.SeatMap
	m.apply(s.Seats, s.GeneralAdmission, s.Cursor)
	m.Resyncs.Add(1)
	return nil
}

// Follow subscribes to seatMapUpdates after the view's cursor and applies
// every frame until ctx ends, reconnecting (with the cursor) after errors.
func (m *LiveMap) Follow(ctx context.Context, c *Client, eventID string) {
	for ctx.Err() == nil {
		_ = m.followOnce(ctx, c, eventID)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (m *LiveMap) followOnce(ctx context.Context, c *Client, eventID string) error {
	m.mu.RLock()
	cursor := m.cursor
	m.mu.RUnlock()
	q := `subscription($e: ID!, $a: String) { seatMapUpdates(eventId: $e, after: $a) { cursor snapshot { ` + seatMapFields +
		` } seats { seatId status version } generalAdmission { sectionId available version } } }`
	vars := map[string]any{"e": eventID}
	if cursor != "" {
		vars["a"] = cursor
	}
	err := c.Subscribe(ctx, "", q, vars, func(data json.RawMessage) bool {
		var d struct {
			U *struct {
				Cursor           string       `json:"cursor"`
				Snapshot         *seatMapSnap `json:"snapshot"`
				Seats            []mapSeat    `json:"seats"`
				GeneralAdmission []mapGA      `json:"generalAdmission"`
			} `json:"seatMapUpdates"`
		}
		if json.Unmarshal(data, &d) != nil || d.U == nil {
			return false
		}
		u := d.U
		if u.Snapshot != nil {
			m.apply(u.Snapshot.Seats, u.Snapshot.GeneralAdmission, u.Snapshot.Cursor)
			m.Resyncs.Add(1)
		}
		m.apply(u.Seats, u.GeneralAdmission, u.Cursor)
		m.Frames.Add(1)
		return false // follow until the stream ends
	})
	if errors.Is(err, errStreamEnded) {
		return nil
	}
	return err
}

// Counts returns the seats the view shows available and the GA units.
func (m *LiveMap) Counts() (seats, ga int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, s := range m.status {
		if s == 'A' {
			seats++
		}
	}
	for _, n := range m.ga {
		ga += n
	}
	return
}

// GASection returns a GA section with at least n units available ("" if none).
func (m *LiveMap) GASection(n int) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ids := make([]string, 0, len(m.ga))
	for id, a := range m.ga {
		if a >= n {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// Pick chooses k seats side by side in one row that the view shows
// available and the buyer has not seen refused, starting at a position
// biased towards the front (everyone wants the best seats). Nil if none.
func (m *LiveMap) Pick(rng *rand.Rand, k int, avoid map[string]bool) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := len(m.order)
	if n == 0 {
		return nil
	}
	start := int(float64(n) * rng.Float64() * rng.Float64())
	for step := 0; step < n; step++ {
		i := (start + step) % n
		if i+k > n {
			continue
		}
		ok := true
		for j := i; j < i+k && ok; j++ {
			s := m.order[j]
			ok = m.status[j] == 'A' && !avoid[s.ID] && s.Section == m.order[i].Section && s.RowIdx == m.order[i].RowIdx &&
				s.Num == m.order[i].Num+(j-i)
		}
		if ok {
			out := make([]string, k)
			for j := range out {
				out[j] = m.order[i+j].ID
			}
			return out
		}
	}
	return nil
}

// Status returns the view's status of every seat.
func (m *LiveMap) Status() map[string]byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]byte, len(m.order))
	for i, s := range m.order {
		out[s.ID] = m.status[i]
	}
	return out
}
