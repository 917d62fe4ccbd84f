package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher coalesces concurrent script calls into pipelines. Under load every
// call would otherwise pay its own write and read system calls on both ends
// of the socket, which on two shared cores cost more than the scripts
// themselves; pipelined, N calls share them. A lone call goes out at once,
// so an idle system sees no added latency. Each script still runs
// atomically on its own: only the transport is shared.
//
// A call waits its turn for as long as its caller's context allows: the
// length of the local queue is never a reason to fail. What fails calls is
// Redis itself: a pipeline that Redis does not answer within the stall
// timeout (it hangs), or that cannot reach it (a refused connection, at
// once), fails, and so does every call waiting at that moment, at once,
// instead of each waiting for its own pipeline to time out. Under a burst
// of 10,000 joins a per-call deadline (500 ms, counting the wait behind the
// crowd and the time the process's cores spent starting the burst's
// goroutines) used to refuse most of them while Redis was healthy.
type batcher struct {
	rdb   redis.UniversalClient
	stall time.Duration
	reqs  chan *scriptCall
	once  sync.Once
	stop  chan struct{}
	shut  sync.Once
	// failed is closed (and replaced) when a pipeline could not reach
	// Redis: the calls waiting then fail with that pipeline's error.
	failed atomic.Pointer[failure]
}

type failure struct {
	ch  chan struct{}
	err error
}

type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	res    []any
	err    error
	done   chan struct{}
}

const (
	batchWorkers = 4   // pipelines in flight at once
	batchMax     = 128 // calls per pipeline
	// DefaultStallTimeout is how long a pipeline waits for Redis's answer
	// when no stall timeout is configured.
	DefaultStallTimeout = 3 * time.Second
)

func newBatcher(rdb redis.UniversalClient, stall time.Duration) *batcher {
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	b := &batcher{rdb: rdb, stall: stall, reqs: make(chan *scriptCall), stop: make(chan struct{})}
	b.failed.Store(&failure{ch: make(chan struct{})})
	return b
}

// run runs the script with keys and args (as Script.Run) and returns its
// reply. It fails when ctx ends, and with the Redis error when a pipeline
// fails to reach Redis while it waits.
func (b *batcher) run(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]any, error) {
	b.once.Do(func() {
		for range batchWorkers {
			go b.loop()
		}
	})
	c := &scriptCall{script: script, keys: keys, args: args, done: make(chan struct{})}
	f := b.failed.Load()
	select {
	case b.reqs <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.ch:
		return nil, f.err
	case <-b.stop:
		return nil, redis.ErrClosed
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.ch:
		return nil, f.err
	}
}

// close stops the workers; later calls fail with redis.ErrClosed.
func (b *batcher) close() { b.shut.Do(func() { close(b.stop) }) }

func (b *batcher) loop() {
	for {
		var calls []*scriptCall
		select {
		case c := <-b.reqs:
			calls = append(calls, c)
		case <-b.stop:
			return
		}
	drain:
		for len(calls) < batchMax {
			select {
			case c := <-b.reqs:
				calls = append(calls, c)
			default:
				break drain
			}
		}
		b.exec(calls)
	}
}

// isReply reports whether err is an answer from Redis (a script error, a
// nil reply) rather than a failure to reach it.
func isReply(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re)
}

// unreachable fails every call waiting now with err.
func (b *batcher) unreachable(err error) {
	old := b.failed.Swap(&failure{ch: make(chan struct{})})
	old.err = err
	close(old.ch)
}

func (b *batcher) exec(calls []*scriptCall) {
	ctx, cancel := context.WithTimeout(context.Background(), b.stall)
	defer cancel()
	if len(calls) == 1 {
		c := calls[0]
		c.res, c.err = c.script.Run(ctx, b.rdb, c.keys, c.args...).Slice()
		close(c.done)
		if !isReply(c.err) {
			b.unreachable(c.err)
		}
		return
	}
	cmds := make([]*redis.Cmd, len(calls))
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	for i, c := range calls {
		c.res, c.err = cmds[i].Slice()
		if c.err != nil && redis.HasErrorPrefix(c.err, "NOSCRIPT") { // Redis restarted: load it again
			c.res, c.err = c.script.Run(ctx, b.rdb, c.keys, c.args...).Slice()
		}
		close(c.done)
	}
	if err := cmds[len(cmds)-1].Err(); !isReply(err) {
		b.unreachable(err)
	}
}
