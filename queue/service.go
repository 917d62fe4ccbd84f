// Package queue is the virtual waiting room of queue-protected sales
// (events.queue_required): a per-event queue in Redis, an admission
// controller that admits buyers at a configured rate without exceeding the
// checkout window, and the signed admission tokens that createHold verifies
// offline. The failure policy is in README.md next to this file.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/redisstore"
	"github.com/ticketing/ticketing/store"
)

// EventStore reads events (implemented by *store.Store).
type EventStore interface {
	EventsByIDs(ctx context.Context, ids []string) ([]store.Event, error)
}

// Status is a user's state in a queue (the contract's QueueStatus).
type Status string

// The contract's QueueStatus values.
const (
	Waiting  Status = "WAITING"
	Admitted Status = "ADMITTED"
	Expired  Status = "EXPIRED"
)

// Ticket is a user's place in an event's queue.
type Ticket struct {
	EventID string
	Status  Status
	// Position is the 1-based place while WAITING.
	Position int
	// EstimatedWait is set while WAITING when there is an estimate: before
	// the sale opens, the time to the opening plus Position at the
	// configured rate; after, Position over the measured admission rate
	// (none while nobody has been admitted recently).
	EstimatedWait *time.Duration
	// Token and ExpiresAt are set when ADMITTED.
	Token     string
	ExpiresAt time.Time
}

// TicketView is a ticket as the clients see it (GraphQL QueueTicket, REST
// queue ticket): the fields its status shows, the rest nil.
type TicketView struct {
	// Position and EstimatedWaitSeconds (whole seconds, rounded up; nil
	// without an estimate) while WAITING.
	Position, EstimatedWaitSeconds *int
	// AdmissionToken and AdmissionExpiresAt (UTC) when ADMITTED.
	AdmissionToken     *string
	AdmissionExpiresAt *time.Time
}

// View is the ticket as the clients see it.
func (t *Ticket) View() TicketView {
	var v TicketView
	switch t.Status {
	case Waiting:
		pos := t.Position
		v.Position = &pos
		if t.EstimatedWait != nil {
			s := int((*t.EstimatedWait + time.Second - 1) / time.Second)
			v.EstimatedWaitSeconds = &s
		}
	case Admitted:
		tok, exp := t.Token, t.ExpiresAt.UTC()
		v.AdmissionToken, v.AdmissionExpiresAt = &tok, &exp
	}
	return v
}

// Deps are the Service's collaborators.
type Deps struct {
	Redis  redis.UniversalClient
	Events EventStore
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	Log *slog.Logger
	// Metrics registers the ticketing_queue_* collectors (skipped if nil).
	Metrics prometheus.Registerer
	// Pressure, if set, turns on adaptive admission (controller.go): the
	// checkout path's latency and refusals set the rate, and
	// Config.AdmitRate/Window become ceilings.
	Pressure func() Pressure
}

// Service is the waiting room. It is safe for concurrent use; several
// instances may share one Redis.
type Service struct {
	cfg    Config
	store  *redisstore.QueueStore
	events EventStore
	now    func() time.Time
	log    *slog.Logger
	m      *metrics

	cacheMu sync.Mutex
	cache   map[string]cachedEvent
	// loads makes a burst of joins for an event not in the cache one
	// Postgres read, not one per joiner.
	loads singleflight.Group

	knownMu sync.Mutex
	known   map[string]epochSeen

	watchMu   sync.Mutex
	watch     map[string]chan struct{}
	joinWatch map[string]*joinWatch // streams waiting for a user's join
	// listeners: one sharded subscription per event with streams here.
	listenMu  sync.Mutex
	listeners map[string]*eventListener
	// reads: the position reads in flight, per event (see readGroup);
	// rooms: the events' streams here (see room).
	readMu sync.Mutex
	reads  map[string]*readGroup
	roomMu sync.Mutex
	rooms  map[string]*room
	bg     context.Context
	stop   context.CancelFunc

	redisDown bool // controller log de-duplication; only touched by Run

	pressure func() Pressure
	rateMu   sync.Mutex
	rates    map[string]rateState
}

// joinWatch is closed when the user joins; n counts the streams using it.
type joinWatch struct {
	ch chan struct{}
	n  int
}

type cachedEvent struct {
	ev store.Event
	at time.Time
}

// epochSeen is what the controller last saw of a queue: its epoch and the
// latest admission expiry in it.
type epochSeen struct {
	epoch string
	hold  time.Time
}

