package sharedexec_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/ticketing/ticketing/transport/sharedexec"
)

type frame struct{ n int }

// fakeSchema stands for gqlgen's generated Exec: its "resolver" takes the
// next source channel and each response "executes" (is counted).
type fakeSchema struct {
	graphql.ExecutableSchema
	execs   atomic.Int32
	sources chan (<-chan *frame)
}

func (f *fakeSchema) Exec(ctx context.Context) graphql.ResponseHandler {
	ch := sharedexec.Stream(ctx, <-f.sources)
	return func(ctx context.Context) *graphql.Response {
		v, ok := <-ch
		if !ok {
			return nil
		}
		f.execs.Add(1)
		if v.n < 0 {
			return &graphql.Response{Errors: gqlerror.List{{Message: "bad"}}}
		}
		return &graphql.Response{Data: []byte(fmt.Sprintf(`{"n":%d,"q":%d}`, v.n, len(graphql.GetOperationContext(ctx).RawQuery)))}
	}
}

// subscribe runs Exec for a subscription document and returns its handler
// and the channel that feeds it.
func subscribe(t *testing.T, s graphql.ExecutableSchema, f *fakeSchema, query string, vars map[string]any) (graphql.ResponseHandler, chan *frame, context.Context) {
	t.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	require.NoError(t, err)
	oc := &graphql.OperationContext{RawQuery: query, Doc: doc, Operation: doc.Operations[0], Variables: vars}
	ctx := graphql.WithResponseContext(graphql.WithOperationContext(context.Background(), oc),
		graphql.DefaultErrorPresenter, graphql.DefaultRecover)
	src := make(chan *frame, 4)
	f.sources <- src
	return s.Exec(ctx), src, ctx
}

func TestSharedExecution(t *testing.T) {
	f := &fakeSchema{sources: make(chan (<-chan *frame), 1)}
	s := sharedexec.Wrap(f, "updates")
	const q = `subscription($e: ID!, $a: String) { updates(id: $e, after: $a) { x } }`
	h1, src1, ctx1 := subscribe(t, s, f, q, map[string]any{"e": "1", "a": "c1"})
	h2, src2, ctx2 := subscribe(t, s, f, q, map[string]any{"e": "1", "a": "c2"}) // another cursor: same results
	const aliased = `subscription($e: ID!, $a: String) { updates(id: $e, after: $a) { y: x } }`
	h3, src3, ctx3 := subscribe(t, s, f, aliased, map[string]any{"e": "1"})

	fr := &frame{n: 7}
	for _, src := range []chan *frame{src1, src2, src3} {
		src <- fr
	}
	r1, r2, r3 := h1(ctx1), h2(ctx2), h3(ctx3)
	require.JSONEq(t, fmt.Sprintf(`{"n":7,"q":%d}`, len(q)), string(r1.Data))
	require.Equal(t, r1.Data, r2.Data)
	require.JSONEq(t, fmt.Sprintf(`{"n":7,"q":%d}`, len(aliased)), string(r3.Data), "another document executes on its own")
	require.EqualValues(t, 2, f.execs.Load(), "one execution per (frame, document)")

	// A failed execution is not shared: each subscriber gets its own.
	bad := &frame{n: -1}
	src1 <- bad
	src2 <- bad
	require.NotEmpty(t, h1(ctx1).Errors)
	require.NotEmpty(t, h2(ctx2).Errors)
	require.EqualValues(t, 4, f.execs.Load())

	// The end of the source ends the stream.
	close(src1)
	require.Nil(t, h1(ctx1))
}

func TestNotShared(t *testing.T) {
	f := &fakeSchema{sources: make(chan (<-chan *frame), 1)}
	s := sharedexec.Wrap(f, "updates")
	// $a used twice (it could shape the result): the variables decide.
	const q = `subscription($a: String) { updates(after: $a) { x(f: $a) } }`
	h1, src1, ctx1 := subscribe(t, s, f, q, map[string]any{"a": "c1"})
	h2, src2, ctx2 := subscribe(t, s, f, q, map[string]any{"a": "c2"})
	// A field that was not declared shareable runs through gqlgen as is.
	h3, src3, ctx3 := subscribe(t, s, f, `subscription { other { x } }`, nil)
	fr := &frame{n: 1}
	src1 <- fr
	src2 <- fr
	src3 <- fr
	h1(ctx1)
	h2(ctx2)
	h3(ctx3)
	require.EqualValues(t, 3, f.execs.Load())
}

