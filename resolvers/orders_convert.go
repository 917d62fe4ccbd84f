package resolvers

import (
	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/orders"
)

// Converters of the orders engine's values to GraphQL models.

func toModelOrder(o orders.Order) *model.Order {
	return &model.Order{
		ID: o.ID, Status: model.OrderStatus(o.Status),
		Total:     &model.Money{Amount: int(o.TotalAmount), Currency: o.Currency},
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, HoldID: o.HoldID, EventID: o.EventID,
	}
}

func toModelPayment(p orders.Payment) *model.Payment {
	return &model.Payment{
		ID: p.ID, Status: model.PaymentStatus(p.Status),
		Amount:   &model.Money{Amount: int(p.Amount), Currency: p.Currency},
		Provider: p.Provider, ProviderReference: p.ProviderRef, CheckoutURL: p.CheckoutURL,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
}

func toModelTicket(t orders.Ticket) *model.Ticket {
	return &model.Ticket{ID: t.ID, Code: t.Code, Status: model.TicketStatus(t.Status), SectionID: t.SectionID, SeatID: t.SeatID, EventID: t.EventID}
}

func toModelCheckIn(r orders.CheckInResult) *model.CheckInResult {
	out := &model.CheckInResult{Admitted: r.Admitted}
	if r.Ticket != nil {
		out.Ticket = toModelTicket(*r.Ticket)
	}
	if r.Reason != "" {
		out.Reason = &r.Reason
	}
	return out
}
