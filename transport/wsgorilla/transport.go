package wsgorilla

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/ticketing/ticketing/transport/sharedexec"
)

// Transport is gqlgen's WebSocket transport (graphql-transport-ws, and the
// legacy graphql-ws when the client asks for it or for no subprotocol) on
// gorilla/websocket, built for many long-lived subscribers:
//
//   - a result is written as {"data":<bytes>} without being re-encoded;
//     gqlgen's transport.Websocket marshals every response twice (the
//     response, then the message around it), which at thousands of
//     subscribers cost more CPU than executing the frame;
//   - one goroutine per connection (its reader, detached from the HTTP
//     handler so net/http's buffers are freed, and parked on the socket
//     rather than inside gorilla, so an idle one keeps a 2 KiB stack: see
//     waitReadable); a shared subscription (sharedexec) is pushed to a
//     pool of writers and has no goroutine; another subscription has one,
//     started fresh once the stack-hungry setup (init, parsing, the
//     resolver) is done; keepalives run on a timer, not a goroutine;
//   - small read buffers and pooled write buffers, so an idle connection
//     holds little memory.
//
// The protocol behaviour follows gqlgen's transport: the same messages,
// errors and close codes, with InitFunc deciding on connection_init (return
// an *InitError to choose the close code).
type Transport struct {
	// Upgrader accepts the connection; set CheckOrigin. ReadBufferSize is
	// ignored (the read buffer is 288 bytes); WriteBufferSize defaults to
	// 16 KiB and WriteBufferPool to a shared pool.
	Upgrader websocket.Upgrader
	// ConnContext is what the connection keeps of its upgrade request: the
	// context passed to InitFunc (default: the request's context without its
	// cancellation). The request's whole context chain otherwise stays in
	// memory for the connection's life; a server with thousands of idle
	// subscribers may copy the few values its operations need instead.
	ConnContext func(r *http.Request) context.Context
	// InitFunc authenticates connection_init; its context is the parent of
	// every operation of the connection. A context it returns that ends
	// closes the connection.
	InitFunc transport.WebsocketInitFunc
	// InitTimeout bounds the wait for connection_init.
	InitTimeout time.Duration
	// KeepAlive is the graphql-ws "ka" interval and the graphql-transport-ws
	// ping interval; a graphql-transport-ws peer silent for two intervals
	// (no pong) is dropped. Zero disables both.
	KeepAlive time.Duration
	// ReadLimit caps a client message (default 64 KiB).
	ReadLimit int64
	// ErrorFunc, if set, receives read and write errors other than a close.
	ErrorFunc func(ctx context.Context, err error)
	// Detach, if set, is called once the connection is upgraded and
	// outlives its handler; the function it returns is called when the
	// connection ends (the server's per-address count of open streams).
	Detach func(r *http.Request) func()
	// MaxSubscriptions caps the live subscriptions of one connection (zero:
	// no cap). A subscription over it gets SubscriptionLimit's error, then
	// complete.
	MaxSubscriptions int
	// SubscriptionLimit builds that error (default: a message saying the
	// cap).
	SubscriptionLimit func(max int) *gqlerror.Error
	// CheckPayload, if set, looks at a subscribe payload before it is
	// decoded; an error it returns is answered as CreateOperationContext's
	// errors are, and nothing is decoded or parsed.
	CheckPayload func(payload []byte) *gqlerror.Error
}

// InitError is an InitFunc error that closes the connection with Code and
// Reason (graphql-ws clients first get a connection_error with Err's text).
type InitError struct {
	Code   int
	Reason string
	Err    error
}

func (e *InitError) Error() string { return e.Err.Error() }
func (e *InitError) Unwrap() error { return e.Err }

