package app_test

import (
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/paysimtest"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/tickets"
)

const (
	orderUpdatesJWTSecret     = "order-updates-secret-0123456789"
	orderUpdatesWebhookSecret = "whsec_order_updates_test"
	orderUpdatesTicketKey     = "ticket-key-for-order-updates-0123456789"
)

// orderUpdatesView is the Order selected by the subscription below.
type orderUpdatesView struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Payments []struct {
		Status string `json:"status"`
	} `json:"payments"`
	Tickets []struct {
		ID   string `json:"id"`
		Code string `json:"code"`
		Seat *struct {
			ID string `json:"id"`
		} `json:"seat"`
	} `json:"tickets"`
}

const orderUpdatesSubscription = `subscription($id: ID!) { orderUpdates(orderId: $id) {
  id status payments { status } tickets { id code seat { id } } } }`

// orderUpdatesConn is a graphql-transport-ws connection whose messages are
// read by a goroutine into msgs (closed when the connection ends); that
// goroutine answers the server's keep-alive pings, as clients must.
type orderUpdatesConn struct {
	c    *websocket.Conn
	wmu  sync.Mutex // one writer at a time
	msgs chan wsMsg
	done chan struct{} // closed when the test ends
}

func (oc *orderUpdatesConn) write(m wsMsg) error {
	oc.wmu.Lock()
	defer oc.wmu.Unlock()
	return oc.c.WriteJSON(m)
}

// dialOrderUpdates opens /graphql over WebSocket (graphql-transport-ws),
// authenticated by connection_init's Authorization, and waits for the ack.
func dialOrderUpdates(t *testing.T, base, token string) *orderUpdatesConn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 10 * time.Second}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/graphql", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.Equal(t, "graphql-transport-ws", c.Subprotocol())
	oc := &orderUpdatesConn{c: c, msgs: make(chan wsMsg, 64), done: make(chan struct{})}
	t.Cleanup(func() { close(oc.done) })
	go func() { // owns msgs
		defer close(oc.msgs)
		for {
			var m wsMsg
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			if m.Type == "ping" {
				_ = oc.write(wsMsg{Type: "pong"})
				continue
			}
			select {
			case oc.msgs <- m:
			case <-oc.done:
				return
			}
		}
	}()
	initPayload, _ := json.Marshal(map[string]any{"Authorization": "Bearer " + token})
	require.NoError(t, oc.write(wsMsg{Type: "connection_init", Payload: initPayload}))
	m := oc.next(t, 10*time.Second)
	require.Equal(t, "connection_ack", m.Type, "payload %s", m.Payload)
	return oc
}

// subscribe starts orderUpdates for orderID under the operation id.
func (oc *orderUpdatesConn) subscribe(t *testing.T, id, orderID string) {
	t.Helper()
	p, _ := json.Marshal(map[string]any{"query": orderUpdatesSubscription, "variables": map[string]any{"id": orderID}})
	require.NoError(t, oc.write(wsMsg{ID: id, Type: "subscribe", Payload: p}))
}

// next returns the next message other than a keep-alive pong, failing the
// test if none comes within d or the connection ends.
func (oc *orderUpdatesConn) next(t *testing.T, d time.Duration) wsMsg {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-oc.msgs:
			require.True(t, ok, "the WebSocket connection ended")
			if m.Type == "pong" {
				continue
			}
			return m
		case <-timeout:
			require.FailNow(t, "no WebSocket message", "within %s", d)
		}
	}
}

// nextOrder returns the next orderUpdates frame of operation id, failing on
// an error, a complete or a timeout.
func (oc *orderUpdatesConn) nextOrder(t *testing.T, id string, d time.Duration) orderUpdatesView {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		m := oc.next(t, time.Until(deadline))
		if m.ID != id {
			continue
		}
		require.Equal(t, "next", m.Type, "payload %s", m.Payload)
		var r struct {
			Data *struct {
				OrderUpdates orderUpdatesView `json:"orderUpdates"`
			} `json:"data"`
			Errors []json.RawMessage `json:"errors"`
		}
		require.NoError(t, json.Unmarshal(m.Payload, &r), string(m.Payload))
		require.Empty(t, r.Errors, string(m.Payload))
		require.NotNil(t, r.Data, string(m.Payload))
		return r.Data.OrderUpdates
	}
}

