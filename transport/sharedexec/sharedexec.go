// Package sharedexec executes a subscription event once per distinct
// operation instead of once per subscriber.
//
// gqlgen runs the selection set of every event for every subscription. For
// a broadcast stream (the live seat map: thousands of viewers, one frame every
// 100 ms, every viewer sending the same query) that is nearly all the CPU of
// the fan-out. When the resolver's events are immutable values shared by all
// subscribers (the same pointer reaches each one) and the selected fields do
// not depend on the subscriber, the result bytes are a function of (event,
// operation) and can be computed once and reused.
//
// Wrap the executable schema naming the root subscription fields for which
// that holds, and have their resolvers return Stream(ctx, ch). Everything
// else (other fields, operations with several root fields, resolvers that
// return an error, events whose execution reported errors) runs through
// gqlgen as usual.
package sharedexec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// The cache keeps the results of the most recent events (oldest evicted
// first): subscribers read an event within milliseconds of each other, and
// one that lags further behind just executes its own.
const (
	maxCacheBytes  = 32 << 20
	maxCacheFrames = 1024
)

// Schema is an ExecutableSchema whose listed subscription fields share
// execution results between subscribers.
type Schema struct {
	graphql.ExecutableSchema
	fields map[string]bool
	cache  cache
}

// Wrap returns es with sharing enabled for the root subscription fields
// named. The objects reachable from those fields must not have resolvers
// that read the subscriber's context (user, headers): one subscriber's
// result is served to the others.
func Wrap(es graphql.ExecutableSchema, fields ...string) *Schema {
	s := &Schema{ExecutableSchema: es, fields: map[string]bool{}}
	for _, f := range fields {
		s.fields[f] = true
	}
	s.cache.frames = map[any]*frame{}
	return s
}

type tapKey struct{}

// tap connects Exec to the resolver's Stream or Source call: Exec reads the
// events, and hands gqlgen (through feed) only those it must execute itself.
type tap struct {
	src source // set by Stream or Source

	// Set when the transport asked for pushes (WithPusher).
	s    *Schema
	key  [32]byte
	push *pushState
}

// Pusher is a transport's side of a pushed subscription: instead of a
// goroutine per subscriber waiting on the next response, the source hands
// each event to the transport as it happens, on the source's goroutine. The
// methods must not block, and are called in event order.
type Pusher interface {
	// Data queues the result of an event, computed for another subscriber
	// with the same operation: the bytes are shared, read-only. False means
	// the subscriber cannot take more; it is then cut off (End follows).
	Data(data []byte) bool
	// Pending queues an event whose result is not computed yet. When its
	// turn comes the transport calls p.Result: bytes to write as for Data
	// (another subscriber computed them meanwhile), or nil, and then it
	// calls the operation's response handler once: the event waits inside,
	// to be executed there. False as for Data.
	Pending(p Pending) bool
	// End says the stream has ended: once what is queued is sent, the
	// operation is complete.
	End()
}

// source is what Exec reads a subscriber's events from (recv), and how it
// hands gqlgen one to execute (feed).
type source interface {
	recv(ctx context.Context) (any, bool)
	feed(ctx context.Context, v any)
}

// chanSource reads the events from a channel (Stream).
type chanSource[T any] struct {
	src <-chan T
	out chan T // what gqlgen reads: only the events it must execute
}

func (c *chanSource[T]) recv(ctx context.Context) (any, bool) {
	select {
	case v, ok := <-c.src:
		return v, ok
	case <-ctx.Done():
		return nil, false
	}
}

func (c *chanSource[T]) feed(ctx context.Context, v any) {
	select {
	case c.out <- v.(T):
	case <-ctx.Done(): // gqlgen then ends the stream without reading
	}
}

// pushSource is a pushed subscriber's source (Source with a Pusher): the
// hub calls send, Exec's recv takes the events of the Pendings that the
// transport could not serve from a shared result. One object per
// subscriber: thousands of them sit idle.
type pushSource[T any] struct {
	chanSource[T] // out only
	t             *tap
	buffer        int
	mu            sync.Mutex
	// Events of queued Pendings, in order (at most buffer of them: the
	// transport refuses more than that); usually none.
	pending []T
}

// send hands an event to the transport: its shared result if it is
// computed, or else a Pending. The cache entry is made here, before the
// transport gets to it: the hub hands a frame to thousands of subscribers
// before any writer has executed it, and every one of them waits for the
// one execution instead of finding nothing and executing its own.
func (s *pushSource[T]) send(v T) bool {
	p := s.t.push.p
	e := s.t.s.cache.prepare(v, s.t.key)
	select {
	case <-e.done:
		if e.data != nil {
			return p.Data(e.data)
		}
	default:
	}
	s.mu.Lock()
	if len(s.pending) >= s.buffer {
		s.mu.Unlock()
		return false
	}
	s.pending = append(s.pending, v)
	s.mu.Unlock()
	return p.Pending(Pending{e: e, c: &s.t.s.cache, src: s})
}

