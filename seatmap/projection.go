package seatmap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/store"
)

// Snapshots are served from a projection per event, kept in memory by each
// instance: loaded once from Postgres (the stream position read first), then
// advanced by applying the event's stream entries after its cursor (the
// relay's publication of the outbox), newest version per seat and GA
// section. Each change makes a new immutable version whose encodings (the
// REST JSON, the GraphQL model, the subscribers' first message) are
// computed once, on first use, and shared by every request until the next
// change. A version's content is never older than its cursor: it holds
// every change up to it, and the stream holds every change after it, so a
// client that applies the snapshot and then the stream from its cursor
// (ignoring what is not newer) misses nothing.
//
// The projection goes back to Postgres when it cannot be advanced: on first
// use, when the stream lost entries it had not applied (trimmed, or Redis
// lost it), when Redis is unreachable, when the relay is behind (the stream
// lags the database by more than MaxRelayLag), and every reloadEvery in
// any case. Loads from Postgres are served for SnapshotTTL.

// reloadEvery bounds how long a projection goes without a load from
// Postgres: a change hidden from the stream (a loss of the stream right
// after it was created) is repaired within it. Each load picks its next
// one between half of it and all of it (reloadAfter), so maps loaded
// together (app.Warm's, a cold instance's first second) are not all
// reloaded in the same second a minute later.
const reloadEvery = time.Minute

// reloadAfter is how long a new load is served before the next one.
func reloadAfter() time.Duration {
	return reloadEvery - rand.N(reloadEvery/2)
}

// maxProjections is how many events' projections an instance keeps, and
// maxProjectionEntries how many seats and GA sections they hold together
// (256 maps of 10,000 seats); past either, one of the least recently used
// goes first (evictOldest). A small map costs little: an instance keeps
// thousands of them.
const (
	maxProjections       = 4096
	maxProjectionEntries = 256 * 10_000
)

// maxReplay is the most stream entries a projection applies in one
// refresh; further behind, a load from Postgres is cheaper.
const maxReplay = 5000

// errLost means the stream no longer holds every change after a cursor.
var errLost = errors.New("seat map: stream history lost")

// projection is one event's seat map on this instance.
type projection struct {
	cur atomic.Pointer[version]
	// Of the current version's load from Postgres, read by the refresh
	// only (under the Service's singleflight for the event).
	seatIdx, gaIdx map[string]int // seat or GA section id -> index in the snapshot
	// loaded is when the current version's load from Postgres was (unix
	// ns), and reloadAt when the next one is due (reloadAfter); checked
	// when the projection was last brought up to date; used when it was
	// last read, for eviction.
	loaded, reloadAt, checked, used atomic.Int64
	// dirty says the change feed named the event since the projection
	// last read its stream (feed.go).
	dirty atomic.Bool
	// entries is the seats and GA sections of its last load (Service.projM).
	entries int
}

// version is one immutable state of a projection.
type version struct {
	snap *Snapshot
	// first is the subscribers' first message carrying snap: one value for
	// all of them, so transports convert and render it once.
	first *Update
}

func newVersion(snap *Snapshot) *version {
	return &version{snap: snap, first: &Update{EventID: snap.EventID, Cursor: snap.Cursor, Snapshot: snap,
		Seats: []Seat{}, GeneralAdmission: []GA{}}}
}

