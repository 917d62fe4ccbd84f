package search

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a test clock: it moves only when the test advances it.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	k := &clock{}
	k.ns.Store(time.Now().UnixNano())
	return k
}

func (k *clock) now() time.Time          { return time.Unix(0, k.ns.Load()) }
func (k *clock) advance(d time.Duration) { k.ns.Add(int64(d)) }

func TestTTLCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTTLCache[int](200 * time.Millisecond)
	clk := newClock()
	c.now = clk.now
	var calls atomic.Int32
	compute := func(context.Context) (int, error) {
		time.Sleep(20 * time.Millisecond)
		return int(calls.Add(1)), nil
	}
	now := time.Now()

	// Concurrent misses share one computation.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.get(ctx, "k", now, time.Second, compute)
			assert.NoError(t, err)
			assert.Equal(t, 1, v)
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), calls.Load())

	// A from far away is another search; a nearby one is the same.
	v, _ := c.get(ctx, "k", now.Add(time.Hour), time.Second, compute)
	require.Equal(t, 2, v)
	v, _ = c.get(ctx, "k", now.Add(time.Hour+50*time.Millisecond), time.Second, compute)
	require.Equal(t, 2, v)

	// Past half its ttl the value is served while it is refreshed.
	clk.advance(120 * time.Millisecond)
	v, _ = c.get(ctx, "k", now.Add(time.Hour), time.Second, compute)
	require.Equal(t, 2, v)
	require.Eventually(t, func() bool {
		v, _ := c.get(ctx, "k", now.Add(time.Hour), time.Second, compute)
		return v == 3
	}, time.Second, 5*time.Millisecond)

	// Errors are not kept; a negative ttl computes every time.
	fail := func(context.Context) (int, error) { return 0, errors.New("down") }
	_, err := c.get(ctx, "e", now, time.Second, fail)
	require.Error(t, err)
	v, err = c.get(ctx, "e", now, time.Second, compute)
	require.NoError(t, err)
	require.Equal(t, 4, v)
	off := newTTLCache[int](-1)
	a, _ := off.get(ctx, "k", now, time.Second, compute)
	b, _ := off.get(ctx, "k", now, time.Second, compute)
	require.Equal(t, a+1, b)
}

func TestTTLCachePeekPut(t *testing.T) {
	t.Parallel()
	c := newTTLCache[int](100 * time.Millisecond)
	clk := newClock()
	c.now = clk.now
	from := time.Now()
	_, ok := c.peek("k", from)
	require.False(t, ok)
	c.put("k", from, 7)
	v, ok := c.peek("k", from.Add(50*time.Millisecond))
	require.True(t, ok)
	require.Equal(t, 7, v)
	_, ok = c.peek("k", from.Add(time.Second)) // another `from`
	require.False(t, ok)
	clk.advance(120 * time.Millisecond)
	_, ok = c.peek("k", from) // expired
	require.False(t, ok)

	// a computation in flight is not replaced by a put
	started, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = c.get(context.Background(), "f", from, time.Second, func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
	}()
	<-started
	c.put("f", from, 2)
	close(release)
	v, err := c.get(context.Background(), "f", from, time.Second, func(context.Context) (int, error) { return 3, nil })
	require.NoError(t, err)
	require.Equal(t, 1, v)
}