// drop removes the oldest waiting event: its Pending was served from the
// shared result.
func (s *pushSource[T]) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		var zero T
		s.pending[0] = zero
		if s.pending = s.pending[1:]; len(s.pending) == 0 {
			s.pending = nil
		}
	}
}

// Pending is an event of a pushed subscription whose shared result was not
// computed when it was queued (Pusher.Pending).
type Pending struct {
	e   *entry
	c   *cache
	src interface{ drop() }
}

// Result returns the event's shared result once another subscriber's
// execution of it has finished, or nil: nobody is executing it yet, that
// execution failed, or ctx ended. On nil the transport calls the response
// handler once (which executes the event, or waits for the execution that
// has started meanwhile); on bytes, it writes them and must not call it.
func (p Pending) Result(ctx context.Context) []byte {
	p.c.mu.Lock()
	claimed := p.e.claimed
	p.c.mu.Unlock()
	if !claimed {
		return nil
	}
	select {
	case <-p.e.done:
	case <-ctx.Done():
		return nil
	}
	if p.e.data == nil {
		return nil
	}
	p.src.drop()
	return p.e.data
}

// recv is called once per response handler call, after its event was
// queued.
func (s *pushSource[T]) recv(ctx context.Context) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 || ctx.Err() != nil {
		return nil, false
	}
	v := s.pending[0]
	var zero T
	s.pending[0] = zero
	if s.pending = s.pending[1:]; len(s.pending) == 0 {
		s.pending = nil
	}
	return v, true
}

type pushKey struct{}

// pushState is what WithPusher puts in the context.
type pushState struct {
	p       Pusher
	adopted bool // set by Source during DispatchOperation
}

// WithPusher offers p to the subscription dispatched with ctx. After
// DispatchOperation, Pushed tells whether it was taken; if not, the
// transport pulls responses as usual.
func WithPusher(ctx context.Context, p Pusher) context.Context {
	return context.WithValue(ctx, pushKey{}, &pushState{p: p})
}

// Pushed reports whether the subscription dispatched with ctx (from
// WithPusher) pushes its events: then the transport must not call the
// response handler, except once per Pending whose Result is nil.
func Pushed(ctx context.Context) bool {
	ps, _ := ctx.Value(pushKey{}).(*pushState)
	return ps != nil && ps.adopted
}

// Stream returns the channel a shared subscription resolver gives gqlgen.
// Outside a shared operation it returns src itself. T must be a pointer
// type, and each value must be sent unmodified to every subscriber (its
// identity is the cache key).
func Stream[T any](ctx context.Context, src <-chan T) <-chan T {
	t, _ := ctx.Value(tapKey{}).(*tap)
	if t == nil || t.src != nil || reflect.TypeFor[T]().Kind() != reflect.Pointer {
		return src
	}
	c := &chanSource[T]{src: src, out: make(chan T, 1)}
	t.src = c
	return c.out
}

// Source starts a shared subscription's source and returns the channel the
// resolver gives gqlgen. start is called once, with send, which delivers an
// event (it never blocks; false means the subscriber cannot keep up and
// must be cut off), and end, which the source calls once when it stops
// (not if start returns an error). When the transport pushes (WithPusher),
// send hands events straight to it, with the shared result when one is
// ready; otherwise they go through a channel of capacity buffer.
//
// As with Stream, T must be a pointer type and each value is sent
// unmodified to every subscriber.
func Source[T any](ctx context.Context, buffer int, start func(send func(T) bool, end func()) error) (<-chan T, error) {
	t, _ := ctx.Value(tapKey{}).(*tap)
	if t == nil || t.src != nil || t.push == nil || reflect.TypeFor[T]().Kind() != reflect.Pointer {
		ch := make(chan T, buffer)
		send := func(v T) bool {
			select {
			case ch <- v:
				return true
			default:
				return false
			}
		}
		if err := start(send, func() { close(ch) }); err != nil {
			return nil, err
		}
		return Stream(ctx, ch), nil
	}
	ps := &pushSource[T]{t: t, buffer: buffer}
	if err := start(ps.send, t.push.p.End); err != nil {
		return nil, err
	}
	t.push.adopted = true
	ps.out = make(chan T, 1)
	t.src = ps
	return ps.out, nil
}

// Exec implements graphql.ExecutableSchema.
func (s *Schema) Exec(ctx context.Context) graphql.ResponseHandler {
	key, ok := s.operationKey(graphql.GetOperationContext(ctx))
	if !ok {
		return s.ExecutableSchema.Exec(ctx)
	}
	t := &tap{s: s, key: key}
	t.push, _ = ctx.Value(pushKey{}).(*pushState)
	next := s.ExecutableSchema.Exec(context.WithValue(ctx, tapKey{}, t))
	if t.src == nil { // the resolver failed, or does not use Stream or Source
		return next
	}
	return func(ctx context.Context) *graphql.Response {
		v, ok := t.src.recv(ctx)
		if !ok {
			return nil
		}
		e, first := s.cache.entry(v, key)
		if !first {
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil
			}
			if e.data != nil {
				return &graphql.Response{Data: e.data}
			}
			// The first execution failed or was cancelled: run our own.
		}
		var resp *graphql.Response
		if first {
			defer func() { s.cache.settle(e, resp, ctx) }()
		}
		t.src.feed(ctx, v)
		resp = next(ctx)
		return resp
	}
}

