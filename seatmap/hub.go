package seatmap

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// safetyPoll re-reads the stream even without a notification (pub/sub
// messages are lost while its connection reconnects).
const safetyPoll = 2 * time.Second

// hub fans one event's stream out to this instance's subscribers.
type hub struct {
	s       *Service
	eventID string
	wake    chan struct{}
	stop    chan struct{}
	ready   chan struct{} // closed once lastID is known (or err set)
	err     error
	// ps is the hub's own sharded subscription (SSUBSCRIBE) to the event's
	// channel: on Redis Cluster it lives on the node of the event's slot.
	ps *redis.PubSub

	mu      sync.Mutex // guards subs, lastID, stopped and the subscribers
	subs    map[*subscriber]struct{}
	lastID  string
	stopped bool

	// Used by the hub goroutine only: the newest version broadcast per seat
	// and GA section, so a redelivered change is not sent again.
	seenSeats, seenGA map[string]int64
}

// subscriber is one viewer. Until live, frames wait in pending (bounded by
// the same buffer) while its catch-up is sent. Guarded by its hub's mu.
type subscriber struct {
	out     sink
	live    bool
	closed  bool
	pending []*Update
}

// sink is where a subscriber's frames go.
type sink interface {
	// send delivers a frame without blocking; false cuts the subscriber off.
	send(*Update) bool
	// close is called once when the subscriber is removed.
	close()
}

// acquire returns the event's hub, started, with a new subscriber registered
// in catch-up mode, and the stream position the hub will broadcast after.
func (s *Service) acquire(ctx context.Context, eventID string, sub *subscriber) (*hub, string, error) {
	var h *hub
	for h == nil {
		s.mu.Lock()
		h = s.hubs[eventID]
		if h == nil {
			h = &hub{
				s: s, eventID: eventID,
				wake: make(chan struct{}, 1), stop: make(chan struct{}), ready: make(chan struct{}),
				subs:      map[*subscriber]struct{}{},
				seenSeats: map[string]int64{}, seenGA: map[string]int64{},
			}
			s.hubs[eventID] = h
			go h.run()
		}
		s.mu.Unlock()
		h.mu.Lock()
		if h.stopped { // its last subscriber just left: make a new one
			h.mu.Unlock()
			h = nil
			continue
		}
		h.subs[sub] = struct{}{}
		s.m.subscribers.Inc()
		h.mu.Unlock()
	}

	select {
	case <-h.ready:
	case <-ctx.Done():
		s.remove(h, sub)
		return nil, "", ctx.Err()
	}
	if h.err != nil {
		s.remove(h, sub)
		return nil, "", h.err
	}
	h.mu.Lock()
	last := h.lastID
	h.mu.Unlock()
	// Frames broadcast from here on are queued in sub.pending; the caller
	// replays up to last, then calls activate.
	return h, last, nil
}

// activate sends the catch-up frames, then what the hub queued meanwhile,
// and switches the subscriber to live delivery.
func (s *Service) activate(h *hub, sub *subscriber, catchUp []*Update) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sub.closed {
		return
	}
	for _, u := range append(catchUp, sub.pending...) {
		if !sub.out.send(u) {
			s.dropLocked(h, sub)
			return
		}
	}
	sub.pending, sub.live = nil, true
}

// deliverLocked hands a frame to a subscriber without ever waiting.
func (s *Service) deliverLocked(h *hub, sub *subscriber, u *Update) {
	switch {
	case sub.closed:
	case !sub.live && len(sub.pending) < s.cfg.Buffer:
		sub.pending = append(sub.pending, u)
	case !sub.live || !sub.out.send(u):
		s.dropLocked(h, sub)
	}
}

// dropLocked cuts off a subscriber that did not keep up: its channel is
// closed so the transport ends the stream and the client resyncs.
func (s *Service) dropLocked(h *hub, sub *subscriber) {
	s.m.dropped.Inc()
	s.removeLocked(h, sub)
}

// remove unregisters a subscriber (its context ended).
func (s *Service) remove(h *hub, sub *subscriber) {
	h.mu.Lock()
	s.removeLocked(h, sub)
	h.mu.Unlock()
}

func (s *Service) removeLocked(h *hub, sub *subscriber) {
	if sub.closed {
		return
	}
	sub.closed = true
	sub.pending = nil
	sub.out.close()
	delete(h.subs, sub)
	s.m.subscribers.Dec()
	if len(h.subs) == 0 && !h.stopped {
		h.stopped = true
		s.mu.Lock()
		if s.hubs[h.eventID] == h {
			delete(s.hubs, h.eventID)
		}
		s.mu.Unlock()
		close(h.stop)
	}
}

