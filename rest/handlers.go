package rest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/search"
)

// searchEvents is GET /api/events?text=&lat=&lon=&radiusKm=&city=&category=&from=&to=&sort=&first=&after=
// (searchEvents; category may repeat).
func (a *API) searchEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs []error
	num := func(name string) *float64 {
		if q.Get(name) == "" {
			return nil
		}
		f, err := strconv.ParseFloat(q.Get(name), 64)
		if err != nil {
			errs = append(errs, apperr.Invalid(name, "not a number"))
		}
		return &f
	}
	when := func(name string) *time.Time {
		if q.Get(name) == "" {
			return nil
		}
		t, err := time.Parse(time.RFC3339, q.Get(name))
		if err != nil {
			errs = append(errs, apperr.Invalid(name, "not an RFC 3339 time"))
		}
		return &t
	}
	in := search.Input{Text: q.Get("text"), City: q.Get("city"), Categories: q["category"],
		Sort: search.Sort(q.Get("sort")), First: 20, After: q.Get("after"), Facets: true,
		RadiusKm: num("radiusKm"), From: when("from"), To: when("to")}
	lat, lon := num("lat"), num("lon")
	if first := q.Get("first"); first != "" {
		n, err := strconv.Atoi(first)
		if err != nil {
			errs = append(errs, apperr.Invalid("first", "not an integer"))
		}
		in.First = n
	}
	if (lat == nil) != (lon == nil) {
		errs = append(errs, apperr.Invalid("lat", "lat and lon go together"))
	}
	if len(errs) > 0 {
		a.fail(w, r, errs[0])
		return
	}
	if lat != nil {
		in.Near = &search.GeoPoint{Lat: *lat, Lon: *lon}
	}
	p, err := a.s.Search.Events(r.Context(), in)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	type edge struct {
		Cursor     string    `json:"cursor"`
		DistanceKm *float64  `json:"distanceKm,omitempty"`
		Node       eventJSON `json:"node"`
	}
	type facet struct {
		Value string `json:"value"`
		Count int    `json:"count"`
	}
	facets := func(fs []search.FacetCount) []facet {
		out := make([]facet, len(fs))
		for i, f := range fs {
			out[i] = facet{f.Value, f.Count}
		}
		return out
	}
	type pageInfo struct {
		HasNextPage bool    `json:"hasNextPage"`
		EndCursor   *string `json:"endCursor"`
	}
	out := struct {
		Edges      []edge             `json:"edges"`
		PageInfo   pageInfo           `json:"pageInfo"`
		TotalCount int                `json:"totalCount"`
		Facets     map[string][]facet `json:"facets"`
	}{Edges: make([]edge, len(p.Edges)), PageInfo: pageInfo{HasNextPage: p.HasNext, EndCursor: p.EndCursor()}, TotalCount: p.Total,
		Facets: map[string][]facet{"categories": facets(p.Categories), "cities": facets(p.Cities)}}
	for i, e := range p.Edges {
		out.Edges[i] = edge{Cursor: e.Cursor, DistanceKm: e.DistanceKm, Node: toEvent(e.Event)}
	}
	a.reply(w, r, http.StatusOK, out, searchCacheControl)
}