const (
	protoTransportWS = "graphql-transport-ws"
	protoLegacyWS    = "graphql-ws"
	// closeProtocolError is what gqlgen's transport closes with on a
	// protocol violation.
	closeProtocolError = 1002
	// The close codes of the graphql-transport-ws protocol
	// (github.com/enisdenjo/graphql-ws, PROTOCOL.md).
	closeBadRequest      = 4400 // an invalid or unknown message
	closeUnauthorized    = 4401 // subscribe before connection_ack
	closeInitTimeout     = 4408 // no connection_init in time
	closeDuplicateID     = 4409 // a subscribe with the id of a live one
	closeTooManyInitReqs = 4429 // a second connection_init
)

// protocolClose is the close code for a protocol violation: graphql-transport-ws's
// own code, or 1002 for the legacy graphql-ws.
func (c *connection) protocolClose(code int) int {
	if c.legacy {
		return closeProtocolError
	}
	return code
}

var _ graphql.Transport = Transport{}

// writePool lends write buffers to connections only while they write.
var writePool sync.Pool

// Supports implements graphql.Transport.
func (t Transport) Supports(r *http.Request) bool { return r.Header.Get("Upgrade") != "" }

// Do implements graphql.Transport.
func (t Transport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	up := t.Upgrader
	up.Subprotocols = slices.Clone(up.Subprotocols)
	for _, p := range []string{protoTransportWS, protoLegacyWS} {
		if !slices.Contains(up.Subprotocols, p) {
			up.Subprotocols = append(up.Subprotocols, p)
		}
	}
	// The read buffer is ours (see waitReadable): gorilla adopts the
	// hijacked reader when ReadBufferSize is zero.
	up.ReadBufferSize = 0
	if up.WriteBufferPool == nil {
		up.WriteBufferPool = &writePool
	}
	if up.WriteBufferSize == 0 {
		// Pooled, so only writing connections hold one: large enough for a
		// busy seat map frame to go out in one frame and one syscall.
		up.WriteBufferSize = 16 << 10
	}
	hj := &hijacker{ResponseWriter: w}
	ws, err := up.Upgrade(hj, r, nil)
	if err != nil {
		return // Upgrade has answered the request
	}
	limit := t.ReadLimit
	if limit == 0 {
		limit = 64 << 10
	}
	ws.SetReadLimit(limit)
	c := &connection{t: t, ws: ws, br: hj.br, exec: exec}
	if t.Detach != nil {
		c.detached = t.Detach(r)
	}
	switch ws.Subprotocol() {
	case protoTransportWS:
	case protoLegacyWS, "":
		c.legacy = true
	default:
		c.close(closeProtocolError, "unsupported negotiated subprotocol "+ws.Subprotocol())
		return
	}
	// The connection outlives this handler: returning lets net/http free
	// its per-connection reader, writers and request, and the handler's
	// deep stack; a fresh goroutine with a small stack takes over. The
	// request's values (request id, caller) stay, its cancellation does not.
	var ctx context.Context
	if t.ConnContext != nil {
		ctx = t.ConnContext(r)
	} else {
		ctx = context.WithoutCancel(r.Context())
	}
	go c.serve(ctx)
}

type connection struct {
	t      Transport
	ws     *websocket.Conn
	br     *bufio.Reader // ws's read buffer (nil if gorilla made its own)
	exec   graphql.GraphExecutor
	legacy bool // graphql-ws rather than graphql-transport-ws

	// ctx is set by init, before any operation starts: the parent of the
	// operations' contexts. It is not cancelled when the connection closes
	// (close cancels each operation), so an operation's context is not
	// registered with it: one allocation less per subscriber.
	ctx context.Context

	mu     sync.Mutex // serialises writes; guards the fields below
	ops    []*op      // live operations (a few: a slice is smaller than a map)
	subs   int        // live subscriptions (counted against MaxSubscriptions)
	closed bool
	// unwatch stops watching InitFunc's context, if it can end.
	unwatch func() bool
	timer   *time.Timer // keepalive
	// detached is Transport.Detach's function, called once closed.
	detached func()
}