// recorder is a Pusher that records what it is handed.
type recorder struct {
	data    [][]byte
	pending []sharedexec.Pending
	ended   int
	full    bool
}

func (r *recorder) Data(d []byte) bool { r.data = append(r.data, d); return !r.full }
func (r *recorder) Pending(p sharedexec.Pending) bool {
	r.pending = append(r.pending, p)
	return !r.full
}
func (r *recorder) End() { r.ended++ }

// sourceSchema is fakeSchema with a resolver that uses Source: each Exec
// hands the test the subscriber's send and end.
type sourceSchema struct {
	fakeSchema
	subs chan func(*frame) bool
	ends chan func()
	// When set, an execution says so on executing, then waits for gate.
	executing chan struct{}
	gate      chan struct{}
}

func (f *sourceSchema) Exec(ctx context.Context) graphql.ResponseHandler {
	ch, err := sharedexec.Source(ctx, 2, func(send func(*frame) bool, end func()) error {
		f.subs <- send
		f.ends <- end
		return nil
	})
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context) *graphql.Response {
		v, ok := <-ch
		if !ok {
			return nil
		}
		f.execs.Add(1)
		if f.gate != nil {
			f.executing <- struct{}{}
			<-f.gate
		}
		if v.n < 0 {
			return &graphql.Response{Errors: gqlerror.List{{Message: "failed"}}}
		}
		return &graphql.Response{Data: []byte(fmt.Sprintf(`{"n":%d}`, v.n))}
	}
}

// TestPushedSource: with a Pusher in the context, the first subscriber of
// an event gets a Pull (and executes it), the others the shared bytes
// directly; a full transport cuts the subscriber off; without a Pusher the
// same resolver streams through a channel.
func TestPushedSource(t *testing.T) {
	f := &sourceSchema{subs: make(chan func(*frame) bool, 4), ends: make(chan func(), 4)}
	s := sharedexec.Wrap(f, "updates")
	const q = `subscription { updates { x } }`
	exec := func(p sharedexec.Pusher) (graphql.ResponseHandler, context.Context, func(*frame) bool, func()) {
		doc, err := parser.ParseQuery(&ast.Source{Input: q})
		require.NoError(t, err)
		oc := &graphql.OperationContext{RawQuery: q, Doc: doc, Operation: doc.Operations[0]}
		ctx := graphql.WithResponseContext(graphql.WithOperationContext(context.Background(), oc),
			graphql.DefaultErrorPresenter, graphql.DefaultRecover)
		if p != nil {
			ctx = sharedexec.WithPusher(ctx, p)
		}
		h := s.Exec(ctx)
		return h, ctx, <-f.subs, <-f.ends
	}
	r1, r2 := &recorder{}, &recorder{}
	h1, ctx1, send1, _ := exec(r1)
	require.True(t, sharedexec.Pushed(ctx1))
	_, ctx2, send2, end2 := exec(r2)
	require.True(t, sharedexec.Pushed(ctx2))

	fr := &frame{n: 3}
	require.True(t, send1(fr))
	require.Len(t, r1.pending, 1, "nothing computed yet")
	require.Nil(t, r1.pending[0].Result(ctx1), "nobody is computing it: the transport must call the handler")
	resp := h1(ctx1)
	require.JSONEq(t, `{"n":3}`, string(resp.Data))
	require.True(t, send2(fr))
	require.Empty(t, r2.pending)
	require.Equal(t, [][]byte{resp.Data}, r2.data, "the second subscriber gets the first one's bytes")
	require.EqualValues(t, 1, f.execs.Load())

	r2.full = true
	require.False(t, send2(&frame{n: 4}), "a transport that cannot take more cuts the subscriber off")
	end2()
	require.Equal(t, 1, r2.ended)

	// No pusher: the channel path, as Stream.
	h3, ctx3, send3, end3 := exec(nil)
	require.False(t, sharedexec.Pushed(ctx3))
	require.True(t, send3(&frame{n: 5}))
	require.JSONEq(t, `{"n":5}`, string(h3(ctx3).Data))
	require.True(t, send3(&frame{n: 6}))
	require.True(t, send3(&frame{n: 7}))
	require.False(t, send3(&frame{n: 8}), "the channel holds 2")
	end3()
	require.NotNil(t, h3(ctx3))
	require.NotNil(t, h3(ctx3))
	require.Nil(t, h3(ctx3), "closed by end")
}