// getEvent is GET /api/events/{eventId}: the event, its venue with sections
// and seats, artists, prices, availability and the seat-map projection.
func (a *API) getEvent(w http.ResponseWriter, r *http.Request) {
	ctx, cat, id := r.Context(), a.s.Catalog, r.PathValue("eventId")
	ev, err := cat.GetEvent(ctx, id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := eventDetail{eventJSON: toEvent(ev), Artists: []artistJSON{}, Prices: []sectionPrice{}}
	err = func() error {
		v, err := cat.GetVenue(ctx, ev.VenueID)
		if err != nil {
			return err
		}
		secs, err := cat.SectionsByVenueIDs(ctx, []string{v.ID})
		if err != nil {
			return err
		}
		secIDs := make([]string, len(secs[v.ID]))
		for i, s := range secs[v.ID] {
			secIDs[i] = s.ID
		}
		seats, err := cat.SeatsBySectionIDs(ctx, secIDs)
		if err != nil {
			return err
		}
		out.Venue = venueJSON{ID: v.ID, Name: v.Name, Address: v.Address, City: v.City, Country: v.Country,
			Location: geoPoint{v.Lat, v.Lon}, Capacity: v.Capacity, Sections: []venueSection{}}
		byID := map[string]sectionJSON{}
		for _, s := range secs[v.ID] {
			vs := venueSection{sectionJSON: toSection(s), Seats: []seatJSON{}}
			for _, seat := range seats[s.ID] {
				vs.Seats = append(vs.Seats, toSeat(seat))
			}
			out.Venue.Sections = append(out.Venue.Sections, vs)
			byID[s.ID] = vs.sectionJSON
		}
		artists, err := cat.ArtistsByEventIDs(ctx, []string{id})
		if err != nil {
			return err
		}
		for _, ar := range artists[id] {
			out.Artists = append(out.Artists, artistJSON{ar.ID, ar.Name, ar.Bio, append([]string{}, ar.Genres...)})
		}
		prices, err := cat.PricesByEventIDs(ctx, []string{id})
		if err != nil {
			return err
		}
		for _, p := range prices[id] {
			out.Prices = append(out.Prices, sectionPrice{Section: byID[p.SectionID], Price: money{p.Amount, p.Currency}})
		}
		av, err := cat.Availability(ctx, id)
		if err != nil {
			return err
		}
		out.Availability = availability{av.Available, av.Held, av.Sold, av.Capacity}
		out.SaleStatus = cat.SaleStatus(ev, av)
		out.SeatMap, err = a.s.SeatMap.Snapshot(ctx, id)
		return err
	}()
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, http.StatusOK, out, eventCacheControl)
}

// createHoldBody is CreateHoldInput without idempotencyKey (the
// Idempotency-Key header); admissionToken may also come as the
// X-Admission-Token header.
type createHoldBody struct {
	EventID       string   `json:"eventId"`
	SeatIDs       []string `json:"seatIds"`
	BestAvailable *struct {
		Quantity  int    `json:"quantity"`
		SectionID string `json:"sectionId"`
		Adjacent  *bool  `json:"adjacent"`
	} `json:"bestAvailable"`
	GeneralAdmission []struct {
		SectionID string `json:"sectionId"`
		Quantity  int    `json:"quantity"`
	} `json:"generalAdmission"`
	AdmissionToken string `json:"admissionToken"`
}