type op struct {
	id      string
	cancel  context.CancelFunc
	counted bool // one of c.subs (guarded by c.mu)
	// query keeps the interned text of the operation's document alive:
	// thousands of subscribers send the same query, and hold one copy.
	query unique.Handle[string]
}

// message is a client or server message of either subprotocol.
type message struct {
	Payload json.RawMessage `json:"payload,omitempty"`
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
}

var errInvalidMessage = errors.New("invalid message")

func (c *connection) read() (message, error) {
	_, r, err := c.ws.NextReader()
	if err != nil {
		return message{}, err
	}
	var m message
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return message{}, errInvalidMessage
	}
	return m, nil
}

// serve runs the connection: connection_init, then the read loop.
func (c *connection) serve(parent context.Context) {
	if c.t.InitTimeout > 0 {
		_ = c.ws.SetReadDeadline(time.Now().Add(c.t.InitTimeout))
	}
	m, err := c.read()
	switch {
	case errors.Is(err, errInvalidMessage):
		c.connectionError("invalid json")
		c.close(c.protocolClose(closeBadRequest), "decoding error")
		return
	case isTimeout(err):
		c.close(c.protocolClose(closeInitTimeout), "Connection initialisation timeout")
		return
	case err != nil:
		c.close(c.protocolClose(closeBadRequest), "decoding error")
		return
	case c.legacy && m.Type == "connection_terminate":
		c.close(websocket.CloseNormalClosure, "terminated")
		return
	case !c.legacy && (m.Type == "subscribe" || m.Type == "complete"):
		c.close(closeUnauthorized, "Unauthorized")
		return
	case m.Type != "connection_init":
		c.connectionError("unexpected message %s", m.Type)
		c.close(c.protocolClose(closeBadRequest), "unexpected message")
		return
	}
	if c.init(parent, m.Payload) {
		// A fresh goroutine: this one's stack grew for InitFunc, the read
		// loop needs little, and thousands of them sit idle.
		go c.readLoop()
	}
}

// readLoop reads client messages until the connection ends.
func (c *connection) readLoop() {
	defer c.close(websocket.CloseNormalClosure, "terminated")
	for {
		deadline := time.Time{}
		if !c.legacy && c.t.KeepAlive > 0 {
			deadline = time.Now().Add(2 * c.t.KeepAlive)
		}
		_ = c.ws.SetReadDeadline(deadline)
		c.waitReadable()
		_, r, err := c.ws.NextReader()
		if err != nil {
			if !isClose(err) {
				c.reportError(fmt.Errorf("websocket read: %w", err))
			}
			return
		}
		// This goroutine spends its life parked in waitReadable, which
		// needs little stack; decoding and handling a message need several
		// KiB, and a stack in use only shrinks when most of it is unused. So
		// the message is handled on a short-lived goroutine (messages are
		// rare: a few per subscription) while this one waits, keeping the
		// order of messages.
		more := make(chan bool)
		go func() { more <- c.handle(graphql.Now(), r) }()
		if !<-more {
			return
		}
	}
}

// handle decodes and acts on one client message; false ends the connection.
func (c *connection) handle(start time.Time, r io.Reader) bool {
	var m message
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		c.connectionError("invalid json")
		c.close(c.protocolClose(closeBadRequest), "decoding error")
		return false
	}
	switch {
	case m.Type == "connection_init" && !c.legacy:
		c.close(closeTooManyInitReqs, "Too many initialisation requests")
		return false
	case m.Type == "subscribe" && !c.legacy, m.Type == "start" && c.legacy:
		return c.subscribe(start, m)
	case m.Type == "complete" && !c.legacy, m.Type == "stop" && c.legacy:
		c.mu.Lock()
		o := c.op(m.ID)
		c.mu.Unlock()
		if o != nil {
			o.cancel()
		}
	case m.Type == "ping" && !c.legacy:
		c.write(message{Type: "pong", Payload: m.Payload})
	case m.Type == "pong" && !c.legacy:
		// Reading it extended the deadline.
	case m.Type == "connection_terminate" && c.legacy:
		return false
	default:
		c.connectionError("unexpected message %s", m.Type)
		c.close(c.protocolClose(closeBadRequest), "unexpected message")
		return false
	}
	return true
}