// Snapshot returns the event's seat map from its projection. Its Cursor is
// a stream position it holds every change up to.
func (s *Service) Snapshot(ctx context.Context, eventID string) (*Snapshot, error) {
	if s == nil {
		return nil, fmt.Errorf("seat map not configured: %w", apperr.ErrServiceUnavailable)
	}
	v, err := s.snapshot(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return v.snap, nil
}

func (s *Service) snapshot(ctx context.Context, eventID string) (*version, error) {
	p := s.projection(eventID)
	now := time.Now()
	p.used.Store(now.UnixNano())
	if v := s.current(p, now); v != nil {
		return v, nil
	}
	s.startFeed()
	// One refresh per event at a time, however many viewers ask.
	ch := s.sf.DoChan(eventID, func() (any, error) {
		// Not the first caller's ctx: the others wait on this refresh too.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return s.refresh(lctx, eventID, p)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*version), nil
	}
}

// current is p's version if it is served without a refresh: brought up to
// date within Refresh, or not named by the change feed since it last read
// its stream (so as current as a read of the stream would make it;
// feed.go); nil otherwise.
func (s *Service) current(p *projection, now time.Time) *version {
	v := p.cur.Load()
	if v == nil {
		return nil
	}
	if now.Sub(time.Unix(0, p.checked.Load())) < s.cfg.Refresh {
		return v
	}
	// fedAt before dirty: the marks of the feed read it stands for are
	// visible after it.
	if at, ok := s.fedAt(now); ok && !p.dirty.Load() && now.UnixNano() < p.reloadAt.Load() {
		p.checked.Store(max(p.checked.Load(), at.UnixNano()))
		return v
	}
	return nil
}

// projection returns the event's projection, made empty if there is none.
func (s *Service) projection(eventID string) *projection {
	s.projM.Lock()
	defer s.projM.Unlock()
	p := s.projs[eventID]
	if p == nil {
		if len(s.projs) >= maxProjections {
			s.evictOldest(nil)
		}
		p = &projection{}
		s.projs[eventID] = p
	}
	return p
}

// evictSample is how many projections evictOldest compares.
const evictSample = 16

// evictOldest drops the least recently used of evictSample projections but
// keep (projM held): an approximate LRU, as Redis evicts keys. Go starts a
// map's iteration at a random place, so the sample costs the same however
// many events are held, and the one dropped is older than nearly all the
// others. (The exact oldest was a scan of every projection under projM,
// the lock every snapshot takes: with 20,000 events browsed, a tenth of the
// API's CPU went there, and every page waited on it.)
func (s *Service) evictOldest(keep *projection) {
	var oldest string
	var oldestUsed int64
	n := 0
	for k, q := range s.projs {
		if q == keep {
			continue
		}
		if u := q.used.Load(); oldest == "" || u < oldestUsed {
			oldest, oldestUsed = k, u
		}
		if n++; n == evictSample {
			break
		}
	}
	if oldest != "" {
		s.projEntries -= s.projs[oldest].entries
		delete(s.projs, oldest)
	}
}

// loaded records the size of p's new load and drops the least recently
// used projections while they hold more than maxProjectionEntries.
func (s *Service) loaded(eventID string, p *projection, entries int) {
	s.projM.Lock()
	defer s.projM.Unlock()
	if s.projs[eventID] != p {
		return // evicted meanwhile
	}
	s.projEntries += entries - p.entries
	p.entries = entries
	for s.projEntries > maxProjectionEntries && len(s.projs) > 1 {
		s.evictOldest(p)
	}
}

// refresh brings p up to date: from the stream when it can, else from
// Postgres.
func (s *Service) refresh(ctx context.Context, eventID string, p *projection) (*version, error) {
	// Cleared before the stream is read: a change the feed names from now
	// on marks it again. Marked again below unless the projection is
	// brought up to date.
	p.dirty.Store(false)
	current := false
	defer func() {
		if !current {
			p.dirty.Store(true)
		}
	}()
	v := p.cur.Load()
	reason := "first"
	if v != nil {
		reason = "age"
		sinceLoad := time.Since(time.Unix(0, p.loaded.Load()))
		if time.Now().UnixNano() < p.reloadAt.Load() {
			if reason = s.lag.behind(ctx, s); reason == "" {
				next, err := s.advance(ctx, eventID, p, v)
				if err == nil {
					p.checked.Store(time.Now().UnixNano())
					current = true
					return next, nil
				}
				reason = "redis"
				if errors.Is(err, errLost) {
					reason = "lost"
				}
			}
			if sinceLoad < s.cfg.SnapshotTTL {
				p.checked.Store(time.Now().UnixNano())
				return v, nil // loaded from Postgres a moment ago
			}
		}
	}
	snap, err := s.load(ctx, eventID)
	if err != nil {
		if v != nil && errors.Is(err, apperr.ErrServiceUnavailable) && s.fresh(p) {
			return v, nil // Postgres is down: the last good map
		}
		return nil, err
	}
	s.m.loads.WithLabelValues(reason).Inc()
	p.seatIdx = make(map[string]int, len(snap.Seats))
	for i, x := range snap.Seats {
		p.seatIdx[x.SeatID] = i
	}
	p.gaIdx = make(map[string]int, len(snap.GeneralAdmission))
	for i, x := range snap.GeneralAdmission {
		p.gaIdx[x.SectionID] = i
	}
	now := time.Now().UnixNano()
	p.loaded.Store(now)
	p.reloadAt.Store(now + int64(reloadAfter()))
	s.loaded(eventID, p, len(snap.Seats)+len(snap.GeneralAdmission))
	v = newVersion(snap)
	p.cur.Store(v)
	p.checked.Store(now)
	current = true
	return v, nil
}

// fresh reports whether p was brought up to date within store.StaleFor.
func (s *Service) fresh(p *projection) bool {
	return p.cur.Load() != nil && time.Since(time.Unix(0, p.checked.Load())) <= store.StaleFor
}

// advance applies the stream entries after v's cursor: v itself when there
// are none, else a new version. errLost when the stream no longer has them
// all (or names a seat the load did not have).
func (s *Service) advance(ctx context.Context, eventID string, p *projection, v *version) (*version, error) {
	msgs, err := s.since(ctx, eventID, v.snap.Cursor)
	if err != nil || len(msgs) == 0 {
		return v, err
	}
	var m merger
	for _, msg := range msgs {
		m.add(msg, nil, nil)
	}
	snap := &Snapshot{EventID: eventID, Cursor: msgs[len(msgs)-1].ID,
		Seats: v.snap.Seats, GeneralAdmission: v.snap.GeneralAdmission}
	cloned := false
	for _, x := range m.seatList {
		i, ok := p.seatIdx[x.SeatID]
		if !ok {
			return nil, errLost
		}
		if x.Version > snap.Seats[i].Version {
			if !cloned {
				snap.Seats, cloned = slices.Clone(snap.Seats), true
			}
			snap.Seats[i] = x
		}
	}
	cloned = false
	for _, x := range m.gaList {
		i, ok := p.gaIdx[x.SectionID]
		if !ok {
			return nil, errLost
		}
		if x.Version > snap.GeneralAdmission[i].Version {
			if !cloned {
				snap.GeneralAdmission, cloned = slices.Clone(snap.GeneralAdmission), true
			}
			snap.GeneralAdmission[i] = x
		}
	}
	next := newVersion(snap)
	p.cur.Store(next)
	return next, nil
}

// since returns the stream entries after cursor, or errLost.
func (s *Service) since(ctx context.Context, eventID, cursor string) ([]redis.XMessage, error) {
	key := s.streamKey(eventID)
	from := cursor
	if cursor == "0-0" { // loaded before the stream existed
		info, err := s.rdb.XInfoStream(ctx, key).Result()
		if isNoStream(err) {
			return nil, nil // still no change
		}
		if err != nil {
			return nil, fmt.Errorf("seat map stream: %w", err)
		}
		if info.EntriesAdded != info.Length {
			return nil, errLost // trimmed: the first entries are gone
		}
		from = "-"
	}
	var out []redis.XMessage
	for {
		msgs, err := s.rdb.XRangeN(ctx, key, from, "+", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("seat map stream: %w", err)
		}
		n := len(msgs)
		if from == cursor {
			// The cursor's own entry still there means nothing after it
			// was trimmed (trimming removes the oldest first), and that this
			// is the stream it came from (a stream Redis made anew has only
			// later ids).
			if n == 0 || msgs[0].ID != cursor {
				return nil, errLost
			}
			msgs = msgs[1:]
		}
		out = append(out, msgs...)
		if n < 1000 {
			return out, nil
		}
		if len(out) > maxReplay {
			return nil, errLost
		}
		from = "(" + out[len(out)-1].ID
	}
}

// load reads the event's seat map from Postgres. The stream position is
// read first, so the map holds every change up to it; with Redis
// unreachable it is "0-0" (every change the stream will hold is after it).
func (s *Service) load(ctx context.Context, eventID string) (*Snapshot, error) {
	cursor, err := s.Cursor(ctx, eventID)
	if err != nil {
		s.log.Warn("seat map: stream position unknown, snapshot from Postgres only", "event", eventID, "err", err)
		cursor = "0-0"
	}
	type rows struct {
		seats []store.SeatMapSeat
		ga    []store.SeatMapGA
	}
	r, err := store.ReadLive(s.reads(), func(st *store.Store) (rows, error) {
		seats, ga, err := st.SeatMap(ctx, eventID)
		return rows{seats, ga}, err
	})
	if err != nil {
		return nil, err
	}
	seats, ga := r.seats, r.ga
	snap := &Snapshot{EventID: eventID, Cursor: cursor, Seats: make([]Seat, len(seats)), GeneralAdmission: make([]GA, len(ga))}
	for i, x := range seats {
		snap.Seats[i] = Seat(x)
	}
	for i, x := range ga {
		snap.GeneralAdmission[i] = GA(x)
	}
	return snap, nil
}

// reads is where snapshots read the inventory (store.Reads.Live).
func (s *Service) reads() *store.Reads {
	if s.cfg.Reads != nil {
		return s.cfg.Reads
	}
	return store.NewReads(s.st, nil, nil, nil)
}

// lastGood is the event's projection if it was up to date within
// store.StaleFor, served when err says Postgres (primary and replica)
// cannot be reached: its cursor is the one it holds every change up to, so
// a subscriber replays every change the stream still holds after it.
func (s *Service) lastGood(err error, eventID string) (*version, bool) {
	if !errors.Is(err, apperr.ErrServiceUnavailable) {
		return nil, false
	}
	s.projM.Lock()
	p := s.projs[eventID]
	s.projM.Unlock()
	if p == nil || !s.fresh(p) {
		return nil, false
	}
	return p.cur.Load(), true
}

// relayLag says, at most once a second, whether the outbox relay is behind.
type relayLag struct {
	mu     sync.Mutex
	at     time.Time
	isLate bool
}

// behind is "relay" when the oldest unpublished outbox row is older than
// MaxRelayLag, else "" (also when Postgres cannot say).
func (l *relayLag) behind(ctx context.Context, s *Service) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.at) >= time.Second {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		lag, err := s.st.OutboxLag(qctx)
		cancel()
		l.at, l.isLate = time.Now(), err == nil && lag > s.cfg.MaxRelayLag
	}
	if l.isLate {
		return "relay"
	}
	return ""
}

