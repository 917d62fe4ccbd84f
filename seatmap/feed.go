package seatmap

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The change feed spares a loaded projection its stream read when its
// event has not changed. Publish appends, after each batch's stream
// entries are written, one entry naming the batch's events to a capped
// stream seatmap:changed (one key for all events). Each instance reads it
// every Refresh/2 (feed.run) and marks the projections of the events it
// names dirty. A projection that is not dirty, while the feed was read to
// its end less than Refresh ago, has every change the stream has up to that
// read: it is served as it is (Service.snapshot), where it used to read its
// stream (XRANGE or XINFO) every Refresh whether its event changed or not:
// with thousands of events each viewed about once a second, one Redis round
// trip per page (bench/RESULTS.md, 2026-12-04 late night).
//
// Why no change is missed: a feed entry is written after its events'
// stream entries are acknowledged, so a change whose feed entry a read has
// consumed is in its stream before that read ends. A projection clears its
// mark before it reads its stream (refresh); a read of the feed that ends
// before that has its change in the stream read that follows, and one that
// ends after it marks the projection again. A projection made after the
// read that named its event loads its cursor after it. When the feed
// cannot be followed without a gap (trimmed past this instance's position,
// lost by Redis, or Redis unreachable), every projection is marked, and
// while the feed is not read (or does not exist) the projections check
// their streams every Refresh as before.

// feedMaxLen caps the feed, approximately: one entry per relay batch, so
// minutes of a busy sale.
const feedMaxLen = 10000

// feedMinEvery is the shortest interval between two reads of the feed
// (Refresh/2 otherwise). With a Refresh below twice this, the feed is never
// fresh enough to be trusted, and every projection checks its stream as
// before.
const feedMinEvery = 5 * time.Millisecond

func (s *Service) feedKey() string { return s.cfg.Prefix + "seatmap:changed" }

// feed is this instance's reader of the change feed.
type feed struct {
	start, stopped sync.Once
	stop           chan struct{}
	done           chan struct{}
	// pos is the last entry read ("" before the first read, "0-0" while
	// the feed does not exist); run's alone.
	pos string
	// at is the start of the last read that reached the feed's end
	// without a gap, with the relay not behind (unix ns; 0: none).
	at atomic.Int64
}

// fedAt is the time up to which the feed has marked every projection whose
// event changed (zero when it cannot be trusted now).
func (s *Service) fedAt(now time.Time) (time.Time, bool) {
	at := s.feed.at.Load()
	if at == 0 || now.Sub(time.Unix(0, at)) >= s.cfg.Refresh {
		return time.Time{}, false
	}
	return time.Unix(0, at), true
}

// startFeed starts the feed's reader, once; Close stops it.
func (s *Service) startFeed() {
	s.feed.start.Do(func() {
		every := max(s.cfg.Refresh/2, feedMinEvery)
		go s.feed.run(s, every)
	})
}

func (f *feed) run(s *Service, every time.Duration) {
	defer close(f.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), max(every, time.Second))
		ok := f.read(ctx, s)
		if ok && s.lag.behind(ctx, s) != "" {
			ok = false // stale streams: projections go back to Postgres (refresh)
		}
		cancel()
		if ok {
			f.at.Store(start.UnixNano())
		} else {
			f.at.Store(0)
		}
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
	}
}

// read consumes the feed's new entries, marking their events'
// projections; false when it could not (every projection is then marked if
// a gap is possible).
func (f *feed) read(ctx context.Context, s *Service) bool {
	key := s.feedKey()
	if f.pos == "" || f.pos == "0-0" {
		// The first read, after a gap, or while the feed did not exist:
		// start from its end, every projection marked (those made after
		// this read load their cursors after it). A feed that does not
		// exist ("0-0": no relay batch since Redis started, or a relay of
		// a build without the feed) is not trusted: the projections read
		// their streams.
		last, err := s.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
		if err != nil {
			f.pos = ""
			return false
		}
		if f.pos == "" || len(last) > 0 {
			s.markAll()
		}
		if len(last) == 0 {
			f.pos = "0-0"
			return false
		}
		f.pos = last[0].ID
		return true
	}
	for {
		msgs, err := s.rdb.XRangeN(ctx, key, f.pos, "+", 1000).Result()
		if err != nil {
			// Unknown what was missed: the next read starts from the end.
			f.pos = ""
			s.markAll()
			return false
		}
		// pos's own entry still there: nothing after it was trimmed, and
		// this is the feed it came from (one Redis made anew has only later
		// ids).
		if len(msgs) == 0 || msgs[0].ID != f.pos {
			f.pos = ""
			s.markAll()
			return false
		}
		for _, m := range msgs[1:] {
			if ids, _ := m.Values["e"].(string); ids != "" {
				s.markEvents(strings.Split(ids, ","))
			}
		}
		f.pos = msgs[len(msgs)-1].ID
		if len(msgs) < 1000 {
			return true
		}
	}
}

// markEvents marks the projections of the events dirty.
func (s *Service) markEvents(ids []string) {
	s.projM.Lock()
	defer s.projM.Unlock()
	for _, id := range ids {
		if p := s.projs[id]; p != nil {
			p.dirty.Store(true)
		}
	}
}

// markAll marks every projection dirty.
func (s *Service) markAll() {
	s.projM.Lock()
	defer s.projM.Unlock()
	for _, p := range s.projs {
		p.dirty.Store(true)
	}
}

// appendFeed writes the feed entry of events whose stream entries are
// written.
func (s *Service) appendFeed(ctx context.Context, events []string) error {
	return s.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: s.feedKey(), MaxLen: feedMaxLen, Approx: true,
		Values: []any{"e", strings.Join(events, ",")},
	}).Err()
}

// AnnounceFeed writes a feed entry that names no event: the feed exists
// from then on, and is trusted (an absent one is not: read). The relay
// calls it when it starts (app.runRelay), before it publishes anything.
func (s *Service) AnnounceFeed(ctx context.Context) error {
	return s.appendFeed(ctx, nil)
}

// closeFeed stops the feed's reader if it runs (and keeps it from
// starting); a second call returns at once.
func (s *Service) closeFeed() {
	s.feed.start.Do(func() { close(s.feed.done) }) // never started: now it never will
	s.feed.stopped.Do(func() { close(s.feed.stop) })
	<-s.feed.done
}