// paysimApp is the real App on a real listener whose address is its
// PUBLIC_BASE_URL (paysim, started for the test as its own process,
// delivers its webhooks there), on database dbURL, with a small event;
// extra adds or replaces variables.
func paysimApp(t *testing.T, dbURL string, extra map[string]string) (*app.App, *httptest.Server, fixtures.Event) {
	t.Helper()
	ps, stop, err := paysimtest.Start(orderUpdatesWebhookSecret)
	require.NoError(t, err)
	t.Cleanup(stop)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	env := map[string]string{
		"DATABASE_URL":            dbURL,
		"JWT_HS256_SECRET":        orderUpdatesJWTSecret,
		"PAYMENTS_BASE_URL":       ps.URL,
		"PAYMENTS_WEBHOOK_SECRET": orderUpdatesWebhookSecret,
		"PUBLIC_BASE_URL":         "http://" + l.Addr().String(),
		"TICKET_SIGNING_KEY":      orderUpdatesTicketKey,
	}
	maps.Copy(env, extra)
	a := apptest.New(t, env)
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return a, srv, fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{})
}

// orderHold orders hold holdID for tok's user over GraphQL; it returns
// the order's id and its payment's checkout page.
func orderHold(t *testing.T, baseURL, tok, holdID string) (orderID, checkoutURL string) {
	t.Helper()
	var created struct {
		CreateOrder struct {
			ID       string
			Payments []struct {
				CheckoutURL string `json:"checkoutUrl"`
			}
		} `json:"createOrder"`
	}
	require.Empty(t, apptest.GraphQL(t, baseURL, tok, `mutation($h: ID!) { createOrder(input: {holdId: $h, idempotencyKey: "o1"}) { id payments { checkoutUrl } } }`,
		map[string]any{"h": holdID}, &created))
	return created.CreateOrder.ID, created.CreateOrder.Payments[0].CheckoutURL
}

