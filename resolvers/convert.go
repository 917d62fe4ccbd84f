package resolvers

import (
	"context"

	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/graph/model"
	"github.com/ticketing/ticketing/holds"
)

// Converters between domain values and GraphQL models (toModelX) and from
// GraphQL inputs to domain inputs (fromModelX).

func toModelVenue(v catalog.Venue) *model.Venue {
	return &model.Venue{
		ID: v.ID, Name: v.Name, Address: v.Address, City: v.City, Country: v.Country,
		Location: &model.GeoPoint{Lat: v.Lat, Lon: v.Lon}, Capacity: v.Capacity,
	}
}

func toModelSection(s catalog.Section) *model.Section {
	return &model.Section{
		ID: s.ID, Name: s.Name, Kind: model.SectionKind(s.Kind), Capacity: s.Capacity, VenueID: s.VenueID,
		Bounds: &model.Rect{X: s.BoundsX, Y: s.BoundsY, Width: s.BoundsW, Height: s.BoundsH},
	}
}

func toModelSeat(s catalog.Seat) *model.Seat {
	return &model.Seat{ID: s.ID, Row: s.RowLabel, Number: s.Number, X: s.X, Y: s.Y}
}

func toModelArtist(a catalog.Artist) *model.Artist {
	genres := a.Genres
	if genres == nil {
		genres = []string{}
	}
	return &model.Artist{ID: a.ID, Name: a.Name, Bio: a.Bio, Genres: genres}
}

func toModelEvent(e catalog.Event) *model.Event {
	return &model.Event{
		ID: e.ID, Name: e.Name, Description: e.Description, Category: e.Category,
		StartsAt: e.StartsAt, EndsAt: e.EndsAt, VenueID: e.VenueID,
		SaleConditions: &model.SaleConditions{
			SaleStartsAt: e.SaleStartsAt, SaleEndsAt: e.SaleEndsAt,
			MaxTicketsPerUser: e.MaxTicketsPerUser, HoldDurationSeconds: e.HoldDurationSeconds,
			QueueRequired: e.QueueRequired, RefundPolicy: e.RefundPolicy, RefundDeadline: e.RefundDeadline,
		},
		CancelledAt: e.CancelledAt,
	}
}

func toModelPrice(p catalog.Price) *model.SectionPrice {
	return &model.SectionPrice{SectionID: p.SectionID, Price: &model.Money{Amount: int(p.Amount), Currency: p.Currency}}
}

func toModelAvailability(a catalog.Availability) *model.Availability {
	return &model.Availability{Available: a.Available, Held: a.Held, Sold: a.Sold, Capacity: a.Capacity}
}

func toModelEventConnection(p catalog.EventPage) *model.EventConnection {
	c := &model.EventConnection{Edges: make([]*model.EventEdge, len(p.Events)), TotalCount: p.TotalCount,
		PageInfo: &model.PageInfo{HasNextPage: p.HasNextPage}}
	for i, e := range p.Events {
		c.Edges[i] = &model.EventEdge{Cursor: p.Cursors[i], Node: toModelEvent(e)}
	}
	if n := len(p.Cursors); n > 0 {
		c.PageInfo.EndCursor = &p.Cursors[n-1]
	}
	return c
}

func fromModelVenueInput(in model.CreateVenueInput) catalog.VenueInput {
	out := catalog.VenueInput{Name: in.Name, Address: in.Address, City: in.City, Country: in.Country}
	if in.Location != nil {
		out.Lat, out.Lon = in.Location.Lat, in.Location.Lon
	}
	for _, s := range in.Sections {
		if s == nil {
			continue
		}
		sec := catalog.SectionInput{Name: s.Name, Kind: catalog.SectionKind(s.Kind), Capacity: orZero(s.Capacity)}
		for _, r := range s.Rows {
			if r != nil {
				sec.Rows = append(sec.Rows, catalog.RowInput{Label: r.Label, Seats: r.Seats})
			}
		}
		if l := s.Layout; l != nil {
			sec.Layout = &catalog.Layout{X: l.X, Y: l.Y, Angle: orZero(l.Angle), Curve: orZero(l.Curve),
				SeatSpacing: orZero(l.SeatSpacing), RowSpacing: orZero(l.RowSpacing), Width: orZero(l.Width), Height: orZero(l.Height)}
		}
		out.Sections = append(out.Sections, sec)
	}
	return out
}

