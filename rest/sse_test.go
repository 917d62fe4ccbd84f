package rest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sseMessage is one message of the seat-map stream.
type sseMessage struct {
	ID   string
	Data struct {
		Cursor   string
		Snapshot *struct{ Seats []struct{ SeatID string } }
		Seats    []struct{ SeatID, Status string }
	}
}

// stream opens the seat-map stream of eventID (resuming after lastID when
// set) and delivers its messages until the test or ctx ends.
func (e *env) stream(ctx context.Context, eventID, lastID string) <-chan sseMessage {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", e.base+"/api/events/"+eventID+"/seatmap/stream", nil)
	require.NoError(e.t, err)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	require.Equal(e.t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan sseMessage, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var m sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				m.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m.Data) != nil {
					return
				}
			case line == "" && m.ID != "":
				out <- m
				m = sseMessage{}
			}
		}
	}()
	return out
}

// next waits for the first message whose seat seatID has status, failing
// on a snapshot when none is allowed; it returns the messages read.
func next(t *testing.T, ch <-chan sseMessage, seatID, status string, snapshotOK bool) []sseMessage {
	t.Helper()
	var seen []sseMessage
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-ch:
			require.True(t, ok, "stream ended")
			seen = append(seen, m)
			require.True(t, snapshotOK || m.Data.Snapshot == nil, "unexpected snapshot")
			require.Equal(t, m.ID, m.Data.Cursor)
			for _, s := range m.Data.Seats {
				if s.SeatID == seatID && s.Status == status {
					return seen
				}
			}
		case <-timeout:
			t.Fatalf("no %s update of seat %s", status, seatID)
		}
	}
}

// testStreamResume: the SSE id is the cursor, and Last-Event-ID resumes
// after it (no snapshot, nothing before it again); without it the first
// message is a snapshot.
func testStreamResume(t *testing.T, e *env) {
	tok, seat := e.token("sse"), e.ev.Seats[9]
	var d struct{ SeatMap struct{ Cursor string } }
	e.do("GET", "/api/events/"+e.ev.ID, "", nil).into(t, &d)

	ctx, cancel := context.WithCancel(context.Background())
	ch := e.stream(ctx, e.ev.ID, d.SeatMap.Cursor)
	var h struct{ ID string }
	r := e.do("POST", "/api/holds", tok, map[string]any{"eventId": e.ev.ID, "seatIds": []string{seat}}, "Idempotency-Key", "sse1")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	r.into(t, &h)
	seen := next(t, ch, seat, "HELD", false)
	heldAt := seen[len(seen)-1].ID
	cancel() // disconnected while the hold is cancelled

	require.Equal(t, http.StatusOK, e.do("DELETE", "/api/holds/"+h.ID, tok, nil).Status)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	seen = next(t, e.stream(ctx, e.ev.ID, heldAt), seat, "AVAILABLE", false)
	for _, m := range seen {
		require.NotEqual(t, heldAt, m.ID, "the update before Last-Event-ID came again")
		for _, s := range m.Data.Seats {
			require.False(t, s.SeatID == seat && s.Status == "HELD", "the update before Last-Event-ID came again")
		}
	}

	first := <-e.stream(ctx, e.ev.ID, "")
	require.NotNil(t, first.Data.Snapshot, "a fresh subscription starts with a snapshot")
	require.Len(t, first.Data.Snapshot.Seats, 10)
}
