package orders

import (
	"context"
	"sync"
	"time"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/store"
)

// updatesEvery is how often the orders streamed by this instance are
// checked for changes.
const updatesEvery = time.Second

// Updates streams the caller's order: its current state at once, then each
// time it (or one of its payments) changes. The orders streamed by this
// instance are checked together, in one query a second (watcher), however
// many streams are open: a sale's buyers waiting for their confirmation
// cost the database one query, not one each. The channel is closed when
// ctx ends. Errors: those of Get.
func (s *Service) Updates(ctx context.Context, user auth.User, orderID string) (<-chan Order, error) {
	o, err := s.Get(ctx, user, orderID)
	if err != nil {
		return nil, err
	}
	orderID = o.ID // as the database writes it, as the watcher reads it
	w := s.watcher.add(orderID)
	out := make(chan Order, 1)
	go func() { // owns out
		defer close(out)
		defer s.watcher.remove(orderID, w)
		last := ""
		for {
			// Fingerprint first, then read: a change in between is sent
			// again on the next wake rather than missed.
			fp, err := s.st.OrderFingerprint(ctx, orderID)
			if err == nil {
				s.watcher.saw(orderID, fp)
			}
			if err == nil && fp != last {
				if o, err := s.Get(ctx, user, orderID); err == nil {
					last = fp
					select {
					case out <- o:
					case <-ctx.Done():
						return
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
		}
	}()
	return out, nil
}

// watcher checks the fingerprints of every order streamed here once per
// updatesEvery and wakes the streams of those that changed. It runs while
// at least one stream is open.
type watcher struct {
	st    *store.Store
	every time.Duration

	mu   sync.Mutex
	subs map[string]map[*watch]struct{} // order id -> its streams
	seen map[string]string              // order id -> fingerprint last seen
	stop context.CancelFunc             // of the running poll, nil when idle
}

// watch is one stream's wake-up: a change is pending while it holds a value.
type watch struct{ wake chan struct{} }

func newWatcher(st *store.Store, every time.Duration) *watcher {
	return &watcher{st: st, every: every, subs: map[string]map[*watch]struct{}{}, seen: map[string]string{}}
}

func (w *watcher) add(orderID string) *watch {
	x := &watch{wake: make(chan struct{}, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs[orderID] == nil {
		w.subs[orderID] = map[*watch]struct{}{}
	}
	w.subs[orderID][x] = struct{}{}
	if w.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w.stop = cancel
		go w.poll(ctx)
	}
	return x
}

// saw records a stream's own reading of the order's fingerprint, unless
// the poll has one already: the first tick then wakes nobody for a change
// that did not happen. (A stream that read an older value than the one
// recorded is woken by the next change, which it sends with the one
// before; one that read a newer value is woken once for nothing.)
func (w *watcher) saw(orderID, fp string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.seen[orderID]; !ok && w.subs[orderID] != nil {
		w.seen[orderID] = fp
	}
}

func (w *watcher) remove(orderID string, x *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.subs[orderID], x)
	if len(w.subs[orderID]) == 0 {
		delete(w.subs, orderID)
		delete(w.seen, orderID)
	}
	if len(w.subs) == 0 && w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

func (w *watcher) poll(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		ids := make([]string, 0, len(w.subs))
		for id := range w.subs {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		qctx, cancel := context.WithTimeout(ctx, w.every)
		fps, err := w.st.OrderFingerprints(qctx, ids)
		cancel()
		if err != nil {
			continue // the database is away: the streams wait for the next tick
		}
		w.mu.Lock()
		for id, fp := range fps {
			if w.seen[id] == fp || w.subs[id] == nil {
				continue
			}
			w.seen[id] = fp
			for x := range w.subs[id] {
				select {
				case x.wake <- struct{}{}:
				default: // already pending
				}
			}
		}
		w.mu.Unlock()
	}
}
