package holds

import (
	"strconv"
	"sync"
	"time"
)

// bestHints remember, per event, section, adjacency and quantity, the row
// where a best-available search last found seats, so the next search
// starts there (store.CreateHoldArgs.BestFrom) instead of reading every
// full row in front of it: at a sale's end a search from the front of
// four 2,500-seat sections read 8,400 seats (~60 ms, the largest cost of
// the 20,000-buyer sale's holds, bench/RESULTS.md 2026-12-03).
//
// A hint is only where to look first: hold_create still searches every row
// (from the hint to the back, then the rows in front of it), takes only
// holdable seats, and decides under its locks. What a hint may cost is the
// best seat: one freed in front of the hint (a cancellation, an expired
// hold) is found by the next search from the front, which runs once the
// hint is older than bestHintTTL. A hint is per quantity: a run of 4 is
// never in front of the first run of 2, but a run of 2 may be in front of
// the first run of 4.
type bestHints struct {
	mu sync.Mutex
	m  map[string]bestHint
}

type bestHint struct {
	row int
	at  time.Time // of the last search from the front
}

// bestHintTTL is how long a hint is used before a search from the front:
// a full search of a sold-out front reads every full row, so it is worth
// doing once per hint and 10 s, not once per hold.
const bestHintTTL = 10 * time.Second

func bestHintKey(eventID, sectionID string, adjacent bool, qty int) string {
	return eventID + "/" + sectionID + "/" + strconv.FormatBool(adjacent) + "/" + strconv.Itoa(qty)
}

// from is the row to start a search at (nil: from the front).
func (b *bestHints) from(key string, now time.Time) *int {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[key]
	if !ok || now.Sub(h.at) >= bestHintTTL {
		return nil
	}
	row := h.row
	return &row
}

// found records where a search found seats: a search from the front
// (from nil) sets the hint afresh; a hinted one moves it, keeping its age.
func (b *bestHints) found(key string, from, row *int, now time.Time) {
	if row == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]bestHint{}
	}
	h, ok := b.m[key]
	switch {
	case from == nil || !ok:
		b.m[key] = bestHint{row: *row, at: now}
	default:
		h.row = *row
		b.m[key] = h
	}
}
