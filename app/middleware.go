package app

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
)

// MaxBodyBytes is the largest request body accepted (GraphQL documents, REST
// writes, webhooks); larger bodies get 413.
const MaxBodyBytes = 1 << 20

// bodyReadTimeout bounds reading one request body. The server has no global
// ReadTimeout because it would also cut WebSocket and SSE streams.
const bodyReadTimeout = 30 * time.Second

type requestIDKey struct{}

// RequestID returns the request id of ctx (the X-Request-Id of the request,
// or one we made up), or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// wrap applies the HTTP middleware chain, outermost first: request id,
// access log and metrics, panic recovery, body limit, authentication.
func (a *App) wrap(h http.Handler) http.Handler {
	h = notePattern(h)
	h = a.newFairUse().rest(h)
	h = a.authenticate(h)
	h = a.limitStreams(h)
	bodyTimeout := a.BodyReadTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = bodyReadTimeout
	}
	h = limitBody(h, bodyTimeout)
	h = a.limitBytes(h)
	h = a.recoverPanics(h)
	h = a.observe(h)
	h = securityHeaders(h)
	return withRequestID(h)
}

// withRequestID takes a sane X-Request-Id from the client or makes one, and
// echoes it on the response.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = uuid.NewString()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// observe writes one structured access-log line per request and records the
// request duration histogram (labelled with the mux pattern, not the raw
// path, to keep the label set small).
func (a *App) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		d := time.Since(start)
		route := rec.route
		if route == "" {
			route = "unmatched"
		}
		code := strconv.Itoa(rec.status)
		if rec.hijacked {
			code = "101"
		}
		a.platform.httpDuration.WithLabelValues(metricMethod(r.Method), route, code).Observe(d.Seconds())
		attrs := []slog.Attr{
			slog.String("request_id", RequestID(r.Context())),
			slog.String("method", truncate(r.Method, 16)),
			slog.String("path", truncate(r.URL.Path, 256)),
			slog.String("route", route),
			slog.String("status", code),
			slog.Int64("bytes", rec.bytes),
			slog.Duration("duration", d),
			slog.String("remote", r.RemoteAddr),
		}
		if rec.user != "" {
			attrs = append(attrs, slog.String("user", rec.user))
		}
		a.Log.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
	})
}

// recoverPanics turns a handler panic into a logged 500. http.ErrAbortHandler
// keeps its meaning (abort the response silently).
func (a *App) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			a.Log.ErrorContext(r.Context(), "panic serving request",
				"request_id", RequestID(r.Context()), "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if rec, ok := w.(*recorder); ok && rec.wroteHeader {
				return
			}
			apperr.WriteHTTPCode(w, r, http.StatusInternalServerError, "INTERNAL", "internal error", nil)
		}()
		next.ServeHTTP(w, r)
	})
}

// limitBody reads bodies up to MaxBodyBytes in full before the handler runs,
// so an oversized body is refused with a clean 413 whether or not it
// announced its length, and a slow sender is cut after timeout: it gets
// a 400 with Connection: close and the connection ends (the read deadline
// stays in the past, so net/http does not wait for the rest of the body).
func limitBody(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only a real WebSocket handshake is left alone (it has no body);
		// any other request with an Upgrade header is read and limited.
		if r.Body == nil || r.Body == http.NoBody || websocket.IsWebSocketUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > MaxBodyBytes {
			tooLarge(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body, err := readAll(r.Body, r.ContentLength)
		if err != nil {
			w.Header().Set("Connection", "close")
			apperr.WriteHTTPCode(w, r, http.StatusBadRequest, "BAD_USER_INPUT", "could not read the request body in time", nil)
			_ = rc.Flush()
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		if len(body) > MaxBodyBytes {
			tooLarge(w, r)
			return
		}
		r.Body = newReadBody(body) // app/prescan.go scans these bytes
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// readAll reads at most MaxBodyBytes+1 bytes of body, into one buffer of
// the announced length when there is one (io.ReadAll's doubling would
// allocate about twice the body).
func readAll(body io.Reader, length int64) ([]byte, error) {
	if length < 0 || length > MaxBodyBytes {
		return io.ReadAll(io.LimitReader(body, MaxBodyBytes+1))
	}
	buf := bytes.NewBuffer(make([]byte, 0, length+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(body, MaxBodyBytes+1))
	return buf.Bytes(), err
}

func tooLarge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	apperr.WriteHTTPCode(w, r, http.StatusRequestEntityTooLarge, "BAD_USER_INPUT",
		fmt.Sprintf("request body too large (limit %d bytes)", MaxBodyBytes), nil)
}

// authenticate applies auth.Verifier.Middleware to the API paths (/graphql
// and /api/); health, metrics and webhooks ignore Authorization.
func (a *App) authenticate(next http.Handler) http.Handler {
	withAuth := a.Auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := auth.UserFrom(r.Context()); ok {
			if rec := findRecorder(w); rec != nil {
				rec.user = u.ID
			}
		}
		next.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/graphql" || strings.HasPrefix(r.URL.Path, "/api/") {
			withAuth.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recorder remembers the status and size of a response. It passes Flush
// (SSE) and Hijack (WebSocket) through, and Unwrap for
// http.ResponseController.
type recorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
	hijacked    bool
	user        string // the authenticated caller, for the access log
	route       string // the mux pattern that served the request
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	r.wroteHeader = true
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil {
		r.hijacked = true
	}
	return c, rw, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// findRecorder digs the access log's recorder out of w, so inner handlers can
// tell it what only they see (the caller, the mux pattern).
func findRecorder(w http.ResponseWriter) *recorder {
	for {
		switch rw := w.(type) {
		case *recorder:
			return rw
		case interface{ Unwrap() http.ResponseWriter }:
			w = rw.Unwrap()
		default:
			return nil
		}
	}
}

// notePattern records the ServeMux pattern (set on the request the mux
// receives, which is not the one the outer middleware holds).
func notePattern(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if rec := findRecorder(w); rec != nil {
			rec.route = r.Pattern
		}
	})
}
