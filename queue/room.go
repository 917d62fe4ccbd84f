package queue

import (
	"context"
	"time"

	"github.com/ticketing/ticketing/redisstore"
)

// The waiting room's streams (queueUpdates) cost per event, not per
// subscriber. One room per event with streams on this instance reads the
// places of all of them together, one script run per
// redisstore.StatesChunk users, when the queue moved (an admission,
// release or leave here or, through the event's channel, elsewhere) and at
// most once per updateGap; each stream's goroutine only forwards what the
// room decided to send it. With 12,000 fans waiting, a stream that read its
// own place on each wake, with its own timers and deadlines, was a fifth
// of the API's CPU at the sale's peak (bench/RESULTS.md).

// room is one event's streams on this instance.
type room struct {
	streams map[*stream]struct{}
	stop    context.CancelFunc
}

// stream is one queueUpdates subscriber as the room sees it. last, sent,
// held and gone are the room's own (set before the stream enters it).
type stream struct {
	user string
	// out carries the room's latest news for the stream; nil: the user is
	// no longer in the queue.
	out  chan *Ticket
	last Ticket    // the last ticket sent
	sent time.Time // when
	held bool      // read it in the next round (a move held back, or new)
	gone bool
}

// push replaces the stream's pending news with t (the room is the only
// sender, so it never blocks).
func (st *stream) push(t *Ticket) {
	select {
	case st.out <- t:
		return
	default:
	}
	select {
	case <-st.out:
	default:
	}
	st.out <- t
}

// enter adds the stream to its event's room, starting the room with the
// event's first stream.
func (s *Service) enter(eventID string, st *stream) {
	s.roomMu.Lock()
	defer s.roomMu.Unlock()
	r := s.rooms[eventID]
	if r == nil {
		ctx, cancel := context.WithCancel(s.bg)
		r = &room{streams: map[*stream]struct{}{}, stop: cancel}
		s.rooms[eventID] = r
		go s.runRoom(ctx, eventID, r)
	}
	r.streams[st] = struct{}{}
}

// leave takes the stream out of its room, stopping the room with the last.
func (s *Service) leave(eventID string, st *stream) {
	s.roomMu.Lock()
	defer s.roomMu.Unlock()
	r := s.rooms[eventID]
	if r == nil {
		return
	}
	delete(r.streams, st)
	if len(r.streams) == 0 {
		r.stop()
		delete(s.rooms, eventID)
	}
}

// runRoom runs the room's rounds until ctx ends: every stream when the
// queue moved, else only those due (a periodic refresh, a move held back,
// a new stream), at most once per updateGap.
func (s *Service) runRoom(ctx context.Context, eventID string, r *room) {
	tick := time.NewTicker(updateGap)
	defer tick.Stop()
	var last time.Time
	wake := s.waiter(eventID)
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
		if d := updateGap - time.Since(last); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		// The queue moved if the wake-up came, before or during the pause;
		// the next one is armed before the round's read, so a move during
		// the read wakes the next round.
		moved := false
		select {
		case <-wake:
			moved = true
		default:
		}
		wake = s.waiter(eventID)
		last = time.Now()
		s.round(ctx, eventID, r, moved)
	}
}

// round reads the places of the room's streams (all, or only the due ones)
// and pushes to each stream what it should send: a change of status or
// token at once, a new position when positionGap allows it, and anything
// once Config.Refresh passed since the last. While Redis does not answer
// the streams stay silent.
func (s *Service) round(ctx context.Context, eventID string, r *room, all bool) {
	ev, err := s.event(ctx, eventID)
	if err != nil {
		return
	}
	now := time.Now()
	s.roomMu.Lock()
	list := make([]*stream, 0, len(r.streams))
	for st := range r.streams {
		if !st.gone && (all || st.held || now.Sub(st.sent) >= s.cfg.Refresh) {
			list = append(list, st)
		}
	}
	s.roomMu.Unlock()
	if len(list) == 0 {
		return
	}
	users := make([]string, len(list))
	for i, st := range list {
		users[i] = st.user
	}
	at := s.now()
	rctx, cancel := s.turn(ctx)
	places, err := s.store.States(rctx, eventID, users, at)
	cancel()
	if err != nil {
		return
	}
	for i, st := range list {
		t := s.ticket(ev, st.user, places[i], at)
		if t == nil {
			st.gone = true
			st.push(nil)
			continue
		}
		st.held = false
		moved := t.Position != st.last.Position
		if moved && now.Sub(st.sent) < s.positionGap(t) {
			moved, st.held = false, true
		}
		if moved || now.Sub(st.sent) >= s.cfg.Refresh || t.Status != st.last.Status || t.Token != st.last.Token {
			st.last, st.sent = *t, now
			st.push(t)
		}
	}
}

// readGroup coalesces the position reads of one event on this instance
// (queueTicket polls, a stream's first read): the reads that arrive
// together share one script run per redisstore.StatesChunk users. A read
// that finds no run in flight starts one at once; the reads that arrive
// meanwhile go in the next run (a group commit), so a lone read waits for
// nothing.
type readGroup struct {
	pending []*placeRead
	busy    bool
}

type placeRead struct {
	user string
	p    redisstore.Place
	now  time.Time
	err  error
	done chan struct{}
}

// place reads the user's place through the event's read group, and the
// time it was read at.
func (s *Service) place(ctx context.Context, eventID, userID string) (redisstore.Place, time.Time, error) {
	rd := &placeRead{user: userID, done: make(chan struct{})}
	s.readMu.Lock()
	g := s.reads[eventID]
	if g == nil {
		g = &readGroup{}
		s.reads[eventID] = g
	}
	g.pending = append(g.pending, rd)
	start := !g.busy
	g.busy = true
	s.readMu.Unlock()
	if start {
		go s.readPlaces(eventID, g)
	}
	wait, cancel := s.turn(ctx)
	defer cancel()
	select {
	case <-rd.done:
		return rd.p, rd.now, rd.err
	case <-wait.Done():
		return redisstore.Place{}, time.Time{}, wait.Err()
	}
}

// readPlaces runs the group's reads until none is pending. Each run is
// detached from the callers (one leaving does not fail the others) and
// bounded by Config.WaitTimeout.
func (s *Service) readPlaces(eventID string, g *readGroup) {
	for {
		s.readMu.Lock()
		batch := g.pending
		g.pending = nil
		if len(batch) == 0 {
			g.busy = false
			delete(s.reads, eventID)
			s.readMu.Unlock()
			return
		}
		s.readMu.Unlock()
		users := make([]string, len(batch))
		for i, rd := range batch {
			users[i] = rd.user
		}
		now := s.now()
		ctx, cancel := s.turn(s.bg)
		places, err := s.store.States(ctx, eventID, users, now)
		cancel()
		for i, rd := range batch {
			if err != nil {
				rd.err = err
			} else {
				rd.p = places[i]
			}
			rd.now = now
			close(rd.done)
		}
	}
}
