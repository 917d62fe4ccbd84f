package wsgorilla

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/ticketing/ticketing/transport/sharedexec"
)

// broadcast is an ExecutableSchema with one shared subscription field,
// big, whose resolver uses sharedexec.Source: the test holds every
// subscriber's send and end and plays the source.
type broadcast struct {
	mu   sync.Mutex
	subs []*pushSub
	new  chan *pushSub
}

type pushSub struct {
	send func(*string) bool
	end  func()
	cut  bool
}

var broadcastSchema = gqlparser.MustLoadSchema(&ast.Source{Input: `type Query { a: Int } type Subscription { big: String! }`})

func (b *broadcast) Schema() *ast.Schema { return broadcastSchema }
func (b *broadcast) Complexity(context.Context, string, string, int, map[string]any) (int, bool) {
	return 0, false
}

func (b *broadcast) Exec(ctx context.Context) graphql.ResponseHandler {
	ch, err := sharedexec.Source(ctx, 32, func(send func(*string) bool, end func()) error {
		s := &pushSub{send: send, end: end}
		// As the seat map does: the subscription ends with its context
		// (a closed connection); a send after that is refused.
		context.AfterFunc(ctx, end)
		b.mu.Lock()
		b.subs = append(b.subs, s)
		b.mu.Unlock()
		b.new <- s
		return nil
	})
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context) *graphql.Response {
		select {
		case v, ok := <-ch:
			if !ok {
				return nil
			}
			data, _ := json.Marshal(map[string]string{"big": *v})
			return &graphql.Response{Data: data}
		case <-ctx.Done():
			return nil
		}
	}
}

// publish sends v to subscriber i unless it was cut off, as a seat map hub
// does, and ends it if it cannot take it.
func (b *broadcast) publish(i int, v *string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.subs[i]; !s.cut && !s.send(v) {
		s.cut = true
		s.end()
	}
}

// TestPushedSubscriptions: a shared subscription is pushed (no goroutine
// waits per idle subscriber), frames reach every reading client in order,
// and a client that stops reading is cut off (its queue overflows, or its
// write times out and its connection is closed: either way the source's
// next send is refused) without holding up the one that reads.
func TestPushedSubscriptions(t *testing.T) {
	b := &broadcast{new: make(chan *pushSub, 64)}
	ex := executor.New(sharedexec.Wrap(b, "big"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Transport{}.Do(w, r, ex)
	}))
	t.Cleanup(srv.Close)
	dialSub := func(rcvbuf int) *websocket.Conn {
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		if rcvbuf > 0 { // a small receive window, so the stalled client's socket fills soon
			d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err == nil {
					err = c.(*net.TCPConn).SetReadBuffer(rcvbuf)
				}
				return c, err
			}
		}
		c, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.WriteJSON(map[string]any{"type": "connection_init"}))
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		require.Equal(t, "connection_ack", next(t, c).Type)
		require.NoError(t, c.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": "subscription { big }"}}))
		select {
		case <-b.new:
		case <-time.After(10 * time.Second):
			t.Fatal("subscription not started")
		}
		return c
	}

	// Idle subscribers hold their connection's reader goroutine, and no
	// goroutine per subscription.
	before := runtime.NumGoroutine()
	const idle = 40
	for range idle {
		dialSub(0)
	}
	// Each handshake's goroutines end soon after; a goroutine per
	// subscription would keep the count at two per connection or more.
	require.Eventually(t, func() bool { return runtime.NumGoroutine()-before < idle*3/2 },
		5*time.Second, 10*time.Millisecond, "goroutines per idle pushed subscriber")
	b.mu.Lock()
	b.subs = nil // the big frames are for the next two only
	b.mu.Unlock()

	reader, stalled := dialSub(0), dialSub(8<<10)
	_ = stalled // never read
	require.NoError(t, reader.SetReadDeadline(time.Now().Add(time.Minute)))
	big := strings.Repeat("x", 64<<10)
	const frames = 150
	got := make(chan int, frames)
	go func() {
		for {
			var m msg
			if err := reader.ReadJSON(&m); err != nil {
				close(got)
				return
			}
			if m.Type != "next" {
				continue
			}
			var p struct{ Data struct{ Big string } }
			if json.Unmarshal(m.Payload, &p) == nil {
				got <- len(p.Data.Big)
			}
		}
	}()
	// The source publishes at the reading client's pace: the other one's
	// socket buffers fill, then its queue, and it is cut off; the reader
	// must get every frame meanwhile. The reader is sent each frame first
	// (its writer executes it), the stalled client then gets the shared
	// bytes, so what cuts it off is the transport's queue.
	for i := range frames {
		v := big[:len(big)-i] // a new value (pointer) per frame, its length is its number
		b.publish(0, &v)
		select {
		case n, ok := <-got:
			require.True(t, ok, "the reading client's connection ended after %d frames", i)
			require.Equal(t, len(big)-i, n, "frames in order")
		case <-time.After(10 * time.Second):
			t.Fatalf("the reading client is held up at frame %d", i)
		}
		b.publish(1, &v)
	}
	b.mu.Lock()
	cut := 0
	for _, s := range b.subs {
		if s.cut {
			cut++
		}
	}
	b.mu.Unlock()
	require.Equal(t, 1, cut, "the client that does not read is cut off, and only it")
}

// A pushed write to a client that stopped reading has no deadline; the
// writers' watchdog closes the socket once it has been blocked too long,
// and the connection is closed.
func TestWatchdogClosesBlockedWrite(t *testing.T) {
	conns := make(chan *connection, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		conns <- &connection{ws: ws, ctx: context.Background()}
	}))
	t.Cleanup(srv.Close)
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(8 << 10) // and never read
		}
		return c, err
	}}
	client, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	c := <-conns

	slots := make([]writerSlot, 1)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go watchWriters(slots, 200*time.Millisecond, stop)
	writes := make(chan int)
	go func() {
		big := []byte(`"` + strings.Repeat("x", 64<<10) + `"`)
		n := 0
		for {
			c.mu.Lock()
			closed := c.closed
			c.mu.Unlock()
			if closed {
				writes <- n
				return
			}
			c.writeParts(time.Hour, &slots[0], big) // no deadline: only the watchdog can cut it off
			n++
		}
	}()
	select {
	case n := <-writes:
		require.Positive(t, n)
		require.Zero(t, slots[0].since.Load(), "the slot shows no write in progress")
	case <-time.After(30 * time.Second):
		t.Fatal("a write blocked on a client that does not read was never cut off")
	}
}