// eventCacheTTL bounds how stale the queue's view of an event (queue flag,
// sale window) may be.
const eventCacheTTL = 5 * time.Second

// New returns the waiting room. cfg.SigningKey is required.
func New(d Deps, cfg Config) (*Service, error) {
	if len(cfg.SigningKey) < 16 {
		return nil, errors.New("queue: the signing key must be at least 16 bytes")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	bg, stop := context.WithCancel(context.Background())
	return &Service{
		cfg:       cfg.withDefaults(),
		store:     redisstore.NewQueueStore(d.Redis, cfg.KeyPrefix, redisstore.WithStallTimeout(cfg.withDefaults().StallTimeout)),
		events:    d.Events,
		now:       d.Now,
		log:       d.Log,
		m:         newMetrics(d.Metrics),
		cache:     map[string]cachedEvent{},
		known:     map[string]epochSeen{},
		watch:     map[string]chan struct{}{},
		joinWatch: map[string]*joinWatch{},
		listeners: map[string]*eventListener{},
		reads:     map[string]*readGroup{},
		rooms:     map[string]*room{},
		pressure:  d.Pressure,
		rates:     map[string]rateState{},
		bg:        bg,
		stop:      stop,
	}, nil
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Close stops the Service's background listener (queueUpdates wake-ups) and
// its Redis pipelining; the Service is not usable afterwards.
func (s *Service) Close() { s.stop(); s.store.Close() }

func (s *Service) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.OpTimeout)
}

// turn bounds a join or position read, the calls a crowd makes at once:
// they wait their turn behind each other (up to Config.WaitTimeout, or the
// caller's own deadline) and fail early only when Redis cannot be reached
// (at once) or leaves a call unanswered for Config.StallTimeout (see
// redisstore.WithStallTimeout).
func (s *Service) turn(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.WaitTimeout)
}

func unavailable(op string, err error) error {
	return fmt.Errorf("queue %s: %w", op, errors.Join(apperr.ErrServiceUnavailable, err))
}

// event returns the event, from a short-lived cache.
func (s *Service) event(ctx context.Context, id string) (store.Event, error) {
	if _, err := uuid.Parse(id); err != nil {
		return store.Event{}, apperr.Invalid("eventId", "not a valid id")
	}
	now := s.now()
	s.cacheMu.Lock()
	c, ok := s.cache[id]
	s.cacheMu.Unlock()
	if ok && now.Sub(c.at) < eventCacheTTL {
		return c.ev, nil
	}
	v, err, _ := s.loads.Do(id, func() (any, error) {
		// Detached from the first caller, so its cancellation does not fail
		// the others that share the read.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.WaitTimeout)
		defer cancel()
		evs, err := s.events.EventsByIDs(lctx, []string{id})
		if err != nil {
			return nil, fmt.Errorf("queue: event %s: %w", id, err)
		}
		if len(evs) == 0 {
			return nil, fmt.Errorf("queue: event %s: %w", id, apperr.ErrNotFound)
		}
		s.cacheMu.Lock()
		s.cache[id] = cachedEvent{ev: evs[0], at: now}
		s.cacheMu.Unlock()
		return evs[0], nil
	})
	if err != nil {
		return store.Event{}, err
	}
	return v.(store.Event), nil
}

