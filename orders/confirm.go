package orders

import (
	"context"
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

// after applies a committed transaction's effects outside Postgres. A
// confirmation frees the buyer's place under the per-address hold cap and
// their queue admission, in Redis, in the background: both are best effort
// (a failure leaves the cap counting and the admission held until they
// expire, as a crash between the commit and them would), so the caller,
// a provider's notification among them, does not wait for Redis to answer
// (under a sale's load 0.4 s at p99, holding one of the provider's delivery
// slots; bench/RESULTS.md 2026-12-04).
func (s *Service) after(ctx context.Context, eff effects, err error) {
	if err != nil {
		return // rolled back: nothing happened
	}
	o := eff.confirmed
	if o == nil {
		return
	}
	if o.ConfirmedAt != nil {
		s.metrics.checkout.Observe(o.ConfirmedAt.Sub(o.CreatedAt).Seconds())
	}
	if s.cfg.Holds == nil && s.cfg.Queue == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	go func() {
		start := time.Now()
		if s.cfg.Holds != nil {
			s.cfg.Holds.ReleaseAddressCap(ctx, o.EventID, o.HoldID)
		}
		if s.cfg.Queue != nil {
			if err := s.cfg.Queue.Release(ctx, o.EventID, o.Owner, eff.heldAt); err != nil {
				s.cfg.Log.Warn("release queue admission", "order", o.ID, "err", err)
			}
		}
		s.metrics.notification.WithLabelValues("after").Observe(time.Since(start).Seconds())
	}()
}

// confirm is the confirmation, in two round trips: the hold's inventory
// rows become SOLD to the order if the hold is ACTIVE and every one of them
// is still HELD by it and unexpired (database clock), all or nothing
// (store.SellHold); unless they do, nothing changes and why says so. Then
// the hold is PURCHASED, its items' periods open-ended, tickets issued, the
// sale written to the outbox and the order CONFIRMED (store.CompleteSale).
// heldAt is when the hold was made.
func (s *Service) confirm(ctx context.Context, tx *store.Store, o Order) (_ *Order, heldAt time.Time, why string, _ error) {
	sale, err := tx.SellHold(ctx, o.EventID, o.HoldID, o.ID)
	if err != nil {
		return nil, heldAt, "", err
	}
	heldAt = sale.Hold.CreatedAt
	switch {
	case sale.Hold.Status != holds.StatusActive:
		return nil, heldAt, "hold " + sale.Hold.Status, nil
	case len(sale.Sold) == 0:
		return nil, heldAt, fmt.Sprintf("only %d of %d seats still held by the hold", sale.Held, sale.Items), nil
	case len(sale.Sold) != sale.Items:
		return nil, heldAt, "", fmt.Errorf("hold %s: sold %d of its %d items", o.HoldID, len(sale.Sold), sale.Items)
	}
	issued := make([]store.Ticket, 0, len(sale.Sold))
	for _, u := range sale.Sold {
		t := store.Ticket{ID: newID(), OrderID: o.ID, EventID: o.EventID, InventoryID: u.InventoryID,
			SectionID: u.SectionID, SeatID: u.SeatID}
		item := ""
		if u.SeatID != nil {
			item = tickets.SeatItem(*u.SeatID)
		} else if u.UnitNo != nil {
			item = tickets.GAItem(u.SectionID, *u.UnitNo)
		}
		if t.Code, err = s.cfg.TicketKeys.Sign(tickets.Claims{TicketID: t.ID, EventID: o.EventID, Item: item}); err != nil {
			return nil, heldAt, "", err
		}
		issued = append(issued, t)
	}
	confirmed, err := tx.CompleteSale(ctx, o.HoldID, o.ID, o.EventID, issued, salePayload(o, sale.Sold))
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
