package rest

import (
	"context"
	"time"

	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/seatmap"
)

// The JSON shapes of the REST interface. Field names are those of the
// GraphQL types (camelCase), so a client sees the same hold or order through
// both; a reference to another resource that GraphQL would resolve lazily
// is either embedded in a short form (event, order) or given by id
// (venueId).

type money struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

type geoPoint struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

type rect struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

type sectionJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Capacity int    `json:"capacity"`
	Bounds   rect   `json:"bounds"`
}

type seatJSON struct {
	ID     string  `json:"id"`
	Row    string  `json:"row"`
	Number int     `json:"number"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
}

type venueSection struct {
	sectionJSON
	Seats []seatJSON `json:"seats"`
}

type venueJSON struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Address  string         `json:"address"`
	City     string         `json:"city"`
	Country  string         `json:"country"`
	Location geoPoint       `json:"location"`
	Capacity int            `json:"capacity"`
	Sections []venueSection `json:"sections"`
}

type artistJSON struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Bio    string   `json:"bio"`
	Genres []string `json:"genres"`
}

type saleConditions struct {
	SaleStartsAt        time.Time  `json:"saleStartsAt"`
	SaleEndsAt          *time.Time `json:"saleEndsAt"`
	MaxTicketsPerUser   int        `json:"maxTicketsPerUser"`
	HoldDurationSeconds int        `json:"holdDurationSeconds"`
	QueueRequired       bool       `json:"queueRequired"`
	RefundPolicy        string     `json:"refundPolicy"`
}

// eventJSON is an event without its related resources (search results,
// holds, orders).
type eventJSON struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	Description    string         `json:"description"`
	Category       string         `json:"category"`
	StartsAt       time.Time      `json:"startsAt"`
	EndsAt         *time.Time     `json:"endsAt"`
	VenueID        string         `json:"venueId"`
	SaleConditions saleConditions `json:"saleConditions"`
}

type sectionPrice struct {
	Section sectionJSON `json:"section"`
	Price   money       `json:"price"`
}

type availability struct {
	Available int `json:"available"`
	Held      int `json:"held"`
	Sold      int `json:"sold"`
	Capacity  int `json:"capacity"`
}

// eventDetail is GET /api/events/{eventId}: the event with its venue,
// artists, prices, availability, sale status and seat-map projection.
type eventDetail struct {
	eventJSON
	Venue        venueJSON         `json:"venue"`
	Artists      []artistJSON      `json:"artists"`
	Prices       []sectionPrice    `json:"prices"`
	Availability availability      `json:"availability"`
	SaleStatus   string            `json:"saleStatus"`
	SeatMap      *seatmap.Snapshot `json:"seatMap"`
}

type holdItem struct {
	Section sectionJSON `json:"section"`
	Seat    *seatJSON   `json:"seat"`
	Price   money       `json:"price"`
}

// orderRef is an order as seen from its hold.
type orderRef struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Total     money     `json:"total"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

type holdJSON struct {
	ID        string     `json:"id"`
	Event     eventJSON  `json:"event"`
	Status    string     `json:"status"`
	ExpiresAt time.Time  `json:"expiresAt"`
	CreatedAt time.Time  `json:"createdAt"`
	Items     []holdItem `json:"items"`
	Total     money      `json:"total"`
	Order     *orderRef  `json:"order"`
}

type paymentJSON struct {
	ID                string    `json:"id"`
	Status            string    `json:"status"`
	Amount            money     `json:"amount"`
	Provider          string    `json:"provider"`
	ProviderReference *string   `json:"providerReference"`
	CheckoutURL       *string   `json:"checkoutUrl"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}

type ticketJSON struct {
	ID      string      `json:"id"`
	Section sectionJSON `json:"section"`
	Seat    *seatJSON   `json:"seat"`
	Code    string      `json:"code"`
	Status  string      `json:"status"`
}

type orderJSON struct {
	ID        string        `json:"id"`
	Status    string        `json:"status"`
	Hold      holdJSON      `json:"hold"`
	Event     eventJSON     `json:"event"`
	Total     money         `json:"total"`
	CreatedAt time.Time     `json:"createdAt"`
	UpdatedAt time.Time     `json:"updatedAt"`
	Payments  []paymentJSON `json:"payments"`
	Tickets   []ticketJSON  `json:"tickets"`
}

type queueTicketJSON struct {
	EventID              string     `json:"eventId"`
	Status               string     `json:"status"`
	Position             *int       `json:"position"`
	EstimatedWaitSeconds *int       `json:"estimatedWaitSeconds"`
	AdmissionToken       *string    `json:"admissionToken"`
	AdmissionExpiresAt   *time.Time `json:"admissionExpiresAt"`
}

func toSection(s catalog.Section) sectionJSON {
	return sectionJSON{ID: s.ID, Name: s.Name, Kind: s.Kind, Capacity: s.Capacity,
		Bounds: rect{X: s.BoundsX, Y: s.BoundsY, Width: s.BoundsW, Height: s.BoundsH}}
}

func toSeat(s catalog.Seat) seatJSON {
	return seatJSON{ID: s.ID, Row: s.RowLabel, Number: s.Number, X: s.X, Y: s.Y}
}

func toEvent(e catalog.Event) eventJSON {
	return eventJSON{
		ID: e.ID, Name: e.Name, Description: e.Description, Category: e.Category,
		StartsAt: e.StartsAt, EndsAt: e.EndsAt, VenueID: e.VenueID,
		SaleConditions: saleConditions{
			SaleStartsAt: e.SaleStartsAt, SaleEndsAt: e.SaleEndsAt,
			MaxTicketsPerUser: e.MaxTicketsPerUser, HoldDurationSeconds: e.HoldDurationSeconds,
			QueueRequired: e.QueueRequired, RefundPolicy: e.RefundPolicy,
		},
	}
}

func toOrderRef(o orders.Order) *orderRef {
	return &orderRef{ID: o.ID, Status: o.Status, Total: money{o.TotalAmount, o.Currency}, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

func toPayment(p orders.Payment) paymentJSON {
	return paymentJSON{ID: p.ID, Status: p.Status, Amount: money{p.Amount, p.Currency}, Provider: p.Provider,
		ProviderReference: p.ProviderRef, CheckoutURL: p.CheckoutURL, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func toQueueTicket(t *queue.Ticket) *queueTicketJSON {
	if t == nil {
		return nil
	}
	v := t.View()
	out := &queueTicketJSON{EventID: t.EventID, Status: string(t.Status), Position: v.Position,
		EstimatedWaitSeconds: v.EstimatedWaitSeconds, AdmissionToken: v.AdmissionToken, AdmissionExpiresAt: v.AdmissionExpiresAt}
	return out
}

// places loads sections and seats by id.
func (a *API) places(ctx context.Context, sectionIDs, seatIDs []string) (map[string]catalog.Section, map[string]catalog.Seat, error) {
	secs, err := a.s.Catalog.SectionsByIDs(ctx, sectionIDs)
	if err != nil {
		return nil, nil, err
	}
	seats, err := a.s.Catalog.SeatsByIDs(ctx, seatIDs)
	if err != nil {
		return nil, nil, err
	}
	return secs, seats, nil
}

// seatOf is the seat of an item, or nil (general admission).
func seatOf(id *string, seats map[string]catalog.Seat) *seatJSON {
	if id == nil {
		return nil
	}
	if s, ok := seats[*id]; ok {
		j := toSeat(s)
		return &j
	}
	return nil
}

// holdView is the hold with its event, items and order (ord, or looked up
// when nil).
func (a *API) holdView(ctx context.Context, h holds.Hold, ord *orders.Order) (holdJSON, error) {
	ev, err := a.s.Catalog.GetEvent(ctx, h.EventID)
	if err != nil {
		return holdJSON{}, err
	}
	items, err := a.s.Holds.Items(ctx, h.ID)
	if err != nil {
		return holdJSON{}, err
	}
	var secIDs, seatIDs []string
	for _, it := range items {
		secIDs = append(secIDs, it.SectionID)
		if it.SeatID != nil {
			seatIDs = append(seatIDs, *it.SeatID)
		}
	}
	secs, seats, err := a.places(ctx, secIDs, seatIDs)
	if err != nil {
		return holdJSON{}, err
	}
	out := holdJSON{ID: h.ID, Event: toEvent(ev), Status: h.Status, ExpiresAt: h.ExpiresAt, CreatedAt: h.CreatedAt,
		Items: make([]holdItem, len(items)), Total: money{h.TotalAmount, h.Currency}}
	for i, it := range items {
		out.Items[i] = holdItem{Section: toSection(secs[it.SectionID]), Seat: seatOf(it.SeatID, seats),
			Price: money{it.PriceAmount, it.Currency}}
	}
	if ord == nil && a.s.Orders != nil {
		if ord, err = a.s.Orders.ByHold(ctx, h.ID); err != nil {
			return holdJSON{}, err
		}
	}
	if ord != nil {
		out.Order = toOrderRef(*ord)
	}
	return out, nil
}

// orderView is the order with its hold, event, payments and tickets; h is
// the order's hold, already read for the caller.
func (a *API) orderView(ctx context.Context, o orders.Order, h holds.Hold) (orderJSON, error) {
	hv, err := a.holdView(ctx, h, &o)
	if err != nil {
		return orderJSON{}, err
	}
	ps, err := a.s.Orders.Payments(ctx, o.ID)
	if err != nil {
		return orderJSON{}, err
	}
	ts, err := a.s.Orders.Tickets(ctx, o.ID)
	if err != nil {
		return orderJSON{}, err
	}
	var secIDs, seatIDs []string
	for _, t := range ts {
		secIDs = append(secIDs, t.SectionID)
		if t.SeatID != nil {
			seatIDs = append(seatIDs, *t.SeatID)
		}
	}
	secs, seats, err := a.places(ctx, secIDs, seatIDs)
	if err != nil {
		return orderJSON{}, err
	}
	out := orderJSON{ID: o.ID, Status: o.Status, Hold: hv, Event: hv.Event, Total: money{o.TotalAmount, o.Currency},
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Payments: make([]paymentJSON, len(ps)), Tickets: make([]ticketJSON, len(ts))}
	for i, p := range ps {
		out.Payments[i] = toPayment(p)
	}
	for i, t := range ts {
		out.Tickets[i] = ticketJSON{ID: t.ID, Section: toSection(secs[t.SectionID]), Seat: seatOf(t.SeatID, seats), Code: t.Code, Status: t.Status}
	}
	return out, nil
}
