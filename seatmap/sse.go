package seatmap

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/ticketing/ticketing/apperr"
)

// ServeHTTP is the REST stream GET /api/events/{eventId}/seatmap/stream:
// Server-Sent Events whose id is the cursor, so a browser's EventSource
// resumes by itself with Last-Event-ID (or ?after=). Each data line is a
// SeatMapUpdate as JSON. A comment line every Keepalive keeps proxies from
// closing an idle stream. A client that does not keep up gets a "resync"
// event and the stream ends: it reconnects, with its cursor.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" && s.cfg.CheckOrigin != nil && !s.cfg.CheckOrigin(r) {
		apperr.WriteHTTP(w, r, apperr.ErrForbidden)
		return
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	ctx := r.Context()
	ch, err := Subscribe(ctx, s, r.PathValue("eventId"), after, renderSSE)
	if err != nil {
		apperr.WriteHTTP(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// A write that cannot finish in time means a dead or stuck client.
	write := func(f string, args ...any) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(w, f, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(": seat map of %s\nretry: 2000\n\n", r.PathValue("eventId")) {
		return
	}
	ka := time.NewTicker(s.cfg.Keepalive)
	defer ka.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				if ctx.Err() == nil {
					write("event: resync\ndata: {}\n\n")
				}
				return
			}
			_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := w.Write(ev.b); err != nil || rc.Flush() != nil {
				return
			}
		case <-ka.C:
			if !write(": keepalive\n\n") {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// sseEvent is an update rendered as an SSE event. Subscribe renders each
// update once for all the streams it fans out to.
type sseEvent struct{ b []byte }

func renderSSE(u *Update) *sseEvent {
	data, err := json.Marshal(u)
	if err != nil { // plain structs: cannot happen
		panic(err)
	}
	return &sseEvent{[]byte(fmt.Sprintf("id: %s\ndata: %s\n\n", u.Cursor, data))}
}
