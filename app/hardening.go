package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/redisstore"
)

// MaxStreamsPerAddress caps the open WebSocket and SSE connections of one
// client address (with ABUSE_LIMITS on): one more is answered 429
// RATE_LIMITED. Generous, since fans behind one NAT share an address.
const MaxStreamsPerAddress = 200

// streamLimiter counts the open streams of each client address.
type streamLimiter struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

func newStreamLimiter(max int) *streamLimiter {
	return &streamLimiter{max: max, open: map[string]int{}}
}

// acquire takes a slot of addr; release gives it back (once).
func (l *streamLimiter) acquire(addr string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open[addr] >= l.max {
		return nil, false
	}
	l.open[addr]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[addr]--; l.open[addr] <= 0 {
				delete(l.open, addr)
			}
		})
	}, true
}

// streamSlot is the slot of a streaming request, in its context: a
// WebSocket transport that keeps the connection after the handler returns
// takes it over (keepStreamSlot) and releases it when the connection ends.
type streamSlot struct {
	release func()
	kept    atomic.Bool
}

type streamSlotKey struct{}

// keepStreamSlot is wsgorilla.Transport.Detach: the slot of r's request is
// released when the WebSocket closes, not when its handler returns.
func keepStreamSlot(r *http.Request) func() {
	s, _ := r.Context().Value(streamSlotKey{}).(*streamSlot)
	if s == nil {
		return func() {}
	}
	s.kept.Store(true)
	return s.release
}

func isStream(r *http.Request) bool {
	return websocket.IsWebSocketUpgrade(r) || strings.Contains(r.Header.Get("Accept"), "text/event-stream") ||
		strings.HasSuffix(r.URL.Path, "/seatmap/stream")
}

// limitStreams applies MaxStreamsPerAddress to WebSocket and SSE requests.
func (a *App) limitStreams(next http.Handler) http.Handler {
	if !a.Cfg.AbuseLimits {
		return next
	}
	l := newStreamLimiter(MaxStreamsPerAddress)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			next.ServeHTTP(w, r)
			return
		}
		release, ok := l.acquire(queue.ClientAddr(r.Context()))
		if !ok {
			apperr.WriteHTTPCode(w, r, http.StatusTooManyRequests, "RATE_LIMITED",
				fmt.Sprintf("at most %d open streams per client address", MaxStreamsPerAddress),
				map[string]any{"retryAfterSeconds": 30, "limit": MaxStreamsPerAddress})
			return
		}
		s := &streamSlot{release: release}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), streamSlotKey{}, s)))
		if !s.kept.Load() {
			release()
		}
	})
}

// metricMethod folds the request method into a fixed set of label values.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// securityHeaders sets nosniff on every response (the web app and the
// Playground set their own Content-Security-Policy, frame-ancestors 'none').
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// Request bytes per client address (with ABUSE_LIMITS on): the cost of
// refusing a hostile document grows with its size (decoding, lexing), so
// each address has a budget of body and query-string bytes, refilled at
// BytesPerAddressRate up to BytesPerAddressBurst; a request over it gets
// 429 RATE_LIMITED before its body is read. A fan's requests are a few
// hundred bytes; one maximal 1 MiB body always fits. Shared by every
// instance through Redis (GCRA, as FairUse; a flood spread over the
// instances meets one budget); while Redis does not answer, each instance
// keeps the budget itself. Webhooks are not counted.
const (
	BytesPerAddressRate  = 256 << 10 // per second
	BytesPerAddressBurst = MaxBodyBytes + 64<<10
)

// byteBudget is the budget of each address: in Redis, or locally (local)
// while Redis does not answer (for a second after a failure).
type byteBudget struct {
	rl        *redisstore.RateLimiter // nil: local only
	redisDown atomic.Int64            // unix nanoseconds until which Redis is not asked
	local     localBytes
}

var bytesLimit = redisstore.Limit{Rate: BytesPerAddressRate, Burst: BytesPerAddressBurst}

// spend takes n bytes from addr's budget; wait > 0 means refused: how long
// until n bytes are available.
func (b *byteBudget) spend(ctx context.Context, addr string, n int64, now time.Time) time.Duration {
	if b.rl != nil && now.UnixNano() >= b.redisDown.Load() {
		rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		wait, err := b.rl.AllowN(rctx, "bytes:a:"+addr, bytesLimit, n, now)
		if err == nil {
			return wait
		}
		b.redisDown.Store(now.Add(time.Second).UnixNano())
	}
	return b.local.spend(addr, n, now)
}

// localBytes is one instance's token buckets of request bytes.
type localBytes struct {
	mu      sync.Mutex
	buckets map[string]*bytesBucket
	sweep   time.Time
}

type bytesBucket struct {
	level float64 // bytes available
	at    time.Time
}

// spend takes n bytes from addr's budget; wait > 0 means refused (and
// nothing taken): how long until n bytes are available.
func (b *localBytes) spend(addr string, n int64, now time.Time) (wait time.Duration) {
	b.mu.Lock()
	if b.buckets == nil {
		b.buckets = map[string]*bytesBucket{}
	}
	defer b.mu.Unlock()
	if now.Sub(b.sweep) > time.Minute { // forget full buckets
		for k, v := range b.buckets {
			if now.Sub(v.at) > 10*time.Second {
				delete(b.buckets, k)
			}
		}
		b.sweep = now
	}
	k := b.buckets[addr]
	if k == nil {
		k = &bytesBucket{level: BytesPerAddressBurst, at: now}
		b.buckets[addr] = k
	}
	k.level = min(BytesPerAddressBurst, k.level+now.Sub(k.at).Seconds()*BytesPerAddressRate)
	k.at = now
	need := float64(min(n, BytesPerAddressBurst))
	if k.level < need {
		return time.Duration((need - k.level) / BytesPerAddressRate * float64(time.Second))
	}
	k.level -= need
	return 0
}

// limitBytes applies the byte budget to /graphql and /api requests.
func (a *App) limitBytes(next http.Handler) http.Handler {
	if !a.Cfg.AbuseLimits {
		return next
	}
	b := &byteBudget{}
	if a.Redis != nil {
		b.rl = redisstore.NewRateLimiter(a.Redis, a.Cfg.SeatMapRedisPrefix)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/graphql" && !strings.HasPrefix(r.URL.Path, "/api/") {
			next.ServeHTTP(w, r)
			return
		}
		n := int64(len(r.URL.RawQuery))
		switch {
		case r.ContentLength > MaxBodyBytes: // 413 without reading it
		case r.ContentLength >= 0:
			n += r.ContentLength
		default: // chunked: its length is not known before reading it
			n += 64 << 10
		}
		if wait := b.spend(r.Context(), queue.ClientAddr(r.Context()), n, time.Now()); wait > 0 {
			secs := int((wait + time.Second - 1) / time.Second)
			w.Header().Set("Connection", "close") // the unread body is not waited for
			apperr.WriteHTTPCode(w, r, http.StatusTooManyRequests, "RATE_LIMITED",
				"too many request bytes from this address", map[string]any{"retryAfterSeconds": secs})
			return
		}
		next.ServeHTTP(w, r)
	})
}