// Join puts the user in the event's queue, or returns the place it already
// has: rejoining or reconnecting keeps the place (an admission not yet
// expired is returned again; after an unused admission expired, the user
// goes to the back). Before the sale opens the user gets a random place in
// a pre-queue; at opening the pre-queue is moved, in that random order,
// ahead of everyone who comes later (first come, first served).
//
// Failures: BAD_USER_INPUT for an event without a queue, NOT_FOUND,
// SALE_NOT_OPEN after the sale ended or once the event is cancelled, *apperr.RateLimitedError when the
// user or the client address joins too often, and
// apperr.ErrServiceUnavailable (within Config.OpTimeout) when Redis does
// not answer: no one is admitted while the queue is unavailable.
func (s *Service) Join(ctx context.Context, eventID, userID, clientAddr string) (Ticket, error) {
	if userID == "" {
		return Ticket{}, apperr.ErrUnauthenticated
	}
	ev, err := s.event(ctx, eventID)
	if err != nil {
		return Ticket{}, err
	}
	if !ev.QueueRequired {
		return Ticket{}, apperr.Invalid("eventId", "this event has no virtual queue; hold seats directly")
	}
	now := s.now()
	if ended(ev, now) {
		return Ticket{}, fmt.Errorf("queue join: %w", apperr.ErrSaleNotOpen)
	}
	octx, cancel := s.turn(ctx)
	defer cancel()
	p, err := s.store.Join(octx, redisstore.JoinRequest{
		EventID: eventID, UserID: userID, Addr: clientAddr,
		Now: now, SaleStart: ev.SaleStartsAt,
		Epoch:   uuid.NewString(),
		UserLim: redisstore.Limit{Rate: s.cfg.JoinUserRate, Burst: s.cfg.JoinUserBurst},
		AddrLim: redisstore.Limit{Rate: s.cfg.JoinAddrRate, Burst: s.cfg.JoinAddrBurst},
	})
	var rl *redisstore.RateLimitedError
	switch {
	case errors.As(err, &rl):
		s.m.joins.WithLabelValues("rate_limited").Inc()
		return Ticket{}, &apperr.RateLimitedError{RetryAfter: rl.RetryAfter}
	case err != nil:
		s.m.joins.WithLabelValues("unavailable").Inc()
		return Ticket{}, unavailable("join", err)
	}
	t := s.ticket(ev, userID, p, now)
	if t == nil { // the join script always places the user
		return Ticket{}, fmt.Errorf("queue join: user not placed (state %d)", p.State)
	}
	s.m.joins.WithLabelValues("ok").Inc()
	s.joinedHere(eventID, userID)
	return *t, nil
}

// ended: the sale is over (past saleEndsAt, or the event cancelled), the
// rule of store.SaleStatus.
func ended(ev store.Event, now time.Time) bool {
	return store.SaleStatus(now, ev.SaleStartsAt, ev.SaleEndsAt, ev.CancelledAt, 0, 0) == store.SaleEnded
}

// EndEvent ends a cancelled event's queue (orders' cancelEvent calls it):
// its places and admissions are deleted, so nobody more is admitted and an
// admission token given is good for nothing (holds of a cancelled event
// are refused anyway); this instance forgets its view of the event (joins
// are refused at once here, within eventCacheTTL elsewhere); and every
// queueUpdates stream, on any instance, is woken and sends a last EXPIRED
// ticket before it ends.
func (s *Service) EndEvent(ctx context.Context, eventID string) error {
	s.forget(eventID)
	octx, cancel := s.op(ctx)
	defer cancel()
	if err := s.store.End(octx, eventID); err != nil {
		return unavailable("end", err)
	}
	s.changed(octx, eventID)
	return nil
}

// forget drops the cached view of an event.
func (s *Service) forget(eventID string) {
	s.cacheMu.Lock()
	delete(s.cache, eventID)
	s.cacheMu.Unlock()
}

// Ticket returns the user's place in the event's queue, or nil when the user
// is not in it (or the event has no queue). ErrServiceUnavailable when Redis
// does not answer.
func (s *Service) Ticket(ctx context.Context, eventID, userID string) (*Ticket, error) {
	ev, err := s.event(ctx, eventID)
	if err != nil || !ev.QueueRequired {
		return nil, err
	}
	p, now, err := s.place(ctx, eventID, userID)
	if err != nil {
		return nil, unavailable("ticket", err)
	}
	return s.ticket(ev, userID, p, now), nil
}

func (s *Service) ticket(ev store.Event, userID string, p redisstore.Place, now time.Time) *Ticket {
	t := &Ticket{EventID: ev.ID}
	switch {
	case p.State == redisstore.QueueNone:
		return nil
	case p.State == redisstore.QueueExpired || ev.CancelledAt != nil:
		t.Status = Expired
	case p.State == redisstore.QueueAdmitted:
		t.Status = Admitted
		t.Token, t.ExpiresAt = s.mint(userID, ev.ID, p.ExpiresAt)
	case p.State == redisstore.QueueWaiting:
		t.Status = Waiting
		t.Position = int(p.Position)
		t.EstimatedWait = s.estimate(ev, p, now)
	}
	return t
}

// estimate is the honest wait: before the opening, the time to it plus the
// position at the configured rate (an upper bound on the real rate); after,
// the position over the measured rate, decayed when the controller has not
// measured lately; nil when nothing was measured.
func (s *Service) estimate(ev store.Event, p redisstore.Place, now time.Time) *time.Duration {
	var d time.Duration
	if now.Before(ev.SaleStartsAt) {
		d = ev.SaleStartsAt.Sub(now) + time.Duration(float64(p.Position)/s.cfg.AdmitRate*float64(time.Second))
	} else {
		rate := p.Rate
		if age := now.Sub(p.RateAt) - 2*s.cfg.Tick; age > 0 {
			rate *= math.Exp(-age.Seconds() / s.cfg.RateTau.Seconds())
		}
		if rate < 1e-3 {
			return nil
		}
		d = time.Duration(float64(p.Position) / rate * float64(time.Second))
	}
	return &d
}

