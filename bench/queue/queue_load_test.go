// Package queue_test is the waiting room's load benchmark: joins per second
// and position reads per second through the GraphQL HTTP API, and the
// admission controller's accuracy (admitted per minute versus configured)
// while that load runs. It runs only with QUEUE_BENCH=1:
//
//	QUEUE_BENCH=1 go test -count=1 -run TestQueueLoad -v -timeout 10m ./bench/queue/
//
// Knobs: QUEUE_BENCH_USERS (50000), QUEUE_BENCH_WORKERS (64),
// QUEUE_BENCH_READ_SECONDS (15), QUEUE_BENCH_ADMIT_RATE (100 per second).
package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
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

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

const secret = "queue-bench-secret-0123456789abc"

func TestQueueLoad(t *testing.T) {
	if os.Getenv("QUEUE_BENCH") != "1" {
		t.Skip("set QUEUE_BENCH=1 to run the queue load benchmark")
	}
	nUsers := envInt("QUEUE_BENCH_USERS", 50000)
	workers := envInt("QUEUE_BENCH_WORKERS", 64)
	readFor := time.Duration(envInt("QUEUE_BENCH_READ_SECONDS", 15)) * time.Second
	rate := envInt("QUEUE_BENCH_ADMIT_RATE", 100)

	prefix := testdb.RedisPrefix(t)
	env := map[string]string{
		"DATABASE_URL": testdb.NewDatabase(t), "REDIS_URL": testdb.RedisURL(),
		"JWT_ISSUER": "bench", "JWT_AUDIENCE": "ticketing", "JWT_HS256_SECRET": secret,
		"ABUSE_LIMITS":         "off", // every client is one address
		"QUEUE_KEY_PREFIX":     prefix,
		"QUEUE_JOIN_RATE_ADDR": "0", // the whole load comes from 127.0.0.1
		"QUEUE_ADMIT_RATE":     strconv.Itoa(rate),
		"QUEUE_WINDOW":         strconv.Itoa(10 * nUsers), // measure the rate, not the window
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
	defer cleanKeys(a, prefix) // before a.Close (deferred calls run last-in first-out)

	venue, event := uuid.NewString(), uuid.NewString()
	require.NoError(t, a.Store.VenueCreate(ctx, store.Venue{ID: venue, Name: "Bench " + venue[:6], Address: "x", City: "Madrid", Country: "ES"}))
	now := time.Now()
	require.NoError(t, a.Store.EventCreate(ctx, store.Event{
		ID: event, VenueID: venue, Name: "Bench show", Category: "concert",
		StartsAt: now.Add(30 * 24 * time.Hour), SaleStartsAt: now.Add(-time.Minute),
		MaxTicketsPerUser: 4, HoldDurationSeconds: 600, QueueRequired: true, Version: 1,
	}))

	tokens := make([]string, nUsers)
	for i := range tokens {
		tokens[i], err = auth.Mint(secret, "bench", "ticketing", fmt.Sprintf("bench-user-%06d", i), nil, time.Hour)
		require.NoError(t, err)
	}
	// The load generator shares the cores with the server, so it is kept
	// light: keep-alive connections, tokens minted and request bodies
	// encoded before the clock starts, one read buffer per worker.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}}
	endpoint := srv.URL + "/graphql"
	bearer := make([]string, len(tokens))
	for i, tok := range tokens {
		bearer[i] = "Bearer " + tok
	}
	post := func(buf *bytes.Buffer, auth string, body []byte) error {
		req, _ := http.NewRequest("POST", endpoint, bytes.NewReader(body))
		req.Header["Content-Type"] = []string{"application/json"}
		req.Header["Authorization"] = []string{auth}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		buf.Reset()
		_, _ = buf.ReadFrom(res.Body)
		if res.StatusCode != 200 || bytes.Contains(buf.Bytes(), []byte(`"errors"`)) {
			return fmt.Errorf("status %d: %s", res.StatusCode, buf.Bytes())
		}
		return nil
	}
	// run spreads calls over the workers until next returns false.
	run := func(next func() (int, bool), query string) (n int64, errs int64, d time.Duration) {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"e": event}})
		var wg sync.WaitGroup
		start := time.Now()
		for range workers {
			wg.Go(func() {
				var buf bytes.Buffer
				for {
					i, ok := next()
					if !ok {
						return
					}
					if err := post(&buf, bearer[i], body); err != nil {
						if atomic.AddInt64(&errs, 1) < 3 {
							t.Log(err)
						}
						continue
					}
					atomic.AddInt64(&n, 1)
				}
			})
		}
		wg.Wait()
		return n, errs, time.Since(start)
	}

	// The admission controller runs during the whole load.
	go a.Queue.Run(ctx)
	ctrlStart := time.Now()

	var cursor atomic.Int64
	joins, joinErrs, jd := run(func() (int, bool) {
		i := cursor.Add(1) - 1
		return int(i), i < int64(nUsers)
	}, `mutation($e: ID!) { joinQueue(eventId: $e) { status position estimatedWaitSeconds } }`)

	warm := time.Now()
	active0, err := a.Queue.ActiveAdmissions(ctx, event)
	require.NoError(t, err)
	deadline := time.Now().Add(readFor)
	reads, readErrs, rd := run(func() (int, bool) {
		return rand.IntN(nUsers), time.Now().Before(deadline)
	}, `query($e: ID!) { queueTicket(eventId: $e) { status position estimatedWaitSeconds } }`)
	// The same reads without HTTP and GraphQL: the queue's own cost.
	var direct, directErrs atomic.Int64
	dd := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Since(dd) < 5*time.Second {
				if _, err := a.Queue.Ticket(ctx, event, fmt.Sprintf("bench-user-%06d", rand.IntN(nUsers))); err != nil {
					directErrs.Add(1)
					continue
				}
				direct.Add(1)
			}
		})
	}
	wg.Wait()
	ddur := time.Since(dd)
	active1, err := a.Queue.ActiveAdmissions(ctx, event)
	require.NoError(t, err)
	measured := time.Since(warm)
	perMin := float64(active1-active0) / measured.Seconds() * 60

	fmt.Printf("queue bench: users=%d workers=%d controller rate=%d/s\n", nUsers, workers, rate)
	fmt.Printf("  joins:          %d in %v = %.0f joins/s (errors %d)\n", joins, jd.Round(time.Millisecond), float64(joins)/jd.Seconds(), joinErrs)
	fmt.Printf("  position reads: %d in %v = %.0f reads/s (errors %d)\n", reads, rd.Round(time.Millisecond), float64(reads)/rd.Seconds(), readErrs)
	fmt.Printf("  direct Service.Ticket reads (no HTTP/GraphQL): %.0f reads/s (errors %d)\n", float64(direct.Load())/ddur.Seconds(), directErrs.Load())
	fmt.Printf("  admissions during the read phases: %d in %v = %.0f/min, configured %d/min (%.1f%%); controller up %v\n",
		active1-active0, measured.Round(time.Millisecond), perMin, rate*60, 100*perMin/float64(rate*60), time.Since(ctrlStart).Round(time.Second))
	require.Zero(t, joinErrs)
	require.Zero(t, readErrs)
}

func cleanKeys(a *app.App, prefix string) {
	ctx := context.Background()
	iter := a.Redis.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		a.Redis.Del(ctx, iter.Val())
	}
}
