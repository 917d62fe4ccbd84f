package orders_test

import (
	"net"
	"net/http/httptest"
	"testing"
	"time"

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
}