// MarshalJSON is the snapshot's JSON, encoded once.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	return Convert(s, func(s *Snapshot) jsonSnapshot {
		b, err := json.Marshal((*plainSnapshot)(s))
		if err != nil { // plain structs: cannot happen
			panic(err)
		}
		return b
	}), nil
}

type (
	plainSnapshot Snapshot // without MarshalJSON
	jsonSnapshot  []byte   // the memo's key for the JSON encoding
)

// Convert returns conv(s), computed once per snapshot and result type:
// conv must be the same function wherever the type T is used, and its
// result must not be modified.
func Convert[T any](s *Snapshot, conv func(*Snapshot) T) T {
	return memoized(&s.memo, func() T { return conv(s) })
}

// memoized returns m's value for the type T, computing it with conv once.
func memoized[T any](m *sync.Map, conv func() T) T {
	key := reflect.TypeFor[T]()
	if v, ok := m.Load(key); ok {
		return v.(T)
	}
	v, _ := m.LoadOrStore(key, conv())
	return v.(T)
}

// Counts are an event's units by state as its live map has them: what its
// page shows next to the map (catalog.Service.UseLiveCounts).
type Counts struct{ Available, Held, Sold, Capacity int }

// Counts returns the event's counts from its live map, loading the map as
// Snapshot does (a page that shows both loads it once). ok is false when
// the map cannot tell (a GA entry of a message written before GA carried
// its held, sold and capacity): the caller counts in Postgres.
func (s *Service) Counts(ctx context.Context, eventID string) (c Counts, ok bool, err error) {
	snap, err := s.Snapshot(ctx, eventID)
	if err != nil {
		return Counts{}, false, err
	}
	c, ok = snap.counts()
	return c, ok, nil
}

