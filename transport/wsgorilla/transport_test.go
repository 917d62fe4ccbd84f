package wsgorilla

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// ticker is a GraphExecutor whose every operation streams {"n":i} until
// cancelled; the query "bad" fails validation.
type ticker struct{ cancelled chan struct{} }

func (ticker) CreateOperationContext(_ context.Context, p *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	if p.Query == "bad" {
		return &graphql.OperationContext{}, gqlerror.List{{Message: "bad query", Extensions: map[string]any{"code": "GRAPHQL_VALIDATION_FAILED"}}}
	}
	op := ast.Query
	if p.Query == "subscription" {
		op = ast.Subscription
	}
	return &graphql.OperationContext{RawQuery: p.Query, Operation: &ast.OperationDefinition{Operation: op}}, nil
}

func (t ticker) DispatchOperation(ctx context.Context, _ *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	n := 0
	return func(ctx context.Context) *graphql.Response {
		select {
		case <-ctx.Done():
			t.cancelled <- struct{}{}
			return nil
		case <-time.After(5 * time.Millisecond):
		}
		n++
		b, _ := json.Marshal(map[string]int{"n": n})
		return &graphql.Response{Data: b}
	}, ctx
}

func (ticker) DispatchError(_ context.Context, list gqlerror.List) *graphql.Response {
	return &graphql.Response{Errors: list}
}

type msg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func dial(t *testing.T, tr Transport, proto string) (*websocket.Conn, chan struct{}) {
	t.Helper()
	ex := ticker{cancelled: make(chan struct{}, 4)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tr.Do(w, r, ex) }))
	t.Cleanup(srv.Close)
	d := websocket.Dialer{Subprotocols: []string{proto}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	return c, ex.cancelled
}

func next(t *testing.T, c *websocket.Conn, skip ...string) msg {
	t.Helper()
	for {
		var m msg
		require.NoError(t, c.ReadJSON(&m))
		if !strings.Contains(strings.Join(skip, ","), m.Type) || m.Type == "" {
			return m
		}
	}
}

func TestTransportWS(t *testing.T) {
	c, cancelled := dial(t, Transport{}, "graphql-transport-ws")
	require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
	require.Equal(t, "connection_ack", next(t, c).Type)

	require.NoError(t, c.WriteJSON(msg{ID: "a", Type: "subscribe", Payload: json.RawMessage(`{"query":"q"}`)}))
	m := next(t, c, "ping")
	require.Equal(t, msg{ID: "a", Type: "next", Payload: json.RawMessage(`{"data":{"n":1}}`)}, m)

	// A client ping gets a pong.
	require.NoError(t, c.WriteJSON(msg{Type: "ping"}))
	require.Equal(t, "pong", next(t, c, "next", "ping").Type)

	// complete ends the operation.
	require.NoError(t, c.WriteJSON(msg{ID: "a", Type: "complete"}))
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("operation not cancelled")
	}

	// A validation error (a protocol error for gqlgen): error, then complete.
	require.NoError(t, c.WriteJSON(msg{ID: "b", Type: "subscribe", Payload: json.RawMessage(`{"query":"bad"}`)}))
	m = next(t, c, "ping", "next", "complete")
	require.Equal(t, "b", m.ID)
	require.Equal(t, "error", m.Type, string(m.Payload))
	require.Contains(t, string(m.Payload), "GRAPHQL_VALIDATION_FAILED")
	require.Equal(t, msg{ID: "b", Type: "complete"}, next(t, c, "ping"))

	// An unknown message type closes the connection.
	require.NoError(t, c.WriteJSON(msg{Type: "nonsense"}))
	var ce *websocket.CloseError
	for {
		var m msg
		if err := c.ReadJSON(&m); err != nil {
			require.ErrorAs(t, err, &ce)
			break
		}
	}
	require.Equal(t, closeBadRequest, ce.Code)
}

func TestTransportLegacyWS(t *testing.T) {
	c, _ := dial(t, Transport{KeepAlive: time.Hour}, "graphql-ws")
	require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
	require.Equal(t, "connection_ack", next(t, c).Type)
	require.Equal(t, "ka", next(t, c).Type)
	require.NoError(t, c.WriteJSON(msg{ID: "1", Type: "start", Payload: json.RawMessage(`{"query":"q"}`)}))
	require.Equal(t, msg{ID: "1", Type: "data", Payload: json.RawMessage(`{"data":{"n":1}}`)}, next(t, c))
	require.NoError(t, c.WriteJSON(msg{ID: "1", Type: "stop"}))
	require.Equal(t, msg{ID: "1", Type: "complete"}, next(t, c, "data"))
}