// createHold is POST /api/holds (createHold).
func (a *API) createHold(w http.ResponseWriter, r *http.Request) {
	u, err := auth.Require(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var in createHoldBody
	if err := decode(r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	req := holds.CreateRequest{EventID: in.EventID, SeatIDs: in.SeatIDs, IdempotencyKey: key, AdmissionToken: in.AdmissionToken}
	if req.AdmissionToken == "" {
		req.AdmissionToken = r.Header.Get("X-Admission-Token")
	}
	if b := in.BestAvailable; b != nil {
		req.BestAvailable = holds.NewBestAvailable(b.Quantity, b.SectionID, b.Adjacent)
	}
	for _, g := range in.GeneralAdmission {
		req.GeneralAdmission = append(req.GeneralAdmission, holds.GARequest{SectionID: g.SectionID, Quantity: g.Quantity})
	}
	h, err := a.s.Holds.Create(r.Context(), u, req)
	if err != nil {
		a.fail(w, r, headerField(err))
		return
	}
	a.replyHold(w, r, http.StatusCreated, h)
}

// getHold is GET /api/holds/{holdId} (hold).
func (a *API) getHold(w http.ResponseWriter, r *http.Request) { a.onHold(w, r, a.s.Holds.Get) }

// cancelHold is DELETE /api/holds/{holdId} (cancelHold): the cancelled hold.
func (a *API) cancelHold(w http.ResponseWriter, r *http.Request) { a.onHold(w, r, a.s.Holds.Cancel) }

// onHold answers with the hold act returns for the caller's hold {holdId}.
func (a *API) onHold(w http.ResponseWriter, r *http.Request, act func(context.Context, auth.User, string) (holds.Hold, error)) {
	u, err := auth.Require(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	h, err := act(r.Context(), u, r.PathValue("holdId"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.replyHold(w, r, http.StatusOK, h)
}

func (a *API) replyHold(w http.ResponseWriter, r *http.Request, status int, h holds.Hold) {
	v, err := a.holdView(r.Context(), h, nil)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if status == http.StatusCreated {
		w.Header().Set("Location", "/api/holds/"+h.ID)
	}
	a.reply(w, r, status, v, "")
}

// createOrder is POST /api/orders {"holdId"} (createOrder).
func (a *API) createOrder(w http.ResponseWriter, r *http.Request) {
	u, err := auth.Require(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var in struct {
		HoldID string `json:"holdId"`
	}
	if err := decode(r, &in); err != nil {
		a.fail(w, r, err)
		return
	}
	o, err := a.s.Orders.Create(r.Context(), u, in.HoldID, key)
	if err != nil {
		a.fail(w, r, headerField(err))
		return
	}
	w.Header().Set("Location", "/api/orders/"+o.ID)
	a.replyOrder(w, r, http.StatusCreated, u, o.ID)
}

// getOrder is GET /api/orders/{orderId} (order).
func (a *API) getOrder(w http.ResponseWriter, r *http.Request) {
	u, err := auth.Require(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.replyOrder(w, r, http.StatusOK, u, r.PathValue("orderId"))
}

// retryPayment is POST /api/orders/{orderId}/payments (retryPayment): a new
// payment attempt; the order in the answer.
func (a *API) retryPayment(w http.ResponseWriter, r *http.Request) {
	u, err := auth.Require(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	o, err := a.s.Orders.RetryPayment(r.Context(), u, r.PathValue("orderId"), key)
	if err != nil {
		a.fail(w, r, headerField(err))
		return
	}
	a.replyOrder(w, r, http.StatusOK, u, o.ID)
}

// replyOrder answers the caller's order as read now (Orders.Get expires it
// if its hold ran out).
func (a *API) replyOrder(w http.ResponseWriter, r *http.Request, status int, u auth.User, orderID string) {
	ctx := r.Context()
	o, err := a.s.Orders.Get(ctx, u, orderID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	h, err := a.s.Holds.Get(ctx, u, o.HoldID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	v, err := a.orderView(ctx, o, h)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, status, v, "")
}

// joinQueue is POST /api/events/{eventId}/queue (joinQueue): the caller's
// place; idempotent per user.
func (a *API) joinQueue(w http.ResponseWriter, r *http.Request) {
	u, err := auth.Require(r.Context())
	if err == nil && a.s.Queue == nil {
		err = fmt.Errorf("queue not configured: %w", apperr.ErrServiceUnavailable)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := a.s.Queue.Join(r.Context(), r.PathValue("eventId"), u.ID, queue.ClientAddr(r.Context()))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, http.StatusOK, toQueueTicket(&t), "")
}

// queueTicket is GET /api/events/{eventId}/queue (queueTicket): the caller's
// place, or 404 NOT_FOUND when not in the queue.
func (a *API) queueTicket(w http.ResponseWriter, r *http.Request) {
	u, err := auth.Require(r.Context())
	if err == nil && a.s.Queue == nil {
		err = fmt.Errorf("queue not configured: %w", apperr.ErrServiceUnavailable)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t, err := a.s.Queue.Ticket(r.Context(), r.PathValue("eventId"), u.ID)
	if err == nil && t == nil {
		err = fmt.Errorf("queue ticket: not in the queue: %w", apperr.ErrNotFound)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, http.StatusOK, toQueueTicket(t), "")
}

// ticketKeys is GET /api/ticket-keys: the JWK Set of the ticket codes'
// public keys (cacheable: keys change only with a redeploy).
func (a *API) ticketKeys(w http.ResponseWriter, r *http.Request) {
	if a.s.Orders == nil {
		a.fail(w, r, apperr.ErrServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(a.s.Orders.TicketKeysJWKS())
}
