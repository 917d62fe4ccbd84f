package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/rest"
)

// hold is the hold as both interfaces show it (the GraphQL query below
// selects the same fields).
type hold struct {
	ID, Status           string
	ExpiresAt, CreatedAt time.Time
	Event                struct{ ID, Name string }
	Items                []struct {
		Section struct{ ID, Name, Kind string }
		Seat    *struct {
			ID, Row string
			Number  int
		}
		Price struct {
			Amount   int
			Currency string
		}
	}
	Total struct {
		Amount   int
		Currency string
	}
	Order *struct{ ID, Status string }
}

func (h hold) utc() hold { h.ExpiresAt, h.CreatedAt = h.ExpiresAt.UTC(), h.CreatedAt.UTC(); return h }

const holdQuery = `query($id: ID!) { hold(id: $id) { id status expiresAt createdAt event { id name }
  items { section { id name kind } seat { id row number } price { amount currency } }
  total { amount currency } order { id status } } }`

// order is the order as both interfaces show it.
type order struct {
	ID, Status string
	Hold       struct{ ID, Status string }
	Event      struct{ ID string }
	Total      struct{ Amount int }
	Payments   []struct {
		ID, Status  string
		CheckoutURL *string `json:"checkoutUrl"`
	}
	Tickets []struct {
		ID, Code, Status string
		Seat             *struct{ ID string }
	}
}

const orderQuery = `query($id: ID!) { order(id: $id) { id status hold { id status } event { id } total { amount }
  payments { id status checkoutUrl } tickets { id code status seat { id } } } }`

// TestREST runs every endpoint against one server (one database, the
// workers and paysim running): success, the contract's error statuses and
// equivalence with GraphQL.
func TestREST(t *testing.T) {
	e := newEnv(t)
	t.Run("Catalog", func(t *testing.T) { testCatalog(t, e) })
	t.Run("Holds", func(t *testing.T) { testHolds(t, e) })
	t.Run("Queue", func(t *testing.T) { testQueue(t, e) })
	t.Run("Orders", func(t *testing.T) { testOrders(t, e) })
	t.Run("SeatMapStreamResumes", func(t *testing.T) { testStreamResume(t, e) })
	t.Run("OpenAPI", func(t *testing.T) { testOpenAPI(t, e) })
	t.Run("READMEExample", func(t *testing.T) { testREADME(t, e) })
}