// TestPendingWaitsForOneExecution: subscribers handed a frame before anyone
// executed it wait for the one execution that starts first and write its
// bytes (their handler is not called); if that execution fails, or their
// context ends, Result is nil and they run their own.
func TestPendingWaitsForOneExecution(t *testing.T) {
	f := &sourceSchema{subs: make(chan func(*frame) bool, 4), ends: make(chan func(), 4),
		executing: make(chan struct{}, 16), gate: make(chan struct{})}
	s := sharedexec.Wrap(f, "updates")
	const q = `subscription { updates { x } }`
	type sub struct {
		r    *recorder
		h    graphql.ResponseHandler
		ctx  context.Context
		send func(*frame) bool
	}
	subscribe := func(ctx context.Context) sub {
		doc, err := parser.ParseQuery(&ast.Source{Input: q})
		require.NoError(t, err)
		oc := &graphql.OperationContext{RawQuery: q, Doc: doc, Operation: doc.Operations[0]}
		r := &recorder{}
		ctx = sharedexec.WithPusher(graphql.WithResponseContext(graphql.WithOperationContext(ctx, oc),
			graphql.DefaultErrorPresenter, graphql.DefaultRecover), r)
		h := s.Exec(ctx)
		<-f.ends
		return sub{r: r, h: h, ctx: ctx, send: <-f.subs}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	a, b, c := subscribe(context.Background()), subscribe(context.Background()), subscribe(cancelled)

	fr := &frame{n: 1}
	for _, x := range []sub{a, b, c} {
		require.True(t, x.send(fr))
		require.Len(t, x.r.pending, 1)
	}
	// a's writer comes first: nobody executes it yet, so a runs it.
	require.Nil(t, a.r.pending[0].Result(a.ctx))
	done := make(chan *graphql.Response)
	go func() { done <- a.h(a.ctx) }()
	<-f.executing // a has claimed it and is executing
	got := make(chan []byte)
	waiting := &doneSpy{Context: b.ctx, called: make(chan struct{}, 1)}
	go func() { got <- b.r.pending[0].Result(waiting) }()
	select {
	case <-waiting.called: // b waits on a's execution (and on its own context)
	case <-time.After(10 * time.Second):
		t.Fatal("b's Result did not wait for the execution in progress")
	}
	cancel()
	require.Nil(t, c.r.pending[0].Result(c.ctx), "c's context ended")
	close(f.gate)
	respA := <-done
	require.JSONEq(t, `{"n":1}`, string(respA.Data))
	require.Equal(t, []byte(respA.Data), <-got, "b waited for a's execution and got its bytes")
	require.EqualValues(t, 1, f.execs.Load())

	// b's handler was not called for frame 1: its next event is frame 2.
	require.True(t, b.send(&frame{n: 2}))
	require.Nil(t, b.r.pending[1].Result(b.ctx))
	require.JSONEq(t, `{"n":2}`, string(b.h(b.ctx).Data))

	// A failed execution is not shared: the others run their own.
	bad := &frame{n: -1}
	require.True(t, a.send(bad))
	require.True(t, b.send(bad))
	require.Nil(t, a.r.pending[1].Result(a.ctx))
	require.NotEmpty(t, a.h(a.ctx).Errors)
	require.Nil(t, b.r.pending[2].Result(b.ctx), "the first execution failed")
	require.NotEmpty(t, b.h(b.ctx).Errors, "b ran its own")
	require.EqualValues(t, 4, f.execs.Load())
}

// doneSpy reports that Done was asked for: a wait on the context started.
type doneSpy struct {
	context.Context
	called chan struct{}
}

func (d *doneSpy) Done() <-chan struct{} {
	select {
	case d.called <- struct{}{}:
	default:
	}
	return d.Context.Done()
}
