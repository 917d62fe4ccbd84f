// Package wsgorilla plugs github.com/gorilla/websocket into gqlgen's
// WebSocket transport. gqlgen v0.17.92 and later default to coder/websocket
// and no longer ship a gorilla adapter; this is the small one we keep instead
// of pinning an old gqlgen.
//
// Keepalive and pong timeouts are gqlgen's (transport.Websocket
// KeepAlivePingInterval for graphql-ws, PingPongInterval for
// graphql-transport-ws); this adapter supplies what they need: read limits
// and read deadlines on the connection.
package wsgorilla

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
)

// Implementation accepts WebSocket connections with gorilla's Upgrader.
type Implementation struct {
	// Upgrader is copied per connection; set CheckOrigin (e.g. with
	// OriginChecker) since gorilla's default only allows same-host origins.
	Upgrader websocket.Upgrader
}

var _ transport.WebsocketImplementation = Implementation{}

// Accept upgrades the request, offering gqlgen's subprotocols
// (graphql-transport-ws and the legacy graphql-ws) besides the Upgrader's.
func (i Implementation) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	up := i.Upgrader
	up.Subprotocols = slices.Clone(up.Subprotocols)
	for _, p := range opts.Subprotocols {
		if !slices.Contains(up.Subprotocols, p) {
			up.Subprotocols = append(up.Subprotocols, p)
		}
	}
	c, err := up.Upgrade(w, r, opts.ResponseHeader)
	if err != nil {
		return nil, err
	}
	return &conn{c: c}, nil
}

// conn adapts *websocket.Conn. gqlgen serialises writes (it holds a mutex
// around every WriteJSON/WriteClose) and reads from one goroutine at a time,
// which is what gorilla requires.
type conn struct{ c *websocket.Conn }

var (
	_ transport.WebsocketConn          = (*conn)(nil)
	_ transport.WebsocketReadLimiter   = (*conn)(nil)
	_ transport.WebsocketReadDeadliner = (*conn)(nil)
)

func (c *conn) Close() error { return c.c.Close() }

// NextReader returns transport.ErrWebsocketClosed on a normal close, as
// gqlgen asks of adapters.
func (c *conn) NextReader() (int, io.Reader, error) {
	t, r, err := c.c.NextReader()
	if err != nil && websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseNoStatusReceived, websocket.CloseGoingAway) {
		return t, nil, transport.ErrWebsocketClosed
	}
	return t, r, err
}

func (c *conn) WriteJSON(v any) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(writeWait))
	return c.c.WriteJSON(v)
}

func (c *conn) WriteClose(code int, message string) error {
	msg := websocket.FormatCloseMessage(code, message)
	err := c.c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(writeWait))
	if errors.Is(err, websocket.ErrCloseSent) {
		return nil
	}
	return err
}

func (c *conn) Subprotocol() string               { return c.c.Subprotocol() }
func (c *conn) SetReadLimit(limit int64)          { c.c.SetReadLimit(limit) }
func (c *conn) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }

// writeWait bounds one write, so a client that stopped reading cannot block
// the connection's writer (and every subscription on it) forever.
const writeWait = 10 * time.Second

// OriginChecker returns a CheckOrigin function for browsers' cross-site
// requests. It allows requests without an Origin header (non-browser
// clients), an Origin whose host is the request's Host, and the listed
// origins ("scheme://host[:port]"; "*" allows any).
func OriginChecker(allowed ...string) func(r *http.Request) bool {
	set := map[string]bool{}
	for _, a := range allowed {
		if o := normalizeOrigin(a); o != "" {
			set[o] = true
		}
	}
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" || set["*"] {
			return true
		}
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" {
			return false
		}
		if strings.EqualFold(u.Host, r.Host) {
			return true
		}
		return set[normalizeOrigin(origin)]
	}
}

// normalizeOrigin reduces a URL to its lower-case scheme://host[:port].
func normalizeOrigin(s string) string {
	s = strings.TrimSpace(s)
	if s == "*" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