// payAtCheckout pays at paysim's hosted checkout (a non-browser client
// gets the payment as JSON, 200 when this request settled it).
func payAtCheckout(t *testing.T, checkoutURL string) {
	t.Helper()
	resp, err := http.PostForm(checkoutURL, url.Values{"outcome": {"succeed"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// mint is a token of a new user, named who and a random suffix.
func mint(t *testing.T, who string) string {
	t.Helper()
	tok, err := auth.Mint(orderUpdatesJWTSecret, "ticketing-dev", "ticketing", who+"-"+uuid.NewString()[:8], nil, time.Hour)
	require.NoError(t, err)
	return tok
}

// TestOrderUpdatesSubscriptionDeliversConfirmation: over a real WebSocket
// to the real App (Postgres, Redis, paysim as its own process), the buyer's
// orderUpdates subscription first shows the order AWAITING_PAYMENT, then,
// after the buyer pays at paysim's checkout (and only paysim's signed
// webhook moves the order), delivers it CONFIRMED with its tickets. Another
// user subscribing to the same order gets FORBIDDEN and never the order.
func TestOrderUpdatesSubscriptionDeliversConfirmation(t *testing.T) {
	t.Parallel()
	_, srv, ev := paysimApp(t, testdb.NewDatabase(t), nil)

	buyer, other := mint(t, "buyer"), mint(t, "other")
	gql := func(tok, query string, vars map[string]any, out any) {
		t.Helper()
		require.Empty(t, apptest.GraphQL(t, srv.URL, tok, query, vars, out))
	}

	var hold struct {
		CreateHold struct{ ID string } `json:"createHold"`
	}
	gql(buyer, `mutation($e: ID!, $s: [ID!]) { createHold(input: {eventId: $e, seatIds: $s, idempotencyKey: "h1"}) { id } }`,
		map[string]any{"e": ev.ID, "s": []string{ev.Seats[0], ev.Seats[1]}}, &hold)
	var created struct {
		CreateOrder struct {
			ID       string
			Status   string
			Payments []struct {
				Status      string
				CheckoutURL string `json:"checkoutUrl"`
			}
		} `json:"createOrder"`
	}
	gql(buyer, `mutation($h: ID!) { createOrder(input: {holdId: $h, idempotencyKey: "o1"}) { id status payments { status checkoutUrl } } }`,
		map[string]any{"h": hold.CreateHold.ID}, &created)
	order := created.CreateOrder
	require.Equal(t, "AWAITING_PAYMENT", order.Status)
	require.Len(t, order.Payments, 1)
	require.Equal(t, "PENDING", order.Payments[0].Status)
	require.NotEmpty(t, order.Payments[0].CheckoutURL)

	// The buyer subscribes: the current state comes at once, unpaid.
	mine := dialOrderUpdates(t, srv.URL, buyer)
	mine.subscribe(t, "mine", order.ID)
	first := mine.nextOrder(t, "mine", 15*time.Second)
	require.Equal(t, order.ID, first.ID)
	require.Equal(t, "AWAITING_PAYMENT", first.Status)
	require.Empty(t, first.Tickets)

	// Another user subscribing to the buyer's order is refused.
	theirs := dialOrderUpdates(t, srv.URL, other)
	theirs.subscribe(t, "theirs", order.ID)
	refused := theirs.next(t, 15*time.Second)
	require.Equal(t, "theirs", refused.ID)
	require.Equal(t, "next", refused.Type, "a resolver error: %s", refused.Payload)
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(refused.Payload, &r), string(refused.Payload))
	require.Equal(t, "null", string(r.Data), "the order leaked: %s", refused.Payload)
	errs := r.Errors
	require.Len(t, errs, 1, string(refused.Payload))
	require.Equal(t, "FORBIDDEN", errs[0].Extensions["code"], string(refused.Payload))
	require.NotContains(t, string(refused.Payload), "AWAITING_PAYMENT")
	// ...and the operation is over: no state of the order follows.
	done := theirs.next(t, 15*time.Second)
	require.Equal(t, "theirs", done.ID)
	require.Equal(t, "complete", done.Type, "payload %s", done.Payload)

	// The buyer pays at paysim's hosted checkout.
	payAtCheckout(t, order.Payments[0].CheckoutURL)

	// The subscription must deliver the confirmation by itself: nothing
	// else in this test reads the order.
	var confirmed orderUpdatesView
	deadline := time.Now().Add(30 * time.Second)
	for confirmed.Status != "CONFIRMED" {
		u := mine.nextOrder(t, "mine", time.Until(deadline))
		require.Equal(t, order.ID, u.ID)
		require.Contains(t, []string{"AWAITING_PAYMENT", "CONFIRMED"}, u.Status, "unexpected state %+v", u)
		confirmed = u
	}
	require.Len(t, confirmed.Payments, 1)
	require.Equal(t, "SUCCEEDED", confirmed.Payments[0].Status)
	require.Len(t, confirmed.Tickets, 2)
	seats := map[string]bool{}
	keys, err := tickets.ParseKeys(orderUpdatesTicketKey)
	require.NoError(t, err)
	for _, tk := range confirmed.Tickets {
		c, err := keys.Verify(tk.Code)
		require.NoError(t, err)
		require.Equal(t, tk.ID, c.TicketID)
		require.Equal(t, ev.ID, c.EventID)
		require.NotNil(t, tk.Seat)
		seats[tk.Seat.ID] = true
	}
	require.Equal(t, map[string]bool{ev.Seats[0]: true, ev.Seats[1]: true}, seats)
}
