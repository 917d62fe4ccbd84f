// Package abuse measures the legitimate latency of a server under a flood
// of hostile requests (issue #16). It is a benchmark, not a timed test: it
// runs only with BENCH_ABUSE=1 and reports numbers.
//
//	BENCH_ABUSE=1 BENCH_ABUSE_SECONDS=20 go test -count=1 -v -run TestFlood ./bench/abuse/
package abuse

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/internal/apptest"
	"github.com/ticketing/ticketing/internal/fixtures"
)

const secret = "bench-abuse-secret-0123456789abcdef"

func TestFlood(t *testing.T) {
	if os.Getenv("BENCH_ABUSE") == "" {
		t.Skip("set BENCH_ABUSE=1 to run the abuse benchmark")
	}
	secs, _ := strconv.Atoi(os.Getenv("BENCH_ABUSE_SECONDS"))
	if secs <= 0 {
		secs = 20
	}
	// The limits are on (the default). Every request comes from loopback,
	// a trusted proxy here, with X-Forwarded-For saying who sends it: each
	// fan its own address, the flood one attacker's address (BENCH_ABUSE_OFF=1:
	// limits off, so the flood reaches the document limits).
	env := map[string]string{"JWT_HS256_SECRET": secret, "TRUSTED_PROXIES": "127.0.0.1/32"}
	if os.Getenv("BENCH_ABUSE_OFF") != "" {
		env["ABUSE_LIMITS"] = "off"
	}
	a := apptest.New(t, env)
	srv := apptest.Serve(t, a)
	big := fixtures.SmallEvent(t, a.Pool, fixtures.EventOptions{Seats: 20000})
	tr := &http.Transport{MaxIdleConnsPerHost: 128}
	client := &http.Client{Transport: tr}

	post := func(addr, tok, body string) (int, error) {
		req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", addr)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	q := func(s string, vars map[string]any) string {
		v, _ := json.Marshal(map[string]any{"query": s, "variables": vars})
		return string(v)
	}
	var aliases strings.Builder
	aliases.WriteString("{ ")
	for i := range 20 {
		fmt.Fprintf(&aliases, `e%d: event(id: %q) { seatMap { seats { seatId status } } } `, i, big.ID)
	}
	aliases.WriteString("}")
	hostile := []string{
		q("# x\n{ "+strings.Repeat("__typename ", 20000)+"}", nil),
		q(`{ event(id:"x") { `+strings.Repeat("a:id a:name ", 700)+"} }", nil),
		q(aliases.String(), nil),
		`[{"query":"{ __typename }"},{"query":"{ __typename }"}]`,
		`{"query":"query($v: String) { __typename }","variables":` + strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000) + `}`,
	}

	// The legitimate load: 16 fans, each from its own address, searching,
	// then holding and cancelling a seat of its own, at a fan's pace (three
	// requests, then 300 ms: within the fair-use limits).
	legit := func(d time.Duration) []time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		stop := time.Now().Add(d)
		for f := range 16 {
			wg.Go(func() {
				addr := fmt.Sprintf("10.0.0.%d", f+1)
				tok, _ := auth.Mint(secret, "ticketing-dev", "ticketing", fmt.Sprint("fan-", f), nil, time.Hour)
				for i := 0; time.Now().Before(stop); i++ {
					time.Sleep(300 * time.Millisecond)
					start := time.Now()
					_, err := post(addr, "", q(`{ searchEvents(first: 10) { edges { node { id name } } } }`, nil))
					require.NoError(t, err)
					mu.Lock()
					lat = append(lat, time.Since(start))
					mu.Unlock()
					start = time.Now()
					seat := big.Seats[f*1000+i%1000]
					_ = addr
					body := q(`mutation($in: CreateHoldInput!) { createHold(input: $in) { id } }`, map[string]any{"in": map[string]any{
						"eventId": big.ID, "seatIds": []string{seat}, "idempotencyKey": fmt.Sprint(f, "-", i, "-", time.Now().UnixNano())}})
					req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+tok)
					req.Header.Set("X-Forwarded-For", addr)
					resp, err := client.Do(req)
					require.NoError(t, err)
					var r struct {
						Data struct{ CreateHold struct{ ID string } }
					}
					_ = json.NewDecoder(resp.Body).Decode(&r)
					resp.Body.Close()
					mu.Lock()
					lat = append(lat, time.Since(start))
					mu.Unlock()
					if r.Data.CreateHold.ID != "" {
						_, _ = post(addr, tok, q(`mutation($id: ID!) { cancelHold(id: $id) { id } }`, map[string]any{"id": r.Data.CreateHold.ID}))
					}
				}
			})
		}
		wg.Wait()
		return lat
	}
	p := func(lat []time.Duration, q float64) time.Duration {
		slices.Sort(lat)
		return lat[int(float64(len(lat)-1)*q)]
	}
	d := time.Duration(secs) * time.Second
	base := legit(d)
	t.Logf("without flood: %d requests, p50 %v, p99 %v", len(base), p(base, 0.5), p(base, 0.99))

	// A flood of 64 connections: from one attacker's address (sent as
	// X-Forwarded-For by the trusted loopback), or spread, each connection
	// from its own source address 127.0.0.2-127.0.0.254 (Linux lets a
	// client bind any of 127.0.0.0/8; such a peer is not a trusted proxy,
	// so the server takes the peer's address as the client's). Server CPU
	// and allocations per hostile request are read from this process
	// (server and clients share it: an upper bound; app's
	// BenchmarkHostileRequests has the server's own figures).
	flood := func(name string, spread bool) {
		var sent, refused atomic.Int64
		stop := make(chan struct{})
		var fw sync.WaitGroup
		cpu0, alloc0 := cpuTime(), totalAlloc()
		for c := range 64 {
			fw.Go(func() {
				cl, xff := client, "10.66.6.6"
				if spread {
					local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+c%253))}
					cl = &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: local}).DialContext}}
					xff = ""
				}
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(hostile[(c+i)%len(hostile)]))
					req.Header.Set("Content-Type", "application/json")
					if xff != "" {
						req.Header.Set("X-Forwarded-For", xff)
					}
					resp, err := cl.Do(req)
					sent.Add(1)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests {
						refused.Add(1) // by the byte budget, before the body is read
					}
				}
			})
		}
		lat := legit(d)
		close(stop)
		fw.Wait()
		n := max(sent.Load(), 1)
		t.Logf("with a 64-connection flood %s (%d hostile requests, %.0f/s, %d of them 429): %d requests, p50 %v, p99 %v; per hostile request at most %v CPU, %d KB allocated",
			name, sent.Load(), float64(sent.Load())/d.Seconds(), refused.Load(), len(lat), p(lat, 0.5), p(lat, 0.99),
			(cpuTime()-cpu0)/time.Duration(n), (totalAlloc()-alloc0)/uint64(n)>>10)
	}
	flood("from one address", false)
	flood("from 64 addresses (127.0.0.2-65)", true)
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}
