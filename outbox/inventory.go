package outbox

import (
	"slices"

	"github.com/ticketing/ticketing/store"
)

// InventoryChange is the message of topic "inventory": inventory rows that
// changed in the transaction that wrote it. It has one Go builder,
// NewInventoryChange (holds' cancel and expiry, orders' sale and refund),
// and one SQL body, step 7 of hold_create (migrations/functions), which
// TestHoldCreateMessageIsAnInventoryChange checks against the builder. The
// seat map parses it (seatmap.Publish); the relay only reads its event.
type InventoryChange struct {
	EventID string `json:"eventId"`
	// Kind is hold, cancel, expire, sale or refund.
	Kind    string `json:"kind"`
	HoldID  string `json:"holdId"`
	OrderID string `json:"orderId,omitempty"` // sale and refund
	// Seats are the changed seats with their new status and version.
	Seats []ChangedSeat `json:"seats"`
	// GA names each general-admission section with a changed unit, once;
	// the seat map recounts it from Postgres (ga_availability).
	GA []ChangedGA `json:"ga"`
}

// ChangedSeat is one seat of an InventoryChange.
type ChangedSeat struct {
	SeatID    string `json:"seatId"`
	SectionID string `json:"sectionId"`
	Status    string `json:"status"`
	Version   int64  `json:"version"`
}

// ChangedGA is one general-admission section of an InventoryChange.
type ChangedGA struct {
	SectionID string `json:"sectionId"`
}

// NewInventoryChange is the message of units changed to status (in units'
// order; each GA section once, in order of first appearance).
func NewInventoryChange(eventID, kind, holdID, orderID, status string, units []store.InventoryUnit) InventoryChange {
	c := InventoryChange{EventID: eventID, Kind: kind, HoldID: holdID, OrderID: orderID,
		Seats: []ChangedSeat{}, GA: []ChangedGA{}}
	for _, u := range units {
		switch {
		case u.SeatID != nil:
			c.Seats = append(c.Seats, ChangedSeat{*u.SeatID, u.SectionID, status, u.Version})
		case !slices.Contains(c.GA, ChangedGA{u.SectionID}):
			c.GA = append(c.GA, ChangedGA{u.SectionID})
		}
	}
	return c
}