// init runs InitFunc and acknowledges; false means the connection is closed.
func (c *connection) init(parent context.Context, raw json.RawMessage) bool {
	var payload transport.InitPayload
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &payload); err != nil {
			c.connectionError("invalid json")
			c.close(c.protocolClose(closeBadRequest), "decoding error")
			return false
		}
	}
	ctx := parent
	var ack *transport.InitPayload
	if c.t.InitFunc != nil {
		var err error
		if ctx, ack, err = c.t.InitFunc(parent, payload); err != nil {
			c.connectionError("%s", err.Error())
			code, reason := websocket.CloseNormalClosure, "terminated"
			var ie *InitError
			if errors.As(err, &ie) {
				code, reason = ie.Code, ie.Reason
			}
			c.close(code, reason)
			return false
		}
	}
	c.ctx = ctx
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { c.close(websocket.CloseNormalClosure, "terminated") })
		c.mu.Lock()
		c.unwatch = stop
		closed := c.closed
		c.mu.Unlock()
		if closed {
			stop()
		}
	}
	var ackPayload json.RawMessage
	if ack != nil {
		ackPayload, _ = json.Marshal(*ack)
	}
	c.write(message{Type: "connection_ack", Payload: ackPayload})
	if c.legacy {
		c.write(message{Type: "ka"})
	}
	if c.t.KeepAlive > 0 {
		c.mu.Lock()
		if !c.closed {
			c.timer = time.AfterFunc(c.t.KeepAlive, c.keepAlive)
		}
		c.mu.Unlock()
	}
	return true
}

// keepAlive sends "ka" (graphql-ws) or "ping" (graphql-transport-ws; the
// pong, like any message, pushes the read deadline back).
func (c *connection) keepAlive() {
	if c.legacy {
		c.write(message{Type: "ka"})
	} else {
		c.write(message{Type: "ping"})
	}
	c.mu.Lock()
	if !c.closed {
		c.timer.Reset(c.t.KeepAlive)
	}
	c.mu.Unlock()
}

// subscribe registers an operation (so a "complete"/"stop" that follows is
// not missed) and runs it on its own goroutine: parsing and validation grow
// that goroutine's stack, not the read loop's. A graphql-transport-ws
// subscribe with the id of a live operation closes the connection (4409);
// false means it was closed.
func (c *connection) subscribe(start time.Time, m message) bool {
	ctx, cancel := context.WithCancel(c.ctx)
	o := &op{id: m.ID, cancel: cancel}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return false
	}
	if i := c.opIndex(m.ID); i >= 0 {
		if !c.legacy {
			c.mu.Unlock()
			cancel()
			c.close(closeDuplicateID, truncateReason("Subscriber for "+m.ID+" already exists"))
			return false
		}
		c.ops[i] = o // as a map would: the old one can no longer be stopped by id
	} else {
		c.ops = append(c.ops, o)
	}
	c.mu.Unlock()
	go c.run(ctx, o, start, m)
	return true
}

// truncateReason keeps a close reason within the 123 bytes a close frame allows.
func truncateReason(s string) string {
	if len(s) > 120 {
		return strings.ToValidUTF8(s[:120], "")
	}
	return s
}