func TestTransportInitError(t *testing.T) {
	refuse := func(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		require.Equal(t, "Bearer x", p.Authorization())
		return ctx, nil, &InitError{Code: 4403, Reason: "UNAUTHENTICATED", Err: errors.New("UNAUTHENTICATED: invalid token")}
	}
	for _, proto := range []string{"graphql-transport-ws", "graphql-ws"} {
		c, _ := dial(t, Transport{InitFunc: refuse}, proto)
		require.NoError(t, c.WriteJSON(msg{Type: "connection_init", Payload: json.RawMessage(`{"Authorization":"Bearer x"}`)}))
		if proto == "graphql-ws" {
			m := next(t, c)
			require.Equal(t, "connection_error", m.Type)
			require.Contains(t, string(m.Payload), "UNAUTHENTICATED")
		}
		var m msg
		err := c.ReadJSON(&m)
		var ce *websocket.CloseError
		require.ErrorAs(t, err, &ce, proto)
		require.Equal(t, 4403, ce.Code)
		require.Equal(t, "UNAUTHENTICATED", ce.Text)
	}
}

func TestTransportKeepAlive(t *testing.T) {
	c, _ := dial(t, Transport{KeepAlive: 50 * time.Millisecond}, "graphql-transport-ws")
	require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
	require.Equal(t, "connection_ack", next(t, c).Type)
	require.Equal(t, "ping", next(t, c).Type)
	// A peer that answers nothing for two intervals is dropped.
	var err error
	for err == nil {
		var m msg
		err = c.ReadJSON(&m)
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		require.Equal(t, websocket.CloseNormalClosure, ce.Code)
	}
}

// batchConn holds back the client's writes while hold is set, then sends
// them in one write: several messages reach the server in one segment.
type batchConn struct {
	net.Conn
	hold bool
	buf  []byte
}

func (b *batchConn) Write(p []byte) (int, error) {
	if b.hold {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	return b.Conn.Write(p)
}

func (b *batchConn) flush() error {
	b.hold = false
	_, err := b.Conn.Write(b.buf)
	return err
}

// The reader waits for the socket to become readable before parsing a
// message; messages that arrived together are already in its buffer, and
// must be handled without waiting for more bytes.
func TestTransportMessagesInOneSegment(t *testing.T) {
	ex := ticker{cancelled: make(chan struct{}, 4)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Transport{}.Do(w, r, ex) }))
	t.Cleanup(srv.Close)
	var bc *batchConn
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"},
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			bc = &batchConn{Conn: c}
			return bc, err
		}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
	require.Equal(t, "connection_ack", next(t, c).Type)

	bc.hold = true
	for i := range 3 {
		require.NoError(t, c.WriteJSON(msg{Type: "ping", Payload: json.RawMessage(strconv.Itoa(i))}))
	}
	require.NoError(t, bc.flush())
	for i := range 3 {
		require.Equal(t, msg{Type: "pong", Payload: json.RawMessage(strconv.Itoa(i))}, next(t, c), "pong %d", i)
	}
}

// MaxSubscriptions: the subscription over the cap gets the error, then
// complete; once one ends, a new one is admitted. Queries do not count.
func TestTransportMaxSubscriptions(t *testing.T) {
	limit := func(max int) *gqlerror.Error {
		return &gqlerror.Error{Message: "too many", Extensions: map[string]any{"code": "RATE_LIMITED", "limit": max}}
	}
	c, cancelled := dial(t, Transport{MaxSubscriptions: 2, SubscriptionLimit: limit}, "graphql-transport-ws")
	require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
	require.Equal(t, "connection_ack", next(t, c).Type)
	subscribe := func(id, query string) {
		require.NoError(t, c.WriteJSON(msg{ID: id, Type: "subscribe", Payload: json.RawMessage(`{"query":"` + query + `"}`)}))
	}
	// until returns the first message of operation id, skipping the others.
	until := func(id string) msg {
		for {
			if m := next(t, c); m.ID == id {
				return m
			}
		}
	}
	subscribe("s1", "subscription")
	subscribe("s2", "subscription")
	require.Equal(t, "next", until("s2").Type)
	subscribe("q", "q") // a query: not counted
	require.Equal(t, "next", until("q").Type)

	subscribe("s3", "subscription")
	m := until("s3")
	require.Equal(t, "next", m.Type)
	require.JSONEq(t, `{"data":null,"errors":[{"message":"too many","extensions":{"code":"RATE_LIMITED","limit":2}}]}`, string(m.Payload))
	require.Equal(t, msg{ID: "s3", Type: "complete"}, until("s3"))

	require.NoError(t, c.WriteJSON(msg{ID: "s1", Type: "complete"}))
	m = until("s1")
	for m.Type == "next" { // sent before the complete was read
		m = until("s1")
	}
	require.Equal(t, "complete", m.Type)
	<-cancelled
	subscribe("s4", "subscription")
	m = until("s4")
	require.Equal(t, "next", m.Type)
	require.JSONEq(t, `{"data":{"n":1}}`, string(m.Payload))
}

