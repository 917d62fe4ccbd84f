package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketing/ticketing/internal/fixtures"
)

// BenchmarkSeatMapSnapshot10k serves the seat map of a 10,000-seat event
// through the real HTTP server (GraphQL event.seatMap and REST
// GET /api/events/{id}) to 16 and 64 concurrent clients, and reports the
// latency percentiles besides ns/op; allocs/op counts client and server:
//
//	go test -count=1 -run '^$' -bench SeatMapSnapshot10k -benchmem -benchtime 400x ./app/
func BenchmarkSeatMapSnapshot10k(b *testing.B) {
	tb := setupEnv(b, map[string]string{"ABUSE_LIMITS": "off"})
	ev := fixtures.SmallEvent(b, tb.app.Pool, fixtures.EventOptions{Seats: 10000})
	gql, _ := json.Marshal(map[string]any{"query": `query($id: ID!) { event(id: $id) { seatMap { cursor
		seats { seatId sectionId status version } generalAdmission { sectionId available version } } } }`,
		"variables": map[string]any{"id": ev.ID}})
	requests := map[string]func() (*http.Request, error){
		"graphql": func() (*http.Request, error) {
			r, err := http.NewRequest(http.MethodPost, tb.srv.URL+"/graphql", bytes.NewReader(gql))
			if err == nil {
				r.Header.Set("Content-Type", "application/json")
			}
			return r, err
		},
		"rest": func() (*http.Request, error) {
			return http.NewRequest(http.MethodGet, tb.srv.URL+"/api/events/"+ev.ID, nil)
		},
	}
	for _, face := range []string{"graphql", "rest"} {
		for _, clients := range []int{16, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", face, clients), func(b *testing.B) {
				hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
				defer hc.CloseIdleConnections()
				lat := make([]time.Duration, 0, b.N)
				var mu sync.Mutex
				var next atomic.Int64
				var failed atomic.Value
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							t0 := time.Now()
							req, err := requests[face]()
							if err != nil {
								failed.Store(err)
								return
							}
							resp, err := hc.Do(req)
							if err != nil {
								failed.Store(err)
								return
							}
							body, err := io.ReadAll(resp.Body)
							resp.Body.Close()
							if err != nil || resp.StatusCode != http.StatusOK || len(body) < 10000*50 {
								failed.Store(fmt.Errorf("status %d, %d bytes: %v %.200s", resp.StatusCode, len(body), err, body))
								return
							}
							d := time.Since(t0)
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				at := func(p float64) float64 {
					return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds()) / 1000
				}
				b.ReportMetric(at(0.5), "p50-ms")
				b.ReportMetric(at(0.99), "p99-ms")
			})
		}
	}
}