// CachedCounts returns the counts of a map this instance holds and would
// serve without a refresh (Service.current); false otherwise.
func (s *Service) CachedCounts(eventID string) (Counts, bool) {
	if s == nil {
		return Counts{}, false
	}
	s.projM.Lock()
	p := s.projs[eventID]
	s.projM.Unlock()
	if p == nil {
		return Counts{}, false
	}
	now := time.Now()
	v := s.current(p, now)
	if v == nil {
		return Counts{}, false
	}
	p.used.Store(now.UnixNano())
	return v.snap.counts()
}

type countsMemo struct {
	c  Counts
	ok bool
}

// counts adds up the snapshot's seats and GA sections, once per snapshot.
func (m *Snapshot) counts() (Counts, bool) {
	r := memoized(&m.memo, func() countsMemo {
		r := countsMemo{ok: true}
		for _, x := range m.Seats {
			r.c.Capacity++
			switch x.Status {
			case "AVAILABLE":
				r.c.Available++
			case "HELD":
				r.c.Held++
			case "SOLD":
				r.c.Sold++
			}
		}
		for _, g := range m.GeneralAdmission {
			if g.Capacity < g.Available+g.Held+g.Sold || g.Capacity == 0 && g.Available > 0 {
				r.ok = false
			}
			r.c.Available += g.Available
			r.c.Held += g.Held
			r.c.Sold += g.Sold
			r.c.Capacity += g.Capacity
		}
		return r
	})
	return r.c, r.ok
}

// Warm loads the projections of eventIDs, in that order, with workers
// loads at a time, before the instance takes traffic (app.Warm): a cold
// instance's first views of them are then served from memory like any
// other. It stops at ctx's end, or once the projections fill half of what
// an instance keeps (maxProjections, maxProjectionEntries), so they never
// evict each other or what browsing loads next. It returns how many
// events it loaded; an event that fails to load is left to its first view.
func (s *Service) Warm(ctx context.Context, eventIDs []string, workers int) int {
	if s == nil {
		return 0
	}
	full := func() bool {
		s.projM.Lock()
		defer s.projM.Unlock()
		return len(s.projs) >= maxProjections/2 || s.projEntries >= maxProjectionEntries/2
	}
	ids := make(chan string)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for id := range ids {
				if _, err := s.snapshot(ctx, id); err == nil {
					n.Add(1)
				} else if ctx.Err() == nil {
					s.log.Warn("seat map: warm-up load failed", "event", id, "err", err)
				}
			}
		})
	}
	for _, id := range eventIDs {
		if ctx.Err() != nil || full() {
			break
		}
		select {
		case ids <- id:
		case <-ctx.Done():
		}
	}
	close(ids)
	wg.Wait()
	return int(n.Load())
}