// Leave takes the user out of the event's queue, or gives back an admission
// not used (its slot is free at once; the token itself stays valid until it
// expires, since verification is offline). It reports whether the user was
// in the queue.
func (s *Service) Leave(ctx context.Context, eventID, userID string) (bool, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return false, apperr.Invalid("eventId", "not a valid id")
	}
	octx, cancel := s.op(ctx)
	defer cancel()
	left, err := s.store.Leave(octx, eventID, userID)
	if err != nil {
		return false, unavailable("leave", err)
	}
	if left {
		s.changed(octx, eventID)
	}
	return left, nil
}

// Release frees the user's admission slot at once; the orders engine calls
// it when the buyer's order is confirmed, with the time the order's hold was
// made (under that admission). An admission issued after that one expired
// is left alone. It is a no-op when the user holds no slot (or the event has
// no queue). On error (Redis down) the caller may ignore it: the slot frees
// itself when the admission expires.
func (s *Service) Release(ctx context.Context, eventID, userID string, heldAt time.Time) error {
	octx, cancel := s.op(ctx)
	defer cancel()
	// The hold needed a valid admission, so that admission expires by
	// heldAt + TTL; a later one was issued after it expired, so it expires
	// later than that.
	released, err := s.store.Release(octx, eventID, userID, heldAt.Add(s.cfg.AdmissionTTL))
	if err != nil {
		return unavailable("release", err)
	}
	if released {
		s.changed(octx, eventID)
	}
	return nil
}

// ActiveAdmissions counts the event's admitted buyers whose admission has
// neither expired nor been released.
func (s *Service) ActiveAdmissions(ctx context.Context, eventID string) (int64, error) {
	octx, cancel := s.op(ctx)
	defer cancel()
	n, err := s.store.Active(octx, eventID, s.now())
	if err != nil {
		return 0, unavailable("active", err)
	}
	return n, nil
}

// changed wakes queueUpdates subscribers of the event, here and (through
// the event's sharded Redis channel) on the other instances.
func (s *Service) changed(ctx context.Context, eventID string) {
	s.notify(eventID)
	_ = s.store.Publish(ctx, eventID)
}

func (s *Service) notify(eventID string) {
	s.watchMu.Lock()
	if ch, ok := s.watch[eventID]; ok {
		close(ch)
		delete(s.watch, eventID)
	}
	s.watchMu.Unlock()
}

func (s *Service) waiter(eventID string) <-chan struct{} {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	ch, ok := s.watch[eventID]
	if !ok {
		ch = make(chan struct{})
		s.watch[eventID] = ch
	}
	return ch
}

// eventListener is the relay of one event's channel while streams of the
// event are open here.
type eventListener struct {
	streams int
	stop    context.CancelFunc
}

// listenTo relays the event's movements announced by other instances while
// the caller's stream is open: the first stream of an event subscribes to
// its channel (SSUBSCRIBE: on Redis Cluster, on the node of the event's
// slot), the last one's release unsubscribes. While the subscription is
// down (Redis failing over) streams still refresh every Config.Refresh.
func (s *Service) listenTo(eventID string) (release func()) {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	l := s.listeners[eventID]
	if l == nil {
		ctx, cancel := context.WithCancel(s.bg)
		l = &eventListener{stop: cancel}
		s.listeners[eventID] = l
		go s.relay(ctx, eventID)
	}
	l.streams++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.listenMu.Lock()
			defer s.listenMu.Unlock()
			if l.streams--; l.streams == 0 {
				l.stop()
				delete(s.listeners, eventID)
			}
		})
	}
}

func (s *Service) relay(ctx context.Context, eventID string) {
	ps := s.store.Subscribe(ctx, eventID)
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			s.notify(eventID)
		}
	}
}

// updateGap is the least time between two rounds of an event's room (see
// room.go), so a busy queue does not turn every admission into a read per
// subscriber.
const updateGap = time.Second