// run executes an operation: errors before execution are sent as gqlgen
// sends them; then its responses are streamed until it ends, and it is
// completed.
func (c *connection) run(ctx context.Context, o *op, start time.Time, m message) {
	id := m.ID
	var rc *graphql.OperationContext
	stream := false
	defer func() {
		if stream {
			return // the stream goroutine completes it
		}
		c.finish(ctx, o, id, rc, recover())
	}()
	var errs gqlerror.List
	if c.t.CheckPayload != nil {
		if err := c.t.CheckPayload(m.Payload); err != nil {
			errs, rc = gqlerror.List{err}, &graphql.OperationContext{}
		}
	}
	if errs == nil {
		params := &graphql.RawParams{}
		dec := json.NewDecoder(bytes.NewReader(m.Payload))
		dec.UseNumber()
		if err := dec.Decode(params); err != nil {
			c.sendError(id, &gqlerror.Error{Message: "invalid json"})
			return
		}
		params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
		o.query = unique.Make(params.Query)
		params.Query = o.query.Value()

		ctx = graphql.StartOperationTrace(ctx)
		rc, errs = c.exec.CreateOperationContext(ctx, params)
	}
	if errs != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			c.sendError(id, resp.Errors...)
		} else {
			c.sendResponse(id, &graphql.Response{Errors: errs})
		}
		return
	}
	if rc.Operation != nil && rc.Operation.Operation == ast.Subscription && !c.admit(o) {
		c.sendResponse(id, &graphql.Response{Errors: gqlerror.List{c.t.subscriptionLimit()}})
		return
	}
	// A shared subscription (sharedexec) may take a pusher: its events are
	// then handed to this connection as they happen, and no goroutine
	// waits for them.
	po := &pushOp{c: c, o: o, id: id, rc: rc}
	ctx = sharedexec.WithPusher(ctx, po)
	responses, ctx := c.exec.DispatchOperation(graphql.WithOperationContext(ctx, rc), rc)
	stream = true
	if sharedexec.Pushed(ctx) {
		po.start(ctx, responses)
		return
	}
	// The subscription is set up (resolver called): stream on a fresh
	// goroutine whose small stack is all an idle subscriber keeps.
	go func() {
		defer func() { c.finish(ctx, o, id, rc, recover()) }()
		for {
			resp := responses(ctx)
			if resp == nil {
				return
			}
			c.sendResponse(id, resp)
		}
	}()
}

// op returns the live operation id, or nil; c.mu must be held.
func (c *connection) op(id string) *op {
	if i := c.opIndex(id); i >= 0 {
		return c.ops[i]
	}
	return nil
}

func (c *connection) opIndex(id string) int {
	return slices.IndexFunc(c.ops, func(x *op) bool { return x.id == id })
}

// admit counts a subscription against MaxSubscriptions; false means the
// connection has as many as allowed.
func (c *connection) admit(o *op) bool {
	if c.t.MaxSubscriptions <= 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs >= c.t.MaxSubscriptions {
		return false
	}
	c.subs++
	o.counted = true
	return true
}

func (t Transport) subscriptionLimit() *gqlerror.Error {
	if t.SubscriptionLimit != nil {
		return t.SubscriptionLimit(t.MaxSubscriptions)
	}
	return gqlerror.Errorf("at most %d subscriptions per connection", t.MaxSubscriptions)
}

// maxQueued is how many messages a pushed operation may have waiting to be
// written before its subscriber is cut off (the source then ends it; the
// client resumes from its last cursor).
const maxQueued = 32

// pushOp is a pushed subscription: events arrive through Data and Pending (on
// the source's goroutine), wait in queue, and a goroutine started only
// while there is something to write sends them in order, then exits.
type pushOp struct {
	c  *connection
	o  *op
	id string
	rc *graphql.OperationContext

	mu        sync.Mutex
	ctx       context.Context         // set by start
	responses graphql.ResponseHandler // set by start
	queue     []pushItem
	spare     []pushItem // the drained queue's array, for reuse
	running   bool       // a drain goroutine is (or may be) writing
	ended     bool       // End was called
	finished  bool
	head      []byte // {"id":..,"type":"next","payload":{"data": (drain only)
}

// pushItem is shared result bytes, or (data nil) an event whose result
// may still be computing.
type pushItem struct {
	data []byte
	pend sharedexec.Pending
}

// Data implements sharedexec.Pusher.
func (p *pushOp) Data(data []byte) bool { return p.enqueue(pushItem{data: data}) }

