// Package seatmap is the live seat map: it publishes committed inventory
// changes (from the outbox relay) to Redis, and fans them out to the viewers
// connected to this instance.
//
// Redis holds, per event, a capped stream seatmap:{eventId} (XADD MAXLEN ~)
// whose entry ids are the cursors clients resume from, and a pub/sub channel
// that only says "the stream grew". Each instance keeps one hub per event
// with local viewers: the hub listens on that channel (all hubs share one
// Redis pub/sub connection), reads the new stream entries at most once per
// coalescing window, merges them (latest version per seat and GA section
// wins) and hands the one resulting frame to every local subscriber.
//
// Every seat and GA section carries a version that only grows; whoever
// applies updates (the hub, the browser, View) ignores one that is not newer,
// so a redelivered or replayed change is harmless.
package seatmap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/store"
)

// Seat is the state of one seat of an event: the seat of an
// outbox.InventoryChange, one type from the message to the stream.
type Seat = outbox.ChangedSeat

// GA is the state of one general-admission section of an event.
type GA struct {
	SectionID string `json:"sectionId"`
	Available int    `json:"available"`
	Version   int64  `json:"version"`
	// Held, Sold and Capacity complete the section's counts (the event's
	// availability on its page, Counts); absent from messages of before.
	Held     int `json:"held"`
	Sold     int `json:"sold"`
	Capacity int `json:"capacity"`
}

// Snapshot is the whole seat map of an event. Cursor is the stream position
// read before the map was: every change after it is in the stream.
// A Snapshot is shared (every viewer of a projection's version gets the same
// one): never modify one.
type Snapshot struct {
	EventID          string `json:"eventId"`
	Cursor           string `json:"cursor"`
	Seats            []Seat `json:"seats"`
	GeneralAdmission []GA   `json:"generalAdmission"`

	// memo holds the snapshot's encodings (JSON, each transport's type),
	// computed once and shared by every request it answers.
	memo sync.Map // reflect.Type -> converted value
}

// Update is one message to a subscriber: changes up to Cursor, or (first
// message) a Snapshot that replaces the client's map. Shared between
// subscribers: never modify one.
type Update struct {
	EventID          string    `json:"eventId"`
	Cursor           string    `json:"cursor"`
	Snapshot         *Snapshot `json:"snapshot,omitempty"`
	Seats            []Seat    `json:"seats"`
	GeneralAdmission []GA      `json:"generalAdmission"`

	// memo holds the update converted for each transport's type, computed
	// once and shared by every subscriber the update fans out to.
	memo sync.Map // reflect.Type -> converted value
}

// Config tunes a Service; zero values take the defaults.
type Config struct {
	// Prefix is prepended to every Redis key and channel (tests use one each).
	Prefix string
	// MaxLen caps each event's stream, approximately (default 10000 entries).
	MaxLen int64
	// Coalesce is the shortest time between two frames of a hub (default
	// 100ms): a change after a quiet spell is sent at once, the changes
	// that follow it within the window go out together at the window's end.
	Coalesce time.Duration
	// Buffer is the frames a subscriber may have pending before it is cut
	// off as too slow (default 32).
	Buffer int
	// Busy, if set, reports that the transports are still writing earlier
	// frames (wsgorilla.Busy). A hub then holds its next frame back, up to
	// MaxCoalesce, so that under load the changes go out in fewer, larger
	// frames instead of piling up behind one another: what a frame costs
	// is its writes to every subscriber, nearly whatever it carries.
	Busy func() bool
	// MaxCoalesce bounds how long Busy may hold a frame back (default 1s).
	MaxCoalesce time.Duration
	// Reads, if set, is where snapshots read the inventory (store.Reads.Live:
	// the primary while it answers, else the replica); nil reads the store
	// given to New.
	Reads *store.Reads
	// Refresh is how long a projection's snapshot is served before the
	// stream is read again for newer changes (default 100ms).
	Refresh time.Duration
	// SnapshotTTL is how long a snapshot loaded from Postgres is served
	// while the projection cannot be advanced from the stream (the relay is
	// behind, or Redis is unreachable) (default 1s).
	SnapshotTTL time.Duration
	// MaxRelayLag is the age of the oldest unpublished outbox row beyond
	// which the relay counts as behind, and snapshots are reloaded from
	// Postgres instead of advanced from the stream (default 2s).
	MaxRelayLag time.Duration
	// Keepalive is the SSE comment interval (default 15s).
	Keepalive time.Duration
	// CheckOrigin decides whether a browser Origin may open the SSE stream;
	// nil allows any.
	CheckOrigin func(r *http.Request) bool
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	Log        *slog.Logger
}

// Service publishes seat map changes and serves snapshots and subscriptions.
type Service struct {
	rdb redis.UniversalClient
	st  *store.Store
	cfg Config
	log *slog.Logger
	m   metrics

	mu   sync.Mutex
	hubs map[string]*hub

	sf    singleflight.Group
	projM sync.Mutex
	projs map[string]*projection
	// projEntries is the seats and GA sections the projections hold.
	projEntries int
	lag         relayLag
	feed        feed
}

