package catalog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/store"
)

// When Postgres cannot be reached (no replica, or the replica is down too),
// the catalog getters answer with the last good rows they loaded within
// store.StaleFor, and SERVICE_UNAVAILABLE for anything they have not seen
// (the design document lets browsing lag; it never lets it invent).

// staleMaxEntries bounds the memory of the last-good cache: when it is
// full it starts over (the entries are small rows; a venue's seats are one
// entry per section).
const staleMaxEntries = 100_000

// lastGood keeps the last good answer of every catalog key (kind + id).
type lastGood struct {
	mu  sync.RWMutex
	m   map[string]staleEntry
	now func() time.Time
}

type staleEntry struct {
	v         any
	at        time.Time
	forgotten bool // within never answers it (ForgetEvents)
}

func (c *lastGood) put(kind, id string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= staleMaxEntries {
		c.m = make(map[string]staleEntry)
	}
	c.m[kind+"|"+id] = staleEntry{v: v, at: c.now()}
}

func (c *lastGood) get(kind, id string) (any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[kind+"|"+id]
	if !ok || c.now().Sub(e.at) > store.StaleFor {
		return nil, false
	}
	return e.v, true
}

// within is the last good answer of a key read within d and not
// forgotten since.
func (c *lastGood) within(kind, id string, d time.Duration) (any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[kind+"|"+id]
	if !ok || e.forgotten || c.now().Sub(e.at) >= d {
		return nil, false
	}
	return e.v, true
}

// forget marks the keys' answers as not to be given by within (get, the
// outage fallback, still gives them).
func (c *lastGood) forget(kind string, ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if e, ok := c.m[kind+"|"+id]; ok {
			e.forgotten = true
			c.m[kind+"|"+id] = e
		}
	}
}

// peek is the last good answer of a key whatever its age (for the kinds
// that never change: immutable.go).
func (c *lastGood) peek(kind, id string) (any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[kind+"|"+id]
	return e.v, ok
}

// fallback reports whether err lets the cache answer: Postgres (primary and
// replica) unreachable.
func fallback(err error) bool { return errors.Is(err, apperr.ErrServiceUnavailable) }

// staleMap answers ids from the cache, or false if any is missing.
func staleMap[T any](c *lastGood, kind string, ids []string) (map[string]T, bool) {
	out := make(map[string]T, len(ids))
	for _, id := range ids {
		v, ok := c.get(kind, id)
		if !ok {
			return nil, false
		}
		if t, ok := v.(T); ok {
			out[id] = t
		} else {
			return nil, false
		}
	}
	return out, true
}

// onCatalog is a batch getter of the store run where catalog reads go
// (store.ReadCatalog: the replica, or the primary).
func onCatalog[T any](s *Service, get func(*store.Store, context.Context, []string) ([]T, error)) func(context.Context, []string) ([]T, error) {
	return func(ctx context.Context, ids []string) ([]T, error) {
		return store.ReadCatalog(s.reads, func(st *store.Store) ([]T, error) { return get(st, ctx, ids) })
	}
}

// UseReads routes the catalog's reads (store.Reads: a replica, the primary's
// health); writes stay on the store given to New. Call it before use.
func (s *Service) UseReads(r *store.Reads) { s.reads = r }
