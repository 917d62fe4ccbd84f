package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// TestQueueBurst: QUEUE_BENCH_BURST (10,000) buyers call joinQueue through
// GraphQL HTTP at the same instant, with the server's default settings
// (the per-address limit off: the whole crowd comes from 127.0.0.1), up to
// QUEUE_BENCH_CONNS (2,000) connections at once. It reports how many were
// served, how many were refused and with which code, and the latencies.
//
//	QUEUE_BENCH=1 go test -count=1 -run TestQueueBurst -v -timeout 10m ./bench/queue/
func TestQueueBurst(t *testing.T) {
	if os.Getenv("QUEUE_BENCH") != "1" {
		t.Skip("set QUEUE_BENCH=1 to run the queue load benchmark")
	}
	n := envInt("QUEUE_BENCH_BURST", 10000)
	conns := envInt("QUEUE_BENCH_CONNS", 2000)
	prefix := testdb.RedisPrefix(t)
	env := map[string]string{
		"DATABASE_URL": testdb.NewDatabase(t), "REDIS_URL": testdb.RedisURL(),
		"JWT_ISSUER": "bench", "JWT_AUDIENCE": "ticketing", "JWT_HS256_SECRET": secret,
		"QUEUE_KEY_PREFIX":     prefix,
		"QUEUE_JOIN_RATE_ADDR": "0",
		"SEARCH_DIR":           t.TempDir(),
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	defer cleanKeys(a, prefix)
	go a.Queue.Run(ctx)

	venue, event := uuid.NewString(), uuid.NewString()
	require.NoError(t, a.Store.VenueCreate(ctx, store.Venue{ID: venue, Name: "Bench " + venue[:6], Address: "x", City: "Madrid", Country: "ES"}))
	now := time.Now()
	require.NoError(t, a.Store.EventCreate(ctx, store.Event{
		ID: event, VenueID: venue, Name: "Bench show", Category: "concert",
		StartsAt: now.Add(30 * 24 * time.Hour), SaleStartsAt: now.Add(-time.Minute),
		MaxTicketsPerUser: 4, HoldDurationSeconds: 600, QueueRequired: true, Version: 1,
	}))
	bearer := make([]string, n)
	for i := range bearer {
		tok, err := auth.Mint(secret, "bench", "ticketing", fmt.Sprintf("burst-user-%06d", i), nil, time.Hour)
		require.NoError(t, err)
		bearer[i] = "Bearer " + tok
	}
	body, _ := json.Marshal(map[string]any{
		"query":     `mutation($e: ID!) { joinQueue(eventId: $e) { status position } }`,
		"variables": map[string]any{"e": event},
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	codeRe := regexp.MustCompile(`"code":"([A-Z_]+)"`)
	var mu sync.Mutex
	codes := map[string]int{}
	var lat []time.Duration
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			req, _ := http.NewRequest("POST", srv.URL+"/graphql", bytes.NewReader(body))
			req.Header["Content-Type"] = []string{"application/json"}
			req.Header["Authorization"] = []string{bearer[i]}
			code := "ok"
			res, err := client.Do(req)
			if err != nil {
				code = "transport: " + err.Error()
			} else {
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(res.Body)
				res.Body.Close()
				if m := codeRe.FindSubmatch(buf.Bytes()); m != nil {
					code = string(m[1])
				} else if res.StatusCode != 200 || !bytes.Contains(buf.Bytes(), []byte(`"WAITING"`)) {
					code = fmt.Sprintf("status %d", res.StatusCode)
				}
			}
			d := time.Since(t0)
			mu.Lock()
			codes[code]++
			lat = append(lat, d)
			mu.Unlock()
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	el := time.Since(t0)
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond) }
	fmt.Printf("queue burst: %d joins at once through GraphQL HTTP (%d connections) in %v = %.0f joins/s\n",
		n, conns, el.Round(time.Millisecond), float64(n)/el.Seconds())
	fmt.Printf("  answers: %v\n", codes)
	fmt.Printf("  latency p50 %v p90 %v p99 %v max %v\n", q(0.5), q(0.9), q(0.99), q(1))
	require.Equal(t, n, codes["ok"], "every join served")
}