// New returns a Service. Close it to release its pub/sub connection.
func New(rdb redis.UniversalClient, st *store.Store, cfg Config) *Service {
	if cfg.MaxLen <= 0 {
		cfg.MaxLen = 10000
	}
	if cfg.Coalesce <= 0 {
		cfg.Coalesce = 100 * time.Millisecond
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 32
	}
	if cfg.MaxCoalesce <= 0 {
		cfg.MaxCoalesce = time.Second
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 100 * time.Millisecond
	}
	if cfg.SnapshotTTL <= 0 {
		cfg.SnapshotTTL = time.Second
	}
	if cfg.MaxRelayLag <= 0 {
		cfg.MaxRelayLag = 2 * time.Second
	}
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = 15 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Service{
		rdb: rdb, st: st, cfg: cfg, log: cfg.Log, m: newMetrics(cfg.Registerer),
		hubs:  map[string]*hub{},
		projs: map[string]*projection{},
	}
	s.feed.stop, s.feed.done = make(chan struct{}), make(chan struct{})
	return s
}

// Close stops every hub (their subscribers' channels are closed), the
// pub/sub connection and the change feed's reader.
func (s *Service) Close() error {
	s.closeFeed()
	s.mu.Lock()
	hubs := s.hubs
	s.hubs = map[string]*hub{}
	s.mu.Unlock()
	for _, h := range hubs {
		h.shutdown()
	}
	return nil
}

// The event's stream and its (sharded) notification channel share the
// hash tag {eventID}: on Redis Cluster both live on the node of the
// event's slot, with its leases and queue.
func (s *Service) streamKey(eventID string) string { return s.cfg.Prefix + "seatmap:{" + eventID + "}" }
func (s *Service) channel(eventID string) string   { return s.cfg.Prefix + "seatmap:n:{" + eventID + "}" }

// checkEvent validates the id and that the event exists.
func (s *Service) checkEvent(ctx context.Context, eventID string) error {
	if _, err := uuid.Parse(eventID); err != nil {
		return apperr.Invalid("eventId", "not a valid id")
	}
	ok, err := store.ReadLive(s.reads(), func(st *store.Store) (bool, error) { return st.SeatMapEventExists(ctx, eventID) })
	if err != nil {
		if _, found := s.lastGood(err, eventID); found {
			return nil // seen while Postgres answered
		}
		return err
	}
	if !ok {
		return fmt.Errorf("seat map: event %s: %w", eventID, apperr.ErrNotFound)
	}
	return nil
}

// Cursor returns the event's current stream position ("0-0" before any
// change): a snapshot taken after reading it misses nothing that follows it.
func (s *Service) Cursor(ctx context.Context, eventID string) (string, error) {
	info, err := s.rdb.XInfoStream(ctx, s.streamKey(eventID)).Result()
	if isNoStream(err) {
		return "0-0", nil
	}
	if err != nil {
		return "", fmt.Errorf("seat map cursor: %w", err)
	}
	return info.LastGeneratedID, nil
}

func isNoStream(err error) bool {
	return err != nil && (errors.Is(err, redis.Nil) || strings.Contains(err.Error(), "no such key"))
}

// cursorValid reports whether every change after cursor is still in the
// stream, so that replaying from it misses nothing.
func (s *Service) cursorValid(ctx context.Context, eventID, cursor string) (bool, error) {
	if _, ok := parseID(cursor); !ok {
		return false, nil
	}
	key := s.streamKey(eventID)
	info, err := s.rdb.XInfoStream(ctx, key).Result()
	if isNoStream(err) {
		return false, nil // Redis lost the history (or never had it)
	}
	if err != nil {
		return false, fmt.Errorf("seat map cursor: %w", err)
	}
	switch c := compareID(cursor, info.LastGeneratedID); {
	case c > 0:
		return false, nil // from the future: not this stream's
	case c == 0:
		return true, nil // nothing missed
	case cursor == "0-0" && info.EntriesAdded == info.Length:
		// Taken before the stream existed, and the stream still holds every
		// entry it ever had: the common first change after a page load
		// replays instead of sending every viewer a snapshot. (Only a
		// second loss of the stream between the page load and the resume
		// could hide a change here.)
		return true, nil
	}
	// Trimming removes the oldest entries only: if the cursor's own entry is
	// still there, so is everything after it. An untrimmed stream is not
	// enough for a real cursor: after Redis lost the stream (a restart), the
	// relay's next publish starts a new one whose ids are all later than the
	// cursor, and the changes published in between are gone.
	msgs, err := s.rdb.XRangeN(ctx, key, cursor, cursor, 1).Result()
	if err != nil {
		return false, fmt.Errorf("seat map cursor: %w", err)
	}
	return len(msgs) == 1, nil
}

// parseID splits a stream id "ms-seq".
func parseID(id string) ([2]uint64, bool) {
	ms, seq, ok := strings.Cut(id, "-")
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	return [2]uint64{a, b}, ok && err1 == nil && err2 == nil
}

// compareID orders two valid stream ids.
func compareID(a, b string) int {
	x, _ := parseID(a)
	y, _ := parseID(b)
	for i := range x {
		if x[i] != y[i] {
			if x[i] < y[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