// operationKey identifies what a subscriber's results depend on: the
// document, the operation name and the variables, except the variable that
// is only used as the field's `after` argument (a resume cursor: it decides
// which events arrive, not how they render).
func (s *Schema) operationKey(oc *graphql.OperationContext) ([32]byte, bool) {
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Subscription || len(oc.Operation.SelectionSet) != 1 {
		return [32]byte{}, false
	}
	f, ok := oc.Operation.SelectionSet[0].(*ast.Field)
	if !ok || !s.fields[f.Name] {
		return [32]byte{}, false
	}
	vars := oc.Variables
	if a := f.Arguments.ForName("after"); a != nil && a.Value != nil && a.Value.Kind == ast.Variable {
		// Its declaration and this use, and nothing else, mention it.
		if mentions(oc.RawQuery, a.Value.Raw) == 2 {
			vars = make(map[string]any, len(oc.Variables))
			for k, v := range oc.Variables {
				if k != a.Value.Raw {
					vars[k] = v
				}
			}
		}
	}
	vb, err := json.Marshal(vars) // map keys are sorted: deterministic
	if err != nil {
		return [32]byte{}, false
	}
	h := sha256.New()
	for _, p := range [][]byte{[]byte(oc.OperationName), []byte(oc.RawQuery), vb} {
		h.Write(p)
		h.Write([]byte{0})
	}
	var k [32]byte
	h.Sum(k[:0])
	return k, true
}

// mentions counts the references to variable $name in a document (a
// "$name" not followed by a name character).
func mentions(doc, name string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(doc[i:], "$"+name)
		if j < 0 {
			return n
		}
		i += j + 1 + len(name)
		if i == len(doc) || !isNameChar(doc[i]) {
			n++
		}
	}
}

func isNameChar(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// cache holds the results of recent events per operation.
type cache struct {
	mu     sync.Mutex
	frames map[any]*frame
	order  []any // events in arrival order, for eviction
	bytes  int
}

type frame struct {
	ops map[[32]byte]*entry
}

// entry is one (event, operation) result: data is set (or left nil when the
// execution failed) before done is closed, by the one caller that claimed
// it.
type entry struct {
	event   any
	key     [32]byte
	done    chan struct{}
	data    []byte
	claimed bool // someone is executing it (guarded by cache.mu)
	size    int  // len(data) once counted in cache.bytes (guarded by cache.mu)
}

// entry returns the (v, key) entry, and whether the caller claimed it and so
// must execute and settle it (nobody had).
func (c *cache) entry(v any, key [32]byte) (*entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.getLocked(v, key)
	if e.claimed {
		return e, false
	}
	e.claimed = true
	return e, true
}

// prepare returns the (v, key) entry, made (unclaimed) if there was none.
func (c *cache) prepare(v any, key [32]byte) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(v, key)
}

func (c *cache) getLocked(v any, key [32]byte) *entry {
	f := c.frames[v]
	if f == nil {
		f = &frame{ops: map[[32]byte]*entry{}}
		c.frames[v] = f
		c.order = append(c.order, v)
		c.evictLocked()
	}
	e := f.ops[key]
	if e == nil {
		e = &entry{event: v, key: key, done: make(chan struct{})}
		f.ops[key] = e
	}
	return e
}

// settle publishes the first execution's result: only a clean one (no
// errors, nothing but data) is reused.
func (c *cache) settle(e *entry, resp *graphql.Response, ctx context.Context) {
	if resp != nil && len(resp.Errors) == 0 && len(graphql.GetErrors(ctx)) == 0 &&
		resp.Label == "" && resp.Path == nil && resp.HasNext == nil && resp.Extensions == nil {
		e.data = bytes.Clone(resp.Data) // gqlgen reuses its buffer
	}
	close(e.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.frames[e.event]; f != nil && f.ops[e.key] == e { // not evicted meanwhile
		e.size = len(e.data)
		c.bytes += e.size
	}
	c.evictLocked()
}

// evictLocked drops the oldest events beyond the byte and count budgets
// (keeping the newest). A subscriber lagging behind them executes its own.
func (c *cache) evictLocked() {
	for (c.bytes > maxCacheBytes || len(c.order) > maxCacheFrames) && len(c.order) > 1 {
		for _, oe := range c.frames[c.order[0]].ops {
			c.bytes -= oe.size
		}
		delete(c.frames, c.order[0])
		c.order[0] = nil
		c.order = c.order[1:]
	}
}