// shutdown closes every subscriber of the hub (Service.Close).
func (h *hub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		h.s.removeLocked(h, sub)
	}
}

func (h *hub) run() {
	s := h.s
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := h.start(ctx); err != nil {
		h.err = err
		close(h.ready)
		<-h.stop
		h.unsubscribe()
		return
	}
	close(h.ready)
	defer h.unsubscribe()

	safety := time.NewTicker(safetyPoll)
	defer safety.Stop()
	// At most one frame per Coalesce window: a change after a quiet spell
	// goes out at once, the ones that follow wait for the window's end, and
	// longer (up to MaxCoalesce) while the transports are still writing the
	// previous frames.
	var flush <-chan time.Time
	var last, due time.Time // the last frame; when the pending one was due
	send := func() {
		if now := time.Now(); s.cfg.Busy != nil && s.cfg.Busy() && now.Sub(due) < s.cfg.MaxCoalesce {
			flush = time.After(busyRecheck)
			return
		}
		flush = nil
		last = time.Now()
		h.flush(ctx)
	}
	for {
		select {
		case <-h.stop:
			return
		case <-h.wake:
			if flush == nil {
				due = last.Add(s.cfg.Coalesce)
				if wait := time.Until(due); wait > 0 {
					flush = time.After(wait)
				} else {
					due = time.Now()
					send()
				}
			}
		case <-safety.C:
			if flush == nil {
				due = time.Now()
				send()
			}
		case <-flush:
			send()
		}
	}
}

// busyRecheck is how often a hub holding a frame back looks again.
const busyRecheck = 5 * time.Millisecond

// start subscribes to the event's channel, then reads the stream position
// (in that order, so nothing is missed between the two).
func (h *hub) start(ctx context.Context) error {
	s := h.s
	h.ps = s.rdb.SSubscribe(ctx)
	if err := h.ps.SSubscribe(ctx, s.channel(h.eventID)); err != nil {
		return fmt.Errorf("seat map subscribe: %w", err)
	}
	go h.dispatch(h.ps)
	last, err := s.Cursor(ctx, h.eventID)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.lastID = last
	h.mu.Unlock()
	return nil
}

// unsubscribe closes the hub's subscription.
func (h *hub) unsubscribe() {
	if h.ps != nil {
		_ = h.ps.Close()
	}
}

// dispatch wakes the hub on each notification until ps is closed.
func (h *hub) dispatch(ps *redis.PubSub) {
	for range ps.Channel(redis.WithChannelSize(64)) {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

// flush reads the stream past lastID, merges it into one frame of what is
// newer than already broadcast, and hands it to every subscriber.
func (h *hub) flush(ctx context.Context) {
	s := h.s
	h.mu.Lock()
	from := h.lastID
	h.mu.Unlock()
	var m merger
	entries := 0
	last := from
	for {
		msgs, err := s.rdb.XRangeN(ctx, s.streamKey(h.eventID), "("+last, "+", 1000).Result()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("seat map read", "event", h.eventID, "err", err)
			}
			break
		}
		for _, msg := range msgs {
			m.add(msg, h.seenSeats, h.seenGA)
			last = msg.ID
		}
		entries += len(msgs)
		if len(msgs) < 1000 {
			break
		}
	}
	if last == from {
		return
	}
	u := m.update(h.eventID, last)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastID = last
	if len(u.Seats) == 0 && len(u.GeneralAdmission) == 0 {
		return // only redeliveries
	}
	s.m.frames.Inc()
	s.m.coalesced.Add(float64(entries - 1))
	for sub := range h.subs {
		s.deliverLocked(h, sub, u)
	}
}

// replay merges the stream entries in (from, to] into frames (one per page).
func (s *Service) replay(ctx context.Context, eventID, from, to string) ([]*Update, error) {
	var out []*Update
	for compareID(from, to) < 0 {
		msgs, err := s.rdb.XRangeN(ctx, s.streamKey(eventID), "("+from, to, 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("seat map replay: %w", err)
		}
		if len(msgs) == 0 {
			break
		}
		var m merger
		for _, msg := range msgs {
			m.add(msg, nil, nil)
		}
		from = msgs[len(msgs)-1].ID
		out = append(out, m.update(eventID, from))
	}
	return out, nil
}