// Pending implements sharedexec.Pusher.
func (p *pushOp) Pending(pd sharedexec.Pending) bool { return p.enqueue(pushItem{pend: pd}) }

// End implements sharedexec.Pusher.
func (p *pushOp) End() {
	p.mu.Lock()
	p.ended = true
	p.kickLocked()
	p.mu.Unlock()
}

func (p *pushOp) enqueue(it pushItem) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || len(p.queue) >= maxQueued {
		return false
	}
	p.queue = append(p.queue, it)
	p.kickLocked()
	return true
}

// start is called once the operation is dispatched: events may have been
// queued already (the catch-up is sent while the resolver runs).
func (p *pushOp) start(ctx context.Context, responses graphql.ResponseHandler) {
	p.mu.Lock()
	p.ctx, p.responses = ctx, responses
	p.kickLocked()
	p.mu.Unlock()
}

// kickLocked hands the operation to a writer if there is work and none
// has it.
func (p *pushOp) kickLocked() {
	if p.running || p.responses == nil || (len(p.queue) == 0 && (!p.ended || p.finished)) {
		return
	}
	p.running = true
	startWriters.Do(func() {
		writerSlots = make([]writerSlot, writers)
		for i := range writerSlots {
			go func() {
				for p := range pushWork {
					active.Add(1)
					p.drain(&writerSlots[i])
					active.Add(-1)
				}
			}()
		}
		go watchWriters(writerSlots, pushWriteWait, nil)
	})
	select {
	case pushWork <- p:
	default: // every writer is far behind: one more goroutine
		go p.drain(nil)
	}
}

// Pushed messages are written by a few writer goroutines shared by every
// connection, not by a goroutine per subscriber: a frame to 10,000
// subscribers is then 10,000 writes by the writers, with no goroutine to
// create or wake per subscriber, and the process's other goroutines (the
// relay, the hubs, HTTP requests) are not queued behind thousands of
// runnable writers. A write that blocks (the client's socket buffer is
// full) holds its writer for at most pushWriteWait, then the connection is
// closed: a client that far behind reconnects and resumes from its cursor.
// That limit is kept by a watchdog over the writers (watchWriters), not by a
// deadline per write: setting the socket's deadline (a runtime timer) for
// each of 10,000 writes was 7% of the fan-out's CPU.
// Writers are many more than CPUs so that a few such clients at once do not
// hold up the others: an idle writer costs a parked goroutine.
var (
	writers      = max(64, 8*runtime.GOMAXPROCS(0))
	pushWork     = make(chan *pushOp, 1<<16)
	startWriters sync.Once
	active       atomic.Int32 // writers writing
)

// Busy reports whether pushed messages are waiting to be written or being
// written (by any connection of the process): a source may then hold its
// next message back and send more in one (seatmap.Config.Busy).
func Busy() bool { return len(pushWork) > 0 || active.Load() > 0 }

const pushWriteWait = time.Second

// writerSlots are the pool's writers' current writes, for watchWriters.
var writerSlots []writerSlot

// writerSlot is a writer's write in progress: its connection, and when it
// started (unix nanoseconds; 0 when the writer is not writing).
type writerSlot struct {
	conn  atomic.Pointer[connection]
	since atomic.Int64
}

// watchWriters closes the socket under a write that has been blocked for
// longer than wait (the write then fails and the connection is closed),
// looking every wait/4, until stop is closed (never for the pool's).
func watchWriters(slots []writerSlot, wait time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(wait / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now().UnixNano()
		for i := range slots {
			s := &slots[i]
			since := s.since.Load()
			c := s.conn.Load()
			if since != 0 && now-since > int64(wait) && s.since.Load() == since && c != nil {
				_ = c.ws.NetConn().Close()
			}
		}
	}
}

