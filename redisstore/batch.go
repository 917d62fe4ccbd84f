package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher coalesces concurrent script calls into pipelines. Under load every
// call would otherwise pay its own write and read system calls on both ends
// of the socket, which on two shared cores cost more than the scripts
// themselves; pipelined, N calls share them. A lone call goes out at once,
// so an idle system sees no added latency. Each script still runs
// atomically on its own: only the transport is shared.
type batcher struct {
	rdb  redis.UniversalClient
	reqs chan *scriptCall
	once sync.Once
	stop chan struct{}
	shut sync.Once
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
	batchWorkers = 4  // pipelines in flight at once
	batchMax     = 64 // calls per pipeline
	batchTimeout = time.Second
)

func newBatcher(rdb redis.UniversalClient) *batcher {
	return &batcher{rdb: rdb, reqs: make(chan *scriptCall), stop: make(chan struct{})}
}

// run runs the script with keys and args (as Script.Run) and returns its
// reply. It returns when ctx ends even if the call is still in flight, so
// the caller's deadline keeps bounding the wait when Redis hangs.
func (b *batcher) run(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]any, error) {
	b.once.Do(func() {
		for range batchWorkers {
			go b.loop()
		}
	})
	c := &scriptCall{script: script, keys: keys, args: args, done: make(chan struct{})}
	select {
	case b.reqs <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.stop:
		return nil, redis.ErrClosed
	}
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
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

func (b *batcher) exec(calls []*scriptCall) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(calls) == 1 {
		c := calls[0]
		c.res, c.err = c.script.Run(ctx, b.rdb, c.keys, c.args...).Slice()
		close(c.done)
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
}