func fromModelArtistInput(in model.CreateArtistInput) catalog.ArtistInput {
	return catalog.ArtistInput{Name: in.Name, Bio: orZero(in.Bio), Genres: in.Genres}
}

func fromModelEventInput(in model.CreateEventInput) catalog.EventInput {
	out := catalog.EventInput{
		Name: in.Name, Description: orZero(in.Description), Category: in.Category,
		StartsAt: in.StartsAt, EndsAt: in.EndsAt, VenueID: in.VenueID, ArtistIDs: in.ArtistIds,
		SaleStartsAt: in.SaleStartsAt, SaleEndsAt: in.SaleEndsAt,
		MaxTicketsPerUser: 8, HoldDurationSeconds: 600,
		QueueRequired: orZero(in.QueueRequired), RefundPolicy: orZero(in.RefundPolicy),
		RefundDeadline: in.RefundDeadline,
	}
	if in.MaxTicketsPerUser != nil {
		out.MaxTicketsPerUser = *in.MaxTicketsPerUser
	}
	if in.HoldDurationSeconds != nil {
		out.HoldDurationSeconds = *in.HoldDurationSeconds
	}
	for _, p := range in.Prices {
		if p != nil {
			out.Prices = append(out.Prices, catalog.PriceInput{SectionID: p.SectionID, Amount: int64(p.Amount), Currency: p.Currency})
		}
	}
	return out
}

// orZero returns *p, or the zero value for nil.
func orZero[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// orDefault returns *p, or def for nil.
func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// priceBound returns the event's price that wins by better (lowest or
// highest), or nil when the event has no prices.
func priceBound(ctx context.Context, eventID string, better func(a, b int64) bool) (*model.Money, error) {
	ps, err := LoadersFrom(ctx).PricesByEventID.Load(ctx, eventID)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	best := ps[0]
	for _, p := range ps[1:] {
		if better(p.Amount, best.Amount) {
			best = p
		}
	}
	return &model.Money{Amount: int(best.Amount), Currency: best.Currency}, nil
}

// ---- holds

func toModelHold(h holds.Hold) *model.Hold {
	return &model.Hold{
		ID: h.ID, Status: model.HoldStatus(h.Status), ExpiresAt: h.ExpiresAt, CreatedAt: h.CreatedAt,
		Total: &model.Money{Amount: int(h.TotalAmount), Currency: h.Currency}, EventID: h.EventID,
	}
}

func toModelHoldItems(items []holds.Item) []*model.HoldItem {
	out := make([]*model.HoldItem, len(items))
	for i, it := range items {
		out[i] = &model.HoldItem{Price: &model.Money{Amount: int(it.PriceAmount), Currency: it.Currency},
			SectionID: it.SectionID, SeatID: it.SeatID}
	}
	return out
}

func fromModelHoldInput(in model.CreateHoldInput) holds.CreateRequest {
	req := holds.CreateRequest{EventID: in.EventID, SeatIDs: in.SeatIds, IdempotencyKey: in.IdempotencyKey,
		AdmissionToken: orZero(in.AdmissionToken)}
	if b := in.BestAvailable; b != nil {
		req.BestAvailable = holds.NewBestAvailable(b.Quantity, orZero(b.SectionID), b.Adjacent)
	}
	for _, g := range in.GeneralAdmission {
		if g != nil {
			req.GeneralAdmission = append(req.GeneralAdmission, holds.GARequest{SectionID: g.SectionID, Quantity: g.Quantity})
		}
	}
	return req
}

// mapAll converts every element of xs with f (list fields of the schema).
func mapAll[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