// positionGap is the least time between two frames of a stream whose only
// news is a new position: updateGap near the head of the queue, up to
// Config.Refresh far from it (a tenth of the estimated wait: a fan five
// minutes away sees the minutes go down every 30 s, one ten seconds away
// every second). Thousands of waiting fans otherwise each get a frame on
// every admission; a change of status (admitted, expired) is sent at once.
func (s *Service) positionGap(t *Ticket) time.Duration {
	if t.EstimatedWait == nil {
		return updateGap
	}
	return min(max(*t.EstimatedWait/10, updateGap), s.cfg.Refresh)
}

// Updates streams the user's ticket: the current one first, then each
// change (woken by admissions, releases and leaves on any instance), and a
// refresh every Config.Refresh (the estimate moves). A stream opened before
// the user joined waits for the join (woken at once by a join on this
// instance, within a second by one on another) and then starts with the
// ticket the join gave; it ends if no join comes within Config.JoinWait.
// The channel is closed when ctx ends or when the user is no longer in the
// queue (left, released, or lost with a Redis restart: the client
// rejoins); when the event was cancelled, after a last EXPIRED ticket.
// While Redis is down the stream stays open and silent.
// NOT_FOUND for an event without a queue.
func (s *Service) Updates(ctx context.Context, eventID, userID string) (<-chan Ticket, error) {
	ev, err := s.event(ctx, eventID)
	if err != nil {
		return nil, err
	}
	if !ev.QueueRequired {
		return nil, fmt.Errorf("queue updates: the event has no virtual queue: %w", apperr.ErrNotFound)
	}
	joined := s.joinWaiter(eventID, userID)
	first, err := s.Ticket(ctx, eventID, userID)
	if err != nil {
		s.dropJoinWaiter(eventID, userID, joined)
		return nil, err
	}
	release := s.listenTo(eventID)
	ch := make(chan Ticket, 1)
	if first != nil {
		s.dropJoinWaiter(eventID, userID, joined)
		ch <- *first
	}
	go func() {
		defer close(ch)
		defer release()
		if first == nil {
			first = s.awaitJoin(ctx, eventID, userID, joined)
			if first == nil {
				return
			}
			select {
			case ch <- *first:
			case <-ctx.Done():
				return
			}
		}
		// The room reads the stream again in its next round (within
		// updateGap): a change between the first read and now is not lost.
		st := &stream{user: userID, out: make(chan *Ticket, 1), last: *first, sent: time.Now(), held: true}
		s.enter(eventID, st)
		defer s.leave(eventID, st)
		for {
			var t *Ticket
			select {
			case <-ctx.Done():
				return
			case t = <-st.out:
			}
			if t == nil { // left, released, lost, or ended with its event (EndEvent)
				s.forget(eventID)
				if ev, err := s.event(ctx, eventID); err == nil && ev.CancelledAt != nil {
					select {
					case ch <- Ticket{EventID: eventID, Status: Expired}:
					case <-ctx.Done():
					}
				}
				return
			}
			select {
			case ch <- *t:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

// awaitJoin waits until the user is in the queue and returns the ticket;
// nil when ctx ends or no join came within Config.JoinWait.
func (s *Service) awaitJoin(ctx context.Context, eventID, userID string, joined chan struct{}) *Ticket {
	defer func() { s.dropJoinWaiter(eventID, userID, joined) }()
	give := time.NewTimer(s.cfg.JoinWait)
	defer give.Stop()
	poll := time.NewTicker(updateGap)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-give.C:
			return nil
		case <-joined:
			s.dropJoinWaiter(eventID, userID, joined)
			joined = s.joinWaiter(eventID, userID)
		case <-poll.C:
		}
		if t, err := s.Ticket(ctx, eventID, userID); err == nil && t != nil {
			return t
		}
	}
}

// joinWaiter returns a channel closed when the user joins the event's queue
// on this instance.
func (s *Service) joinWaiter(eventID, userID string) chan struct{} {
	k := eventID + "\x00" + userID
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	w, ok := s.joinWatch[k]
	if !ok {
		w = &joinWatch{ch: make(chan struct{})}
		s.joinWatch[k] = w
	}
	w.n++
	return w.ch
}

func (s *Service) dropJoinWaiter(eventID, userID string, ch chan struct{}) {
	k := eventID + "\x00" + userID
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if w, ok := s.joinWatch[k]; ok && w.ch == ch {
		if w.n--; w.n == 0 {
			delete(s.joinWatch, k)
		}
	}
}

// joinedHere wakes the streams waiting for the user's join.
func (s *Service) joinedHere(eventID, userID string) {
	k := eventID + "\x00" + userID
	s.watchMu.Lock()
	if w, ok := s.joinWatch[k]; ok {
		close(w.ch)
		delete(s.joinWatch, k)
	}
	s.watchMu.Unlock()
}

// Run is the admission controller: every Config.Tick it runs AdmitEvent for
// each event with queue activity, until ctx ends. Any number of instances
// may run it at once (each pass is one atomic Redis script); call it once per
// Service. While Redis is down nobody is admitted; the controller logs the
// outage once and retries.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := s.AdmitAll(ctx)
		switch {
		case err != nil && !s.redisDown && ctx.Err() == nil:
			s.redisDown = true
			s.log.Warn("queue: admission controller cannot reach Redis; no admissions until it is back", "err", err)
		case err == nil && s.redisDown:
			s.redisDown = false
			s.log.Info("queue: admission controller reaches Redis again")
		}
	}
}