// Subscribe streams the event's seat map changes to a channel of conv's
// results until ctx ends. With a valid cursor after, the first messages are
// the changes since it; otherwise (empty, unknown or trimmed cursor) the
// first message carries a Snapshot. The channel is closed when ctx ends, or
// early when the receiver does not keep up (it must then resubscribe with its
// last cursor). conv runs once per update (its result is shared by every
// subscriber with the same T, so it must not depend on the subscriber and its
// result must not be modified).
func Subscribe[T any](ctx context.Context, s *Service, eventID, after string, conv func(*Update) T) (<-chan T, error) {
	ch := make(chan T, s.cfg.Buffer)
	send := func(v T) bool {
		select {
		case ch <- v:
			return true
		default:
			return false
		}
	}
	if err := SubscribeFunc(ctx, s, eventID, after, conv, send, func() { close(ch) }); err != nil {
		return nil, err
	}
	return ch, nil
}

// SubscribeFunc is Subscribe delivering each message by calling send, on
// the hub's goroutine and in order: send must not block, and returns false
// when the receiver cannot take more (it is then cut off). end is called
// once when the subscription ends (ctx ended, cut off, or the service
// closed), after the last send; not if SubscribeFunc returns an error.
func SubscribeFunc[T any](ctx context.Context, s *Service, eventID, after string, conv func(*Update) T, send func(T) bool, end func()) (err error) {
	if err := s.checkEvent(ctx, eventID); err != nil {
		return err
	}
	f := &funcSink[T]{s: s, conv: conv, deliver: send, end: end}
	f.sub.out = f
	defer func() {
		if err == nil {
			f.start()
		}
	}()
	h, last, err := s.acquire(ctx, eventID, &f.sub)
	if err != nil {
		return err
	}
	catchUp, err := s.catchUp(ctx, eventID, after, last)
	if err != nil {
		s.remove(h, &f.sub)
		return err
	}
	s.activate(h, &f.sub, catchUp)
	f.h = h
	context.AfterFunc(ctx, f.remove)
	return nil
}

// funcSink is a SubscribeFunc subscription: one object, since thousands of
// them sit idle.
type funcSink[T any] struct {
	sub     subscriber
	s       *Service
	h       *hub
	conv    func(*Update) T
	deliver func(T) bool
	end     func()

	// end is for a subscription that started: it is called by whichever of
	// start (the set-up succeeded) and close (the subscriber was removed)
	// comes second. A removal while setting up, after which SubscribeFunc
	// returns the error, never calls it.
	steps atomic.Int32
}

func (f *funcSink[T]) send(u *Update) bool { return f.deliver(converted(u, f.conv)) }

func (f *funcSink[T]) close() { f.step() }

// start marks the set-up done.
func (f *funcSink[T]) start() { f.step() }

func (f *funcSink[T]) step() {
	if f.steps.Add(1) == 2 {
		f.end()
	}
}

func (f *funcSink[T]) remove() { f.s.remove(f.h, &f.sub) }

// Subscribers is the number of live subscriptions on this instance.
func (s *Service) Subscribers() int {
	s.mu.Lock()
	hubs := make([]*hub, 0, len(s.hubs))
	for _, h := range s.hubs {
		hubs = append(hubs, h)
	}
	s.mu.Unlock()
	n := 0
	for _, h := range hubs {
		h.mu.Lock()
		n += len(h.subs)
		h.mu.Unlock()
	}
	return n
}

// Buffer is how many messages a subscriber may have waiting before it is
// cut off.
func (s *Service) Buffer() int { return s.cfg.Buffer }

// converted returns conv(u), computed once per update and result type:
// conv must be the same function for every subscriber of one type T.
func converted[T any](u *Update, conv func(*Update) T) T {
	return memoized(&u.memo, func() T { return conv(u) })
}

// catchUp returns what a subscriber needs before the hub's live frames
// (which start after last).
func (s *Service) catchUp(ctx context.Context, eventID, after, last string) ([]*Update, error) {
	if after != "" {
		ok, err := s.cursorValid(ctx, eventID, after)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.replay(ctx, eventID, after, last)
		}
	}
	v, err := s.snapshot(ctx, eventID)
	if err != nil {
		return nil, err
	}
	more, err := s.replay(ctx, eventID, v.snap.Cursor, last)
	if err != nil {
		return nil, err
	}
	return append([]*Update{v.first}, more...), nil
}