// drain writes what is queued, then finishes the operation if it ended.
// slot is the writer's (nil on an extra goroutine: its writes then carry a
// deadline).
func (p *pushOp) drain(slot *writerSlot) {
	defer func() {
		if r := recover(); r != nil {
			p.mu.Lock()
			p.ended, p.queue, p.finished = true, nil, true
			p.mu.Unlock()
			p.c.finish(p.ctx, p.o, p.id, p.rc, r)
		}
	}()
	typ := "next"
	if p.c.legacy {
		typ = "data"
	}
	if p.head == nil {
		p.head = append(frameHead(nil, p.id, typ, true), `{"data":`...)
	}
	for {
		p.mu.Lock()
		batch := p.queue
		if len(batch) == 0 {
			finish := p.ended && !p.finished
			p.finished = p.finished || finish
			p.running = false
			p.mu.Unlock()
			if finish {
				p.c.finish(p.ctx, p.o, p.id, p.rc, nil)
			}
			return
		}
		p.queue = p.spare[:0]
		p.mu.Unlock()
		for i, it := range batch {
			data := it.data
			if data == nil {
				data = it.pend.Result(p.ctx)
			}
			if data != nil {
				p.c.writeParts(pushWriteWait, slot, p.head, data, []byte(`}}`))
			} else if resp := p.responses(p.ctx); resp != nil {
				p.c.respond(pushWriteWait, p.id, resp)
			}
			batch[i] = pushItem{}
		}
		p.mu.Lock()
		if cap(batch) <= 4 { // an idle subscriber keeps no burst-sized array
			p.spare = batch[:0]
		}
		p.mu.Unlock()
	}
}

// finish ends an operation: a panic is reported as its error, and it is
// completed unless the connection is closing.
func (c *connection) finish(ctx context.Context, o *op, id string, rc *graphql.OperationContext, panicked any) {
	if panicked != nil {
		var err error
		if rc != nil {
			err = rc.Recover(ctx, panicked)
		} else {
			err = fmt.Errorf("panic: %v", panicked)
		}
		var gqlerr *gqlerror.Error
		if !errors.As(err, &gqlerr) {
			gqlerr = &gqlerror.Error{}
			if err != nil {
				gqlerr.Message = err.Error()
			}
		}
		c.sendError(id, gqlerr)
	}
	// Unregistered before complete is sent: a client may reuse the id, or
	// count on the room under MaxSubscriptions, as soon as it reads it.
	c.mu.Lock()
	if i := slices.Index(c.ops, o); i >= 0 {
		c.ops = slices.Delete(c.ops, i, i+1)
	}
	if o.counted {
		o.counted = false
		c.subs--
	}
	closing := c.closed
	c.mu.Unlock()
	if !closing { // a closing connection sends no complete
		c.complete(id)
	}
	o.cancel()
}

// sendResponse writes a next/data message. A response that is only data
// (the common case) is framed around gqlgen's bytes as they are: they are
// valid JSON already, and re-encoding them is what made fan-out expensive.
func (c *connection) sendResponse(id string, resp *graphql.Response) {
	c.respond(writeWait, id, resp)
}

