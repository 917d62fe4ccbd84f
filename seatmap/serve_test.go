package seatmap_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/internal/fixtures"
	"github.com/ticketing/ticketing/internal/testdb"
)

// TestTwoServeProcesses: two `ticketing serve` processes on different ports,
// one database, one Redis (and seat map prefix). A hold made through the
// GraphQL API of the first reaches a WebSocket subscriber of the second.
func TestTwoServeProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and starts the binary")
	}
	bin := filepath.Join(t.TempDir(), "ticketing")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".." // the module root: package main
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	dbURL := testdb.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ev := fixtures.SmallEvent(t, pool, fixtures.EventOptions{})
	eventID, seats := ev.ID, ev.Seats

	const secret = "two-processes-secret-0123456789"
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+testdb.RedisURL(),
		"SEATMAP_REDIS_PREFIX="+testdb.RedisPrefix(t), "JWT_HS256_SECRET="+secret,
		"JWT_ISSUER=ticketing-dev", "JWT_AUDIENCE=ticketing")
	a, b := serve(t, bin, env), serve(t, bin, env)

	// A subscriber of B: its first message is the snapshot.
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, _, err := d.Dial("ws://"+b+"/graphql", nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.WriteJSON(map[string]any{"type": "connection_init"}))
	q := `subscription($e: ID!) { seatMapUpdates(eventId: $e) { snapshot { cursor } seats { seatId status } } }`
	payload, _ := json.Marshal(map[string]any{"query": q, "variables": map[string]any{"e": eventID}})
	require.NoError(t, c.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": json.RawMessage(payload)}))
	type update struct {
		Snapshot *struct{ Cursor string }
		Seats    []struct{ SeatID, Status string }
	}
	nextUpdate := func() update {
		t.Helper()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
		for {
			var m struct {
				Type    string
				Payload struct {
					Data   struct{ SeatMapUpdates update }
					Errors []any
				}
			}
			require.NoError(t, c.ReadJSON(&m))
			switch m.Type {
			case "next":
				require.Empty(t, m.Payload.Errors)
				return m.Payload.Data.SeatMapUpdates
			case "ping":
				require.NoError(t, c.WriteJSON(map[string]string{"type": "pong"}))
			case "connection_ack", "pong":
			default:
				t.Fatalf("unexpected message %q", m.Type)
			}
		}
	}
	require.NotNil(t, nextUpdate().Snapshot)

	// The hold, through A's API.
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "ticketing-dev", "aud": "ticketing", "sub": "buyer-1",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
	}).SignedString([]byte(secret))
	require.NoError(t, err)
	body, _ := json.Marshal(map[string]any{
		"query": `mutation($in: CreateHoldInput!) { createHold(input: $in) { id } }`,
		"variables": map[string]any{"in": map[string]any{
			"eventId": eventID, "seatIds": []string{seats[0]}, "idempotencyKey": uuid.NewString()}},
	})
	req, _ := http.NewRequest("POST", "http://"+a+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var res struct {
		Data   struct{ CreateHold struct{ ID string } }
		Errors []any
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
	resp.Body.Close()
	require.Empty(t, res.Errors)
	require.NotEmpty(t, res.Data.CreateHold.ID)

	u := nextUpdate()
	require.Nil(t, u.Snapshot)
	require.Len(t, u.Seats, 1)
	require.Equal(t, seats[0], u.Seats[0].SeatID)
	require.Equal(t, "HELD", u.Seats[0].Status)
}

// serve starts `ticketing serve` on a free port, stopped when the test
// ends, and returns its address once it is healthy.
func serve(t *testing.T, bin string, env []string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(env, "HTTP_ADDR="+addr, "SEARCH_DIR="+filepath.Join(dir, "search"))
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("server %s log:\n%s", addr, b)
		}
		logf.Close()
	})
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "server %s did not start", addr)
	return addr
}
