package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/store"
	"github.com/ticketing/ticketing/tickets"
)

// effects are what to do after a transaction commits.
type effects struct {
	confirmed *Order
	// heldAt is when the confirmed order's hold was made (the queue
	// admission it was made under is released).
	heldAt time.Time
}

func (s *Service) after(ctx context.Context, eff effects, err error) {
	if err != nil {
		return // rolled back: nothing happened
	}
	if o := eff.confirmed; o != nil {
		if o.ConfirmedAt != nil {
			s.metrics.checkout.Observe(o.ConfirmedAt.Sub(o.CreatedAt).Seconds())
		}
		if s.cfg.Holds != nil {
			s.cfg.Holds.ReleaseAddressCap(ctx, o.EventID, o.HoldID)
		}
		if s.cfg.Queue != nil {
			if err := s.cfg.Queue.Release(context.WithoutCancel(ctx), o.EventID, o.Owner, eff.heldAt); err != nil {
				s.cfg.Log.Warn("release queue admission", "order", o.ID, "err", err)
			}
		}
	}
}

// errNotConfirmable rolls back the confirmation savepoint.
var errNotConfirmable = errors.New("not confirmable")

// confirm is the confirmation: in a savepoint, the hold's inventory rows
// still HELD by this very hold and unexpired (database clock) become SOLD;
// unless all of them do, nothing changes and why says so. Then the hold is
// PURCHASED, its items' periods open-ended, the order CONFIRMED, tickets
// issued and the sale written to the outbox. heldAt is when the hold was
// made.
func (s *Service) confirm(ctx context.Context, tx *store.Store, o Order) (_ *Order, heldAt time.Time, why string, _ error) {
	var confirmed Order
	err := tx.InTx(ctx, func(sp *store.Store) error {
		h, err := sp.GetHoldForUpdate(ctx, o.HoldID)
		if err != nil {
			return err
		}
		heldAt = h.CreatedAt
		if h.Status != holds.StatusActive {
			why = "hold " + h.Status
			return errNotConfirmable
		}
		items, err := sp.HoldItems(ctx, h.ID)
		if err != nil {
			return err
		}
		sold, err := sp.SellHold(ctx, h.EventID, h.ID, o.ID)
		if err != nil {
			return err
		}
		if len(sold) != len(items) || len(items) == 0 {
			why = fmt.Sprintf("only %d of %d seats still held by the hold", len(sold), len(items))
			return errNotConfirmable
		}
		if err := sp.PurchaseHold(ctx, h.ID); err != nil {
			return err
		}
		issued := make([]store.Ticket, 0, len(sold))
		for _, u := range sold {
			t := store.Ticket{ID: newID(), OrderID: o.ID, EventID: o.EventID, InventoryID: u.InventoryID,
				SectionID: u.SectionID, SeatID: u.SeatID}
			item := ""
			if u.SeatID != nil {
				item = tickets.SeatItem(*u.SeatID)
			} else if u.UnitNo != nil {
				item = tickets.GAItem(u.SectionID, *u.UnitNo)
			}
			if t.Code, err = s.cfg.TicketKeys.Sign(tickets.Claims{TicketID: t.ID, EventID: o.EventID, Item: item}); err != nil {
				return err
			}
			issued = append(issued, t)
		}
		if err := sp.InsertTickets(ctx, issued); err != nil {
			return err
		}
		if err := sp.OutboxInsert(ctx, o.EventID, "inventory", salePayload(o, sold)); err != nil {
			return err
		}
		confirmed, err = sp.ConfirmOrder(ctx, o.ID)
		return err
	})
	if errors.Is(err, errNotConfirmable) {
		return nil, heldAt, why, nil
	}
	if err != nil {
		return nil, heldAt, "", err
	}
	return &confirmed, heldAt, "", nil
}

// salePayload is the 'inventory' outbox message of a sale.
func salePayload(o Order, sold []store.SoldUnit) outbox.InventoryChange {
	units := make([]store.InventoryUnit, len(sold))
	for i, u := range sold {
		units[i] = u.InventoryUnit
	}
	return unitsPayload(o, "sale", "SOLD", units)
}

// unitsPayload is the 'inventory' outbox message of an order's rows that
// changed to status (SOLD by a sale, AVAILABLE again by a refund).
func unitsPayload(o Order, kind, status string, units []store.InventoryUnit) outbox.InventoryChange {
	return outbox.NewInventoryChange(o.EventID, kind, o.HoldID, o.ID, status, units)
}