// respond is sendResponse with the write's time limit.
func (c *connection) respond(wait time.Duration, id string, resp *graphql.Response) {
	typ := "next"
	if c.legacy {
		typ = "data"
	}
	if len(resp.Errors) == 0 && resp.Label == "" && resp.Path == nil && resp.HasNext == nil && len(resp.Extensions) == 0 {
		data := []byte(resp.Data)
		if len(data) == 0 {
			data = []byte("null")
		}
		c.writeFrameWait(wait, id, typ, []byte(`{"data":`), data, []byte(`}`))
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	c.writeFrameWait(wait, id, typ, b)
}

func (c *connection) complete(id string) { c.write(message{ID: id, Type: "complete"}) }

func (c *connection) sendError(id string, errs ...*gqlerror.Error) {
	b, err := json.Marshal(errs)
	if err != nil {
		panic(err)
	}
	c.write(message{ID: id, Type: "error", Payload: b})
}

// connectionError is graphql-ws's connection_error (graphql-transport-ws
// has none: the close reason says it).
func (c *connection) connectionError(format string, args ...any) {
	if !c.legacy {
		return
	}
	b, _ := json.Marshal(&gqlerror.Error{Message: fmt.Sprintf(format, args...)})
	c.write(message{Type: "connection_error", Payload: b})
}

func (c *connection) write(m message) {
	if len(m.Payload) == 0 {
		c.writeFrame(m.ID, m.Type)
		return
	}
	c.writeFrame(m.ID, m.Type, m.Payload)
}

// writeFrame writes {"id":id,"type":typ,"payload":<parts...>} (id and
// payload omitted when empty). The parts must form valid JSON. A write that
// fails or cannot finish within writeWait closes the connection: the peer
// is gone or not reading.
func (c *connection) writeFrame(id, typ string, payload ...[]byte) {
	c.writeFrameWait(writeWait, id, typ, payload...)
}

// writeFrameWait is writeFrame with the write's time limit.
func (c *connection) writeFrameWait(wait time.Duration, id, typ string, payload ...[]byte) {
	b := writeBufs.Get().(*[]byte)
	buf := frameHead((*b)[:0], id, typ, len(payload) > 0)
	parts := make([][]byte, 0, 6)
	parts = append(parts, buf)
	parts = append(parts, payload...)
	c.writeParts(wait, nil, append(parts, []byte{'}'})...)
	*b = buf
	writeBufs.Put(b)
}

// frameHead appends {"id":id,"type":typ and, with a payload, ,"payload":
// to buf.
func frameHead(buf []byte, id, typ string, payload bool) []byte {
	buf = append(buf, '{')
	if id != "" {
		buf = append(buf, `"id":`...)
		q, _ := json.Marshal(id)
		buf = append(buf, q...)
		buf = append(buf, ',')
	}
	buf = append(buf, `"type":"`...)
	buf = append(buf, typ...) // one of ours: nothing to escape
	buf = append(buf, '"')
	if payload {
		buf = append(buf, `,"payload":`...)
	}
	return buf
}

// writeParts writes one message made of parts. It must finish within
// wait, or the connection is closed; on a writer of the pool (slot set) the
// write carries no socket deadline and the slot shows it to watchWriters,
// which keeps the same limit.
func (c *connection) writeParts(wait time.Duration, slot *writerSlot, parts ...[]byte) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if slot != nil {
		slot.conn.Store(c)
		slot.since.Store(time.Now().UnixNano())
		_ = c.ws.SetWriteDeadline(time.Time{})
	} else {
		_ = c.ws.SetWriteDeadline(time.Now().Add(wait))
	}
	w, err := c.ws.NextWriter(websocket.TextMessage)
	if err == nil {
		for _, p := range parts {
			if err == nil {
				_, err = w.Write(p)
			}
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if slot != nil {
		slot.since.Store(0)
		slot.conn.Store(nil)
	}
	c.mu.Unlock()
	if err != nil {
		c.reportError(fmt.Errorf("websocket write: %w", err))
		c.close(websocket.CloseGoingAway, "write failed")
	}
}

// writeBufs holds the scratch buffers of message headers.
var writeBufs = sync.Pool{New: func() any { return new([]byte) }}

// close sends a close frame, ends every operation and closes the socket.
func (c *connection) close(code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	ops := c.ops
	c.ops = nil
	unwatch := c.unwatch
	c.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(writeWait))
	for _, o := range ops {
		o.cancel()
	}
	_ = c.ws.Close()
	if c.detached != nil {
		c.detached()
	}
}

func (c *connection) reportError(err error) {
	if c.t.ErrorFunc != nil && c.ctx != nil {
		c.t.ErrorFunc(c.ctx, err)
	}
}

func isClose(err error) bool {
	return errors.Is(err, net.ErrClosed) || websocket.IsCloseError(err,
		websocket.CloseNormalClosure, websocket.CloseNoStatusReceived, websocket.CloseGoingAway)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
