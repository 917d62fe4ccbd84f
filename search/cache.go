package search

import (
	"context"
	"sync"
	"time"
)

// ttlCache remembers computed values for a short time, per key and
// approximate `from` time (queries default `from` to now, so two searches
// a moment apart are the same search). Concurrent callers of a missing key
// share one computation; a value past half its ttl is still served while
// one background computation replaces it (up to twice its ttl if that is
// slow), so a steadily asked key never makes a caller wait. Errors are not
// remembered.
type ttlCache[V any] struct {
	ttl time.Duration
	now func() time.Time // the clock (time.Now; tests advance their own)

	mu sync.Mutex
	m  map[string]*cacheEntry[V]
}

type cacheEntry[V any] struct {
	done       chan struct{}
	at         time.Time // when it was computed (wall clock)
	from       time.Time
	refreshing bool
	v          V
	err        error
}

func newTTLCache[V any](ttl time.Duration) *ttlCache[V] {
	return &ttlCache[V]{ttl: ttl, now: time.Now, m: map[string]*cacheEntry[V]{}}
}

// maxCacheEntries bounds the memory of a cache; past it, expired entries
// are swept and, if still full, everything is dropped.
const maxCacheEntries = 2000

// get returns the value of (key, from), computing it if there is none
// younger than ttl for a from within ttl. A ttl <= 0 computes every time.
// Background refreshes run with their own context bounded by timeout.
func (c *ttlCache[V]) get(ctx context.Context, key string, from time.Time, timeout time.Duration,
	compute func(ctx context.Context) (V, error)) (V, error) {
	if c == nil || c.ttl <= 0 {
		return compute(ctx)
	}
	now := c.now()
	c.mu.Lock()
	e := c.m[key]
	if e != nil {
		d := from.Sub(e.from)
		if d < -c.ttl || d > c.ttl {
			e = nil
		}
	}
	if e != nil {
		select {
		case <-e.done:
			age := now.Sub(e.at)
			switch {
			case e.err != nil || age >= 2*c.ttl || (age >= c.ttl && !e.refreshing):
				e = nil
			case age >= c.ttl:
				// stale, but its replacement is on the way (a slow database)
			case age >= c.ttl/2 && !e.refreshing:
				e.refreshing = true
				go c.refresh(key, e, from, timeout, compute)
			}
		default:
		}
	}
	if e == nil {
		if len(c.m) >= maxCacheEntries {
			c.sweep(now)
		}
		e = &cacheEntry[V]{done: make(chan struct{}), from: from, at: now}
		c.m[key] = e
		c.mu.Unlock()
		e.v, e.err = compute(ctx)
		c.mu.Lock()
		e.at = c.now()
		if e.err != nil && c.m[key] == e {
			delete(c.m, key)
		}
		c.mu.Unlock()
		close(e.done)
		return e.v, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.v, e.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// peek returns the value of (key, from) if one younger than ttl is ready.
func (c *ttlCache[V]) peek(key string, from time.Time) (V, bool) {
	var zero V
	if c == nil || c.ttl <= 0 {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil {
		return zero, false
	}
	if d := from.Sub(e.from); d < -c.ttl || d > c.ttl {
		return zero, false
	}
	select {
	case <-e.done:
		if e.err == nil && c.now().Sub(e.at) < c.ttl {
			return e.v, true
		}
	default:
	}
	return zero, false
}

// put stores v as the value of (key, from), computed now, unless a
// computation of key is in flight.
func (c *ttlCache[V]) put(key string, from time.Time, v V) {
	if c == nil || c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[key]; e != nil {
		select {
		case <-e.done:
		default:
			return
		}
	}
	if len(c.m) >= maxCacheEntries {
		c.sweep(c.now())
	}
	done := make(chan struct{})
	close(done)
	c.m[key] = &cacheEntry[V]{done: done, at: c.now(), from: from, v: v}
}

// refresh computes old's replacement in the background.
func (c *ttlCache[V]) refresh(key string, old *cacheEntry[V], from time.Time, timeout time.Duration,
	compute func(ctx context.Context) (V, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	v, err := compute(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		old.refreshing = false
		return
	}
	if c.m[key] == old {
		done := make(chan struct{})
		close(done)
		c.m[key] = &cacheEntry[V]{done: done, at: c.now(), from: from, v: v}
	}
}

func (c *ttlCache[V]) sweep(now time.Time) {
	for k, e := range c.m {
		select {
		case <-e.done:
			if now.Sub(e.at) >= c.ttl {
				delete(c.m, k)
			}
		default:
		}
	}
	if len(c.m) >= maxCacheEntries {
		clear(c.m)
	}
}

// Cache is a TTL cache for values derived from search results (such as the
// Postgres rows of a page of hits), with the same sharing and background
// refresh as the search result cache.
type Cache[V any] struct {
	c       *ttlCache[V]
	timeout time.Duration
}

// NewCache returns a cache keeping values for ttl; background refreshes
// give up after timeout.
func NewCache[V any](ttl, timeout time.Duration) *Cache[V] {
	return &Cache[V]{c: newTTLCache[V](ttl), timeout: timeout}
}

// Get returns the value of key, computing it if there is none younger than
// the cache's ttl.
func (c *Cache[V]) Get(ctx context.Context, key string, compute func(ctx context.Context) (V, error)) (V, error) {
	return c.c.get(ctx, key, time.Time{}, c.timeout, compute)
}