// A context from InitFunc that ends (say, the credentials expired) closes
// the connection and ends its operations.
func TestTransportInitContextEnds(t *testing.T) {
	ends := make(chan context.CancelFunc, 1)
	initFn := func(ctx context.Context, _ transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		ctx, end := context.WithCancel(ctx)
		ends <- end
		return ctx, nil, nil
	}
	c, cancelled := dial(t, Transport{InitFunc: initFn}, "graphql-transport-ws")
	require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
	require.Equal(t, "connection_ack", next(t, c).Type)
	require.NoError(t, c.WriteJSON(msg{ID: "a", Type: "subscribe", Payload: json.RawMessage(`{"query":"subscription"}`)}))
	require.Equal(t, "next", next(t, c).Type)
	(<-ends)()
	var err error
	for err == nil {
		var m msg
		err = c.ReadJSON(&m)
	}
	var ce *websocket.CloseError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, websocket.CloseNormalClosure, ce.Code)
	<-cancelled
}

// closeCode reads until the server closes c and returns the close code.
func closeCode(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	for {
		var m msg
		if err := c.ReadJSON(&m); err != nil {
			var ce *websocket.CloseError
			require.ErrorAs(t, err, &ce)
			return ce.Code
		}
	}
}

// TestTransportWSCloseCodes: the close codes of graphql-transport-ws's
// PROTOCOL.md.
func TestTransportWSCloseCodes(t *testing.T) {
	t.Run("SubscribeBeforeInit4401", func(t *testing.T) {
		c, _ := dial(t, Transport{}, "graphql-transport-ws")
		require.NoError(t, c.WriteJSON(msg{ID: "1", Type: "subscribe", Payload: json.RawMessage(`{"query":"subscription"}`)}))
		require.Equal(t, 4401, closeCode(t, c))
	})
	t.Run("SecondInit4429", func(t *testing.T) {
		c, _ := dial(t, Transport{}, "graphql-transport-ws")
		require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
		require.Equal(t, "connection_ack", next(t, c).Type)
		require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
		require.Equal(t, 4429, closeCode(t, c))
	})
	t.Run("DuplicateID4409", func(t *testing.T) {
		c, _ := dial(t, Transport{}, "graphql-transport-ws")
		require.NoError(t, c.WriteJSON(msg{Type: "connection_init"}))
		require.Equal(t, "connection_ack", next(t, c).Type)
		sub := msg{ID: "x", Type: "subscribe", Payload: json.RawMessage(`{"query":"subscription"}`)}
		require.NoError(t, c.WriteJSON(sub))
		require.Equal(t, "next", next(t, c, "ping").Type)
		require.NoError(t, c.WriteJSON(sub))
		require.Equal(t, 4409, closeCode(t, c))
	})
	t.Run("InitTimeout4408", func(t *testing.T) {
		c, _ := dial(t, Transport{InitTimeout: 50 * time.Millisecond}, "graphql-transport-ws")
		require.Equal(t, 4408, closeCode(t, c))
	})
	t.Run("InvalidMessage4400", func(t *testing.T) {
		c, _ := dial(t, Transport{}, "graphql-transport-ws")
		require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("{not json")))
		require.Equal(t, 4400, closeCode(t, c))
	})
	t.Run("LegacyKeeps1002", func(t *testing.T) {
		c, _ := dial(t, Transport{}, "graphql-ws")
		require.NoError(t, c.WriteJSON(msg{ID: "1", Type: "start", Payload: json.RawMessage(`{"query":"subscription"}`)}))
		require.Equal(t, closeProtocolError, closeCode(t, c))
	})
}