func testCatalog(t *testing.T, e *env) {
	var page struct {
		TotalCount int
		Edges      []struct {
			Cursor string
			Node   struct{ ID, Name, VenueID string }
		}
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
		Facets struct{ Categories, Cities []struct{ Value string } }
	}
	var r response
	require.Eventually(t, func() bool { // the search index is built in the background
		r = e.do("GET", "/api/events?first=5&city=Madrid&category=music&category=theatre", "", nil)
		if r.Status != http.StatusOK {
			return false
		}
		r.into(t, &page)
		return page.TotalCount == 3
	}, 30*time.Second, 100*time.Millisecond, "search never listed the fixture events")
	require.Len(t, page.Edges, 3)
	require.True(t, slices.ContainsFunc(page.Edges, func(x struct {
		Cursor string
		Node   struct{ ID, Name, VenueID string }
	}) bool {
		return x.Node.ID == e.ev.ID
	}))
	require.Equal(t, "public, max-age=10", r.Header.Get("Cache-Control"))
	etag := r.Header.Get("ETag")
	require.Regexp(t, `^"[^"]+"$`, etag)

	// If-None-Match: 304 without a body; a stale tag gets the page.
	nm := e.do("GET", "/api/events?first=5&city=Madrid&category=music&category=theatre", "", nil, "If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, nm.Status)
	require.Empty(t, nm.Body)
	require.Equal(t, etag, nm.Header.Get("ETag"))
	require.Equal(t, http.StatusOK, e.do("GET", "/api/events?first=5&city=Madrid&category=music&category=theatre", "", nil, "If-None-Match", `"stale"`).Status)

	// Pagination with after.
	one := e.do("GET", "/api/events?first=1&city=Madrid", "", nil)
	var p1 struct {
		PageInfo struct {
			HasNextPage bool
			EndCursor   string
		}
		Edges []struct{ Node struct{ ID string } }
	}
	one.into(t, &p1)
	require.True(t, p1.PageInfo.HasNextPage)
	var p2 struct {
		Edges []struct{ Node struct{ ID string } }
	}
	e.do("GET", "/api/events?first=1&city=Madrid&after="+p1.PageInfo.EndCursor, "", nil).into(t, &p2)
	require.Len(t, p2.Edges, 1)
	require.NotEqual(t, p1.Edges[0].Node.ID, p2.Edges[0].Node.ID)

	// Validation, authentication, availability.
	require.Equal(t, "lat", e.do("GET", "/api/events?lat=40.4", "", nil).requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "first", e.do("GET", "/api/events?first=many", "", nil).requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "from", e.do("GET", "/api/events?from=yesterday", "", nil).requireError(t, 400, "BAD_USER_INPUT")["field"])
	e.do("GET", "/api/events?sort=DISTANCE", "", nil).requireError(t, 400, "BAD_USER_INPUT")
	e.do("GET", "/api/events", "not-a-jwt", nil).requireError(t, 401, "UNAUTHENTICATED")
	noSearch := httptest.NewServer(func() http.Handler {
		mux := http.NewServeMux()
		rest.New(rest.Services{Catalog: e.a.Catalog}).Mount(mux)
		return mux
	}())
	defer noSearch.Close()
	resp, err := http.Get(noSearch.URL + "/api/events")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)

	// Event details with the seat-map projection, equal to GraphQL's.
	r = e.do("GET", "/api/events/"+e.ev.ID, "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "public, max-age=2", r.Header.Get("Cache-Control"))
	type detail struct {
		ID, Name, SaleStatus string
		SaleConditions       struct {
			MaxTicketsPerUser int
			QueueRequired     bool
		}
		Venue struct {
			City     string
			Sections []struct {
				ID, Kind string
				Seats    []struct{ ID string }
			}
		}
		Prices []struct {
			Section struct{ ID string }
			Price   struct{ Amount int }
		}
		Availability struct{ Available, Held, Sold, Capacity int }
		SeatMap      struct {
			EventID, Cursor string
			Seats           []struct{ SeatID, SectionID, Status string }
		}
	}
	var d detail
	r.into(t, &d)
	require.Equal(t, "Madrid", d.Venue.City)
	require.Len(t, d.Venue.Sections, 2)
	require.Len(t, d.Venue.Sections[0].Seats, 10)
	require.Empty(t, d.Venue.Sections[1].Seats)
	require.Len(t, d.Prices, 2)
	require.Len(t, d.SeatMap.Seats, 10)
	require.NotEmpty(t, d.SeatMap.Cursor)
	var g struct{ Event detail }
	e.graphql("", `query($id: ID!) { event(id: $id) { id name saleStatus saleConditions { maxTicketsPerUser queueRequired }
	  venue { city sections { id kind seats { id } } } prices { section { id } price { amount } }
	  availability { available held sold capacity } seatMap { eventId cursor seats { seatId sectionId status } } } }`,
		map[string]any{"id": e.ev.ID}, &g)
	require.Equal(t, g.Event, d)
	nm = e.do("GET", "/api/events/"+e.ev.ID, "", nil, "If-None-Match", r.Header.Get("ETag"))
	require.Equal(t, http.StatusNotModified, nm.Status)

	e.do("GET", "/api/events/"+uuid.NewString(), "", nil).requireError(t, 404, "NOT_FOUND")
	e.do("GET", "/api/events/not-an-id", "", nil).requireError(t, 404, "NOT_FOUND")
}

func testHolds(t *testing.T, e *env) {
	ana, bea := e.token("ana"), e.token("bea")
	ev := e.ev
	body := map[string]any{"eventId": ev.ID, "seatIds": []string{ev.Seats[0]}}

	// Refusals before any domain call.
	e.do("POST", "/api/holds", "", body, "Idempotency-Key", "k1").requireError(t, 401, "UNAUTHENTICATED")
	require.Equal(t, "Idempotency-Key", e.do("POST", "/api/holds", ana, body).requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "body", e.do("POST", "/api/holds", ana, `{"eventId": `, "Idempotency-Key", "k1").requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "body", e.do("POST", "/api/holds", ana, "", "Idempotency-Key", "k1").requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "input.seats", e.do("POST", "/api/holds", ana, map[string]any{"eventId": ev.ID, "seats": []string{}},
		"Idempotency-Key", "k1").requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "input.idempotencyKey", e.do("POST", "/api/holds", ana, map[string]any{"eventId": ev.ID, "idempotencyKey": "x"},
		"Idempotency-Key", "k1").requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "input.seatIds", e.do("POST", "/api/holds", ana, map[string]any{"eventId": ev.ID, "seatIds": "one"},
		"Idempotency-Key", "k1").requireError(t, 400, "BAD_USER_INPUT")["field"])
	// The domain's validation, with the contract's field names.
	require.Equal(t, "Idempotency-Key", e.do("POST", "/api/holds", ana, body, "Idempotency-Key", strings.Repeat("k", 201)).
		requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "input.seatIds", e.do("POST", "/api/holds", ana, map[string]any{"eventId": ev.ID},
		"Idempotency-Key", "k1").requireError(t, 400, "BAD_USER_INPUT")["field"])

	// Success, and a replay returns the same hold.
	r := e.do("POST", "/api/holds", ana, body, "Idempotency-Key", "k1")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	var h hold
	r.into(t, &h)
	require.Equal(t, "/api/holds/"+h.ID, r.Header.Get("Location"))
	require.Equal(t, "ACTIVE", h.Status)
	require.Equal(t, ev.ID, h.Event.ID)
	require.Len(t, h.Items, 1)
	require.Equal(t, ev.Seats[0], h.Items[0].Seat.ID)
	require.Equal(t, "Stalls", h.Items[0].Section.Name)
	require.Equal(t, 5000, h.Total.Amount)
	require.Nil(t, h.Order)
	var again hold
	e.do("POST", "/api/holds", ana, body, "Idempotency-Key", "k1").into(t, &again)
	require.Equal(t, h.ID, again.ID)

	// The contract's errors.
	e.do("POST", "/api/holds", ana, map[string]any{"eventId": ev.ID, "seatIds": []string{ev.Seats[1]}},
		"Idempotency-Key", "k1").requireError(t, 422, "IDEMPOTENCY_KEY_REUSED")
	require.Equal(t, []any{ev.Seats[0]}, e.do("POST", "/api/holds", bea, body, "Idempotency-Key", "b1").
		requireError(t, 409, "SEAT_UNAVAILABLE")["unavailableSeatIds"])
	require.EqualValues(t, 8, e.do("POST", "/api/holds", bea, map[string]any{"eventId": ev.ID,
		"generalAdmission": []map[string]any{{"sectionId": ev.GA, "quantity": 9}}}, "Idempotency-Key", "b2").
		requireError(t, 409, "HOLD_LIMIT_EXCEEDED")["limit"])
	e.do("POST", "/api/holds", bea, map[string]any{"eventId": uuid.NewString(), "seatIds": []string{ev.Seats[1]}},
		"Idempotency-Key", "b3").requireError(t, 404, "NOT_FOUND")
	e.do("POST", "/api/holds", bea, map[string]any{"eventId": e.upcoming.ID, "seatIds": []string{e.upcoming.Seats[0]}},
		"Idempotency-Key", "b4").requireError(t, 409, "SALE_NOT_OPEN")
	e.do("POST", "/api/holds", bea, map[string]any{"eventId": e.queued.ID, "seatIds": []string{e.queued.Seats[0]}},
		"Idempotency-Key", "b5").requireError(t, 428, "QUEUE_ADMISSION_REQUIRED")

	// Reading: owner, another user, unknown.
	var got hold
	r = e.do("GET", "/api/holds/"+h.ID, ana, nil)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	r.into(t, &got)
	require.Equal(t, h.utc(), got.utc())
	e.do("GET", "/api/holds/"+h.ID, bea, nil).requireError(t, 403, "FORBIDDEN")
	e.do("GET", "/api/holds/"+uuid.NewString(), bea, nil).requireError(t, 404, "NOT_FOUND")
	e.do("GET", "/api/holds/"+h.ID, "", nil).requireError(t, 401, "UNAUTHENTICATED")

	// Equivalence: REST-created read through GraphQL, and the reverse (best
	// available + GA, so seats and GA items are both compared).
	var gq struct{ Hold hold }
	e.graphql(ana, holdQuery, map[string]any{"id": h.ID}, &gq)
	require.Equal(t, h.utc(), gq.Hold.utc())
	var created struct{ CreateHold struct{ ID string } }
	e.graphql(bea, `mutation($e: ID!, $ga: ID!) { createHold(input: {eventId: $e, bestAvailable: {quantity: 2},
	  generalAdmission: [{sectionId: $ga, quantity: 1}], idempotencyKey: "g1"}) { id } }`,
		map[string]any{"e": ev.ID, "ga": ev.GA}, &created)
	e.graphql(bea, holdQuery, map[string]any{"id": created.CreateHold.ID}, &gq)
	var viaREST hold
	e.do("GET", "/api/holds/"+created.CreateHold.ID, bea, nil).into(t, &viaREST)
	require.Equal(t, gq.Hold.utc(), viaREST.utc())
	require.Len(t, viaREST.Items, 3)
	require.True(t, slices.ContainsFunc(viaREST.Items, func(it struct {
		Section struct{ ID, Name, Kind string }
		Seat    *struct {
			ID, Row string
			Number  int
		}
		Price struct {
			Amount   int
			Currency string
		}
	}) bool {
		return it.Seat == nil && it.Section.Kind == "GENERAL_ADMISSION"
	}))

	require.Equal(t, http.StatusOK, e.do("DELETE", "/api/holds/"+viaREST.ID, bea, nil).Status)

	// Cancel: another user, the owner, twice, unknown.
	e.do("DELETE", "/api/holds/"+h.ID, bea, nil).requireError(t, 403, "FORBIDDEN")
	e.do("DELETE", "/api/holds/"+h.ID, "", nil).requireError(t, 401, "UNAUTHENTICATED")
	r = e.do("DELETE", "/api/holds/"+h.ID, ana, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r.into(t, &got)
	require.Equal(t, "CANCELLED", got.Status)
	e.do("DELETE", "/api/holds/"+h.ID, ana, nil).requireError(t, 410, "HOLD_EXPIRED")
	e.do("DELETE", "/api/holds/"+uuid.NewString(), ana, nil).requireError(t, 404, "NOT_FOUND")
	e.graphql(ana, holdQuery, map[string]any{"id": h.ID}, &gq)
	require.Equal(t, "CANCELLED", gq.Hold.Status)
	// The seat is for sale again.
	r = e.do("POST", "/api/holds", bea, body, "Idempotency-Key", "b6")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	r.into(t, &got)
	e.do("DELETE", "/api/holds/"+got.ID, bea, nil)
}

func testQueue(t *testing.T, e *env) {
	cy := e.token("cy")
	q := "/api/events/" + e.queued.ID + "/queue"
	e.do("GET", q, cy, nil).requireError(t, 404, "NOT_FOUND")
	e.do("POST", q, "", nil).requireError(t, 401, "UNAUTHENTICATED")
	e.do("POST", "/api/events/"+e.ev.ID+"/queue", cy, nil).requireError(t, 400, "BAD_USER_INPUT")

	var tk struct {
		EventID, Status string
		Position        *int
		AdmissionToken  *string
	}
	r := e.do("POST", q, cy, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r.into(t, &tk)
	require.Equal(t, e.queued.ID, tk.EventID)
	if tk.Status == "WAITING" {
		require.Equal(t, 1, *tk.Position)
	}
	require.Eventually(t, func() bool {
		_, err := e.a.Queue.AdmitEvent(context.Background(), e.queued.ID)
		require.NoError(t, err)
		e.do("GET", q, cy, nil).into(t, &tk)
		return tk.Status == "ADMITTED"
	}, 10*time.Second, 100*time.Millisecond)
	require.NotEmpty(t, *tk.AdmissionToken)

	// The admission token in the X-Admission-Token header (or the body).
	r = e.do("POST", "/api/holds", cy, map[string]any{"eventId": e.queued.ID, "seatIds": []string{e.queued.Seats[0]}},
		"Idempotency-Key", "q1", "X-Admission-Token", *tk.AdmissionToken)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	r = e.do("POST", "/api/holds", cy, map[string]any{"eventId": e.queued.ID, "seatIds": []string{e.queued.Seats[1]},
		"admissionToken": *tk.AdmissionToken}, "Idempotency-Key", "q2")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))

	// Joins are rate limited per user: 429 with Retry-After.
	dee := e.token("dee")
	for i := 0; ; i++ {
		require.Less(t, i, 30, "never rate limited")
		r = e.do("POST", q, dee, nil)
		if r.Status != http.StatusOK {
			break
		}
	}
	ext := r.requireError(t, 429, "RATE_LIMITED")
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, secs, 1)
	require.EqualValues(t, secs, ext["retryAfterSeconds"])
}