// AdmitAll runs one admission pass over every event with queue activity.
func (s *Service) AdmitAll(ctx context.Context) error {
	octx, cancel := s.op(ctx)
	ids, err := s.store.Events(octx)
	cancel()
	if err != nil {
		return unavailable("admit", err)
	}
	var first error
	for _, id := range ids {
		if _, err := s.AdmitEvent(ctx, id); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// AdmitEvent runs one admission pass for the event and returns the users it
// admitted, in queue order. It also expires unused admissions and opens the
// queue (shuffled pre-queue first) once the sale has started. If Redis lost
// the queue (a new epoch) while admissions issued before are still valid,
// nobody is admitted until they expire, so the window holds across a Redis
// restart as long as one controller that saw those admissions keeps running.
func (s *Service) AdmitEvent(ctx context.Context, eventID string) ([]string, error) {
	s.knownMu.Lock()
	k := s.known[eventID]
	s.knownMu.Unlock()
	now := s.now()
	octx, cancel := s.op(ctx)
	defer cancel()
	rate, window := s.adaptiveRate(now, eventID, func(p redisstore.RateParams) (redisstore.RateState, error) {
		return s.store.AdjustRate(octx, eventID, p)
	})
	burst := s.cfg.AdmitBurst
	if rate < s.cfg.AdmitRate {
		burst = max(1, int(float64(burst)*rate/s.cfg.AdmitRate))
	}
	res, err := s.store.Admit(octx, eventID, redisstore.AdmitParams{
		Now: now, Rate: rate, Burst: burst, Window: window,
		TTL: s.cfg.AdmissionTTL, Tau: s.cfg.RateTau, KnownEpoch: k.epoch, KnownHold: k.hold,
	})
	if err != nil {
		return nil, unavailable("admit", err)
	}
	if res.Epoch != "" {
		if res.Epoch != k.epoch || res.MaxExpiry.After(k.hold) {
			// A new epoch keeps what the old one still holds: after a
			// second restart within the permits' lifetime, the admissions
			// of the first epoch are still valid and still count.
			hold := res.MaxExpiry
			if k.hold.After(hold) && now.Before(k.hold) {
				hold = k.hold
			}
			k = epochSeen{epoch: res.Epoch, hold: hold}
		}
		s.knownMu.Lock()
		s.known[eventID] = k
		s.knownMu.Unlock()
	}
	s.sawDemand(eventID, res.Waiting > 0)
	if res.Idle {
		s.m.length.DeleteLabelValues(eventID)
		s.m.active.DeleteLabelValues(eventID)
	} else {
		s.m.length.WithLabelValues(eventID).Set(float64(res.Waiting))
		s.m.active.WithLabelValues(eventID).Set(float64(res.Active))
	}
	if n := len(res.Admitted); n > 0 {
		s.m.admissions.WithLabelValues(eventID).Add(float64(n))
		for _, jt := range res.JoinedAt {
			if !jt.IsZero() {
				s.m.wait.Observe(now.Sub(jt).Seconds())
			}
		}
		s.changed(octx, eventID)
	}
	return res.Admitted, nil
}

// String describes the configuration for the start-up log (no secrets).
func (c Config) String() string {
	return "rate=" + strconv.FormatFloat(c.AdmitRate, 'g', -1, 64) + "/s burst=" + strconv.Itoa(c.AdmitBurst) +
		" window=" + strconv.Itoa(c.Window) + " ttl=" + c.AdmissionTTL.String() +
		" adaptive=" + strconv.FormatBool(c.Adaptive)
}
