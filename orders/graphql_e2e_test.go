package orders_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/testdb"
)

const jwtSecret = "orders-e2e-secret-0123456789"

// TestGraphQLCheckout buys a hold through the real handler of `ticketing
// serve`: createHold, createOrder, pay at paysim's checkout, the signed
// webhook to /webhooks/payments, then order/myOrders/Hold.order with
// tickets and their catalog fields.
func TestGraphQLCheckout(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dbURL := testdb.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL":            dbURL,
		"REDIS_URL":               testdb.RedisURL(),
		"JWT_HS256_SECRET":        jwtSecret,
		"PAYMENTS_BASE_URL":       paysimURL,
		"PAYMENTS_WEBHOOK_SECRET": testSecret,
		"PUBLIC_BASE_URL":         "http://" + l.Addr().String(),
		"TICKET_SIGNING_KEY":      string(ticketKey),
		"SEARCH_DIR":              t.TempDir(),
	}
	a := apptest.New(t, env)
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	ev := createEvent(t, a.Pool)

	tok, err := auth.Mint(jwtSecret, "ticketing-dev", "ticketing", "gina", nil, time.Hour)
	require.NoError(t, err)
	gql := func(query string, vars map[string]any, out any) []map[string]any {
		t.Helper()
		return apptest.GraphQL(t, srv.URL, tok, query, vars, out)
	}

	var hold struct {
		CreateHold struct{ ID string } `json:"createHold"`
	}
	require.Empty(t, gql(`mutation($e: ID!, $s: [ID!]) { createHold(input: {eventId: $e, seatIds: $s, idempotencyKey: "h1"}) { id } }`,
		map[string]any{"e": ev.ID, "s": []string{ev.Seats[0]}}, &hold))
	var created struct {
		CreateOrder struct {
			ID       string
			Status   string
			Total    struct{ Amount int }
			Payments []struct {
				Status      string
				CheckoutURL string `json:"checkoutUrl"`
			}
		} `json:"createOrder"`
	}
	require.Empty(t, gql(`mutation($h: ID!) { createOrder(input: {holdId: $h, idempotencyKey: "o1"}) { id status total { amount } payments { status checkoutUrl } } }`,
		map[string]any{"h": hold.CreateHold.ID}, &created))
	o := created.CreateOrder
	require.Equal(t, "AWAITING_PAYMENT", o.Status)
	require.Equal(t, 5000, o.Total.Amount)
	require.Len(t, o.Payments, 1)
	require.Equal(t, "PENDING", o.Payments[0].Status)

	errs := gql(`mutation($h: ID!) { createOrder(input: {holdId: $h, idempotencyKey: "o2"}) { id } }`, map[string]any{"h": hold.CreateHold.ID}, nil)
	require.Len(t, errs, 1)
	ext := errs[0]["extensions"].(map[string]any)
	require.Equal(t, "HOLD_ALREADY_ORDERED", ext["code"])
	require.Equal(t, o.ID, ext["orderId"])

	pay(t, o.Payments[0].CheckoutURL, "succeed")
	type orderView struct {
		Status  string
		Tickets []struct {
			Code    string
			Section struct{ Name string }
			Seat    *struct{ Number int }
			Event   struct{ ID string }
		}
		Hold  struct{ Status string }
		Event struct{ ID string }
	}
	var got struct{ Order orderView }
	require.Eventually(t, func() bool {
		require.Empty(t, gql(`query($id: ID!) { order(id: $id) { status tickets { code section { name } seat { number } event { id } } hold { status } event { id } } }`,
			map[string]any{"id": o.ID}, &got))
		return got.Order.Status == "CONFIRMED"
	}, 30*time.Second, 100*time.Millisecond)
	require.Len(t, got.Order.Tickets, 1)
	require.Equal(t, "Stalls", got.Order.Tickets[0].Section.Name)
	require.Equal(t, 1, got.Order.Tickets[0].Seat.Number)
	require.Equal(t, ev.ID, got.Order.Tickets[0].Event.ID)
	require.Equal(t, "PURCHASED", got.Order.Hold.Status)

	var mine struct {
		MyOrders struct {
			Edges []struct {
				Node struct{ ID string }
			}
		} `json:"myOrders"`
	}
	require.Empty(t, gql(`{ myOrders(first: 5) { edges { node { id } } pageInfo { hasNextPage } } }`, nil, &mine))
	require.Len(t, mine.MyOrders.Edges, 1)
	require.Equal(t, o.ID, mine.MyOrders.Edges[0].Node.ID)

	// After the sale, through the same handler: the ticket's code verifies
	// with the key published at GET /api/ticket-keys; the door admits it
	// once (staff role); the buyer refunds before the deadline (ticket
	// VOID, order REFUNDED); an admin cancels the event (cancelledAt).
	resp, err := http.Get(srv.URL + "/api/ticket-keys")
	require.NoError(t, err)
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&set))
	resp.Body.Close()
	require.Len(t, set.Keys, 1)
	require.Equal(t, "OKP", set.Keys[0].Kty)
	require.Equal(t, "Ed25519", set.Keys[0].Crv)
	pub, err := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	require.NoError(t, err)
	claims := jwt.MapClaims{}
	parsed, err := jwt.ParseWithClaims(got.Order.Tickets[0].Code, claims,
		func(*jwt.Token) (any, error) { return ed25519.PublicKey(pub), nil }, jwt.WithValidMethods([]string{"EdDSA"}))
	require.NoError(t, err)
	require.Equal(t, set.Keys[0].Kid, parsed.Header["kid"])
	require.Equal(t, ev.ID, claims["evt"])

	staffTok, err := auth.Mint(jwtSecret, "ticketing-dev", "ticketing", "door", []string{"staff"}, time.Hour)
	require.NoError(t, err)
	adminTok, err := auth.Mint(jwtSecret, "ticketing-dev", "ticketing", "boss", []string{"admin"}, time.Hour)
	require.NoError(t, err)
	checkIn := `mutation($e: ID!, $c: String!) { checkIn(eventId: $e, code: $c) { admitted reason ticket { id status } } }`
	errs = gql(checkIn, map[string]any{"e": ev.ID, "c": got.Order.Tickets[0].Code}, nil)
	require.Equal(t, "FORBIDDEN", errs[0]["extensions"].(map[string]any)["code"])
	var door struct {
		CheckIn struct {
			Admitted bool
			Reason   *string
			Ticket   *struct{ ID, Status string }
		} `json:"checkIn"`
	}
	require.Empty(t, apptest.GraphQL(t, srv.URL, staffTok, checkIn, map[string]any{"e": ev.ID, "c": got.Order.Tickets[0].Code}, &door))
	require.True(t, door.CheckIn.Admitted)
	require.Equal(t, "USED", door.CheckIn.Ticket.Status)
	require.Empty(t, apptest.GraphQL(t, srv.URL, staffTok, checkIn, map[string]any{"e": ev.ID, "c": got.Order.Tickets[0].Code}, &door))
	require.False(t, door.CheckIn.Admitted)
	require.Equal(t, "ALREADY_USED", *door.CheckIn.Reason)

	refund := `mutation($o: ID!) { requestRefund(orderId: $o, idempotencyKey: "rf1") { status tickets { status } payments { status } } }`
	errs = gql(refund, map[string]any{"o": o.ID}, nil)
	require.Equal(t, "REFUND_NOT_ALLOWED", errs[0]["extensions"].(map[string]any)["code"])
	_, err = a.Pool.Exec(t.Context(), `UPDATE events SET refund_deadline = now() + interval '1 day' WHERE id = $1`, ev.ID)
	require.NoError(t, err)
	var refunded struct {
		RequestRefund struct {
			Status   string
			Tickets  []struct{ Status string }
			Payments []struct{ Status string }
		} `json:"requestRefund"`
	}
	require.Empty(t, gql(refund, map[string]any{"o": o.ID}, &refunded))
	require.Equal(t, "REFUNDED", refunded.RequestRefund.Status)
	require.Equal(t, "VOID", refunded.RequestRefund.Tickets[0].Status)
	require.Contains(t, []string{"REFUND_PENDING", "REFUNDED"}, refunded.RequestRefund.Payments[0].Status)

	cancel := `mutation($e: ID!) { cancelEvent(id: $e, reason: "flood") { cancelledAt saleStatus saleConditions { refundDeadline } } }`
	errs = gql(cancel, map[string]any{"e": ev.ID}, nil)
	require.Equal(t, "FORBIDDEN", errs[0]["extensions"].(map[string]any)["code"])
	var cancelled struct {
		CancelEvent struct {
			CancelledAt    *time.Time
			SaleStatus     string
			SaleConditions struct{ RefundDeadline *time.Time }
		} `json:"cancelEvent"`
	}
	require.Empty(t, apptest.GraphQL(t, srv.URL, adminTok, cancel, map[string]any{"e": ev.ID}, &cancelled))
	require.NotNil(t, cancelled.CancelEvent.CancelledAt)
	require.Equal(t, "ENDED", cancelled.CancelEvent.SaleStatus)
	require.NotNil(t, cancelled.CancelEvent.SaleConditions.RefundDeadline)
}