func testOrders(t *testing.T, e *env) {
	ana, bea := e.token("ana"), e.token("bea")
	ev := e.ev
	newHold := func(tok string, seat int) string {
		var h hold
		r := e.do("POST", "/api/holds", tok, map[string]any{"eventId": ev.ID, "seatIds": []string{ev.Seats[seat]}},
			"Idempotency-Key", uuid.NewString())
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		r.into(t, &h)
		return h.ID
	}
	h1 := newHold(ana, 7)
	body := map[string]any{"holdId": h1}

	e.do("POST", "/api/orders", "", body, "Idempotency-Key", "o1").requireError(t, 401, "UNAUTHENTICATED")
	require.Equal(t, "Idempotency-Key", e.do("POST", "/api/orders", ana, body).requireError(t, 400, "BAD_USER_INPUT")["field"])
	require.Equal(t, "input.hold", e.do("POST", "/api/orders", ana, map[string]any{"hold": h1}, "Idempotency-Key", "o1").
		requireError(t, 400, "BAD_USER_INPUT")["field"])
	e.do("POST", "/api/orders", bea, body, "Idempotency-Key", "o1").requireError(t, 403, "FORBIDDEN")
	e.do("POST", "/api/orders", ana, map[string]any{"holdId": uuid.NewString()}, "Idempotency-Key", "o0").requireError(t, 404, "NOT_FOUND")

	r := e.do("POST", "/api/orders", ana, body, "Idempotency-Key", "o1")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	var o order
	r.into(t, &o)
	require.Equal(t, "/api/orders/"+o.ID, r.Header.Get("Location"))
	require.Equal(t, "AWAITING_PAYMENT", o.Status)
	require.Equal(t, h1, o.Hold.ID)
	require.Equal(t, 5000, o.Total.Amount)
	require.Len(t, o.Payments, 1)
	require.NotNil(t, o.Payments[0].CheckoutURL)
	var again order
	e.do("POST", "/api/orders", ana, body, "Idempotency-Key", "o1").into(t, &again)
	require.Equal(t, o.ID, again.ID)
	require.Equal(t, o.ID, e.do("POST", "/api/orders", ana, body, "Idempotency-Key", "o2").
		requireError(t, 409, "HOLD_ALREADY_ORDERED")["orderId"])
	h2 := newHold(ana, 8)
	e.do("POST", "/api/orders", ana, map[string]any{"holdId": h2}, "Idempotency-Key", "o1").requireError(t, 422, "IDEMPOTENCY_KEY_REUSED")
	e.expireHold(h2)
	e.do("POST", "/api/orders", ana, map[string]any{"holdId": h2}, "Idempotency-Key", "o3").requireError(t, 410, "HOLD_EXPIRED")

	// Reading; the hold shows its order.
	e.do("GET", "/api/orders/"+o.ID, bea, nil).requireError(t, 403, "FORBIDDEN")
	e.do("GET", "/api/orders/"+uuid.NewString(), ana, nil).requireError(t, 404, "NOT_FOUND")
	e.do("GET", "/api/orders/"+o.ID, "", nil).requireError(t, 401, "UNAUTHENTICATED")
	var hv hold
	e.do("GET", "/api/holds/"+h1, ana, nil).into(t, &hv)
	require.Equal(t, o.ID, hv.Order.ID)

	// retryPayment: refused while the attempt is open; after a decline, a
	// new attempt that pays.
	pay1 := "/api/orders/" + o.ID + "/payments"
	require.Equal(t, "Idempotency-Key", e.do("POST", pay1, ana, nil).requireError(t, 400, "BAD_USER_INPUT")["field"])
	e.do("POST", pay1, ana, nil, "Idempotency-Key", "r1").requireError(t, 409, "PAYMENT_IN_PROGRESS")
	e.do("POST", pay1, bea, nil, "Idempotency-Key", "r1").requireError(t, 403, "FORBIDDEN")
	pay(t, *o.Payments[0].CheckoutURL, "decline")
	require.Eventually(t, func() bool {
		e.do("GET", "/api/orders/"+o.ID, ana, nil).into(t, &o)
		return o.Status == "PAYMENT_FAILED"
	}, 30*time.Second, 100*time.Millisecond)
	r = e.do("POST", pay1, ana, nil, "Idempotency-Key", "r2")
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r.into(t, &o)
	require.Len(t, o.Payments, 2)
	require.Equal(t, "FAILED", o.Payments[0].Status)
	require.NotNil(t, o.Payments[1].CheckoutURL)
	pay(t, *o.Payments[1].CheckoutURL, "succeed")
	require.Eventually(t, func() bool {
		e.do("GET", "/api/orders/"+o.ID, ana, nil).into(t, &o)
		return o.Status == "CONFIRMED"
	}, 30*time.Second, 100*time.Millisecond)
	require.Len(t, o.Tickets, 1)
	require.Equal(t, ev.Seats[7], o.Tickets[0].Seat.ID)
	require.Equal(t, "VALID", o.Tickets[0].Status)
	require.Equal(t, "PURCHASED", o.Hold.Status)

	// Equivalence with GraphQL's order.
	var g struct{ Order order }
	e.graphql(ana, orderQuery, map[string]any{"id": o.ID}, &g)
	require.Equal(t, g.Order, o)
}
