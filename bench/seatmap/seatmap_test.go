// Package seatmap_test is the live seat map load benchmark: N WebSocket
// subscribers (graphql-transport-ws) on one hot event of a real `ticketing
// serve` process while holds and cancels run at full speed against the same
// database. It reports the time from a change's commit to its receipt by the
// clients (p50/p99) and the server's memory per idle subscriber. Run it with
// bench/seatmap/run.sh; it is skipped unless SEATMAP_BENCH=1.
package seatmap_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/store"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func TestSeatMapLoad(t *testing.T) {
	if os.Getenv("SEATMAP_BENCH") != "1" {
		t.Skip("set SEATMAP_BENCH=1 (see bench/seatmap/run.sh)")
	}
	var (
		subscribers = envInt("SUBSCRIBERS", 10000)
		seatsN      = envInt("SEATS", 500)
		workers     = envInt("HOLD_WORKERS", 8)
		loadFor     = time.Duration(envInt("LOAD_SECONDS", 20)) * time.Second
		bin         = os.Getenv("TICKETING_BIN")
		addr        = "127.0.0.1:" + strconv.Itoa(envInt("PORT", 18181))
	)
	require.NotEmpty(t, bin, "TICKETING_BIN: the built ticketing binary")
	ctx := context.Background()
	dbURL := testdb.NewDatabase(t)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	// As in `ticketing serve`: a commit that wrote outbox rows wakes the
	// relays (NOTIFY after commit); without it they only poll, once a second.
	notifier := outbox.NewNotifier(pool, nil)
	st.SetOutboxHook(notifier.Kick)
	nctx, stopNotifier := context.WithCancel(ctx)
	t.Cleanup(stopNotifier)
	go notifier.Run(nctx)
	eventID, seats := hotEvent(t, st, seatsN)

	// The server: a real `ticketing serve` process with its workers (relay).
	srv := exec.Command(bin, "serve")
	srv.Env = append(os.Environ(), "ABUSE_LIMITS=off", "HTTP_ADDR="+addr, "DATABASE_URL="+dbURL, "REDIS_URL="+testdb.RedisURL(),
		"SEARCH_DIR="+filepath.Join(t.TempDir(), "search"))
	logf, _ := os.Create(filepath.Join(t.TempDir(), "server.log"))
	srv.Stdout, srv.Stderr = logf, logf
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _, _ = srv.Process.Wait() })
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	}, 60*time.Second, 200*time.Millisecond)
	time.Sleep(2 * time.Second) // let start-up settle before the baseline
	rss0, heap0 := serverMem(t, srv.Process.Pid, addr)
	stack0 := metric(addr, "go_memstats_stack_inuse_bytes")

	// Subscribers: take the cursor (Event.seatMap.cursor) and subscribe after it.
	cursor := seatMapCursor(t, addr, eventID)
	lat := newHist()
	fanout = newHist()
	var received atomic.Int64
	fs := &frameSet{frames: map[string]*frameRec{}}
	commits := sync.Map{} // version -> commit time
	start := time.Now()
	conns := make([]*websocket.Conn, subscribers)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var failed atomic.Int64
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := subscribe(addr, eventID, cursor)
			if err != nil {
				failed.Add(1)
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load(), "subscriptions that failed")
	connectTook := time.Since(start)
	for _, c := range conns {
		go readLoop(c, fs, &received)
	}
	require.Eventually(t, func() bool { return metric(addr, "ticketing_seatmap_subscribers") >= float64(subscribers) },
		60*time.Second, 200*time.Millisecond)
	time.Sleep(time.Duration(envInt("IDLE_SECONDS", 3)) * time.Second) // idle: time to take a heap profile (DEBUG_ADDR)
	rss1, heap1 := serverMem(t, srv.Process.Pid, addr)
	stack1 := metric(addr, "go_memstats_stack_inuse_bytes")

	// Load: each worker owns a slice of seats and holds then cancels them,
	// one at a time, as fast as the database allows.
	hs := holds.New(st, holds.Config{})
	loadCtx, stop := context.WithTimeout(ctx, loadFor)
	defer stop()
	var ops atomic.Int64
	var lwg sync.WaitGroup
	cpu0 := procCPU(srv.Process.Pid)
	self0 := procCPU(os.Getpid())
	for w := 0; w < workers; w++ {
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			user := auth.User{ID: fmt.Sprintf("bench-%d", w)}
			// The worker's own seats: nobody else changes them, so the
			// version read after the commit is the one it committed.
			var mine []string
			for i := w; i < len(seats); i += workers {
				mine = append(mine, seats[i])
			}
			for i := 0; loadCtx.Err() == nil; i++ {
				seat := mine[i%len(mine)]
				h, err := hs.Create(loadCtx, user, holds.CreateRequest{EventID: eventID, SeatIDs: []string{seat}, IdempotencyKey: uuid.NewString()})
				if err != nil {
					continue
				}
				record(st, &commits, seat, time.Now()) // Create returns right after the commit
				if _, err := hs.Cancel(context.WithoutCancel(loadCtx), user, h.ID); err == nil {
					record(st, &commits, seat, time.Now())
				}
				ops.Add(2)
			}
		}()
	}
	lwg.Wait()
	time.Sleep(2 * time.Second) // the last frames
	rss2, _ := serverMem(t, srv.Process.Pid, addr)
	loadCPU := procCPU(srv.Process.Pid) - cpu0
	selfCPU := procCPU(os.Getpid()) - self0

	fs.latencies(&commits, lat)
	p50, p99, max, n := lat.quantiles()
	fp50, fp99, _, _ := fanout.quantiles()
	report := fmt.Sprintf(`subscribers=%d seats=%d hold_workers=%d load=%s cpus=%d
connect+subscribe: %s
inventory changes committed: %d (%.0f/s)
frames: %.0f sent by the server, %.0f entries coalesced into them; dropped slow subscribers: %.0f
seat updates received by clients: %d (latency samples %d)
commit -> client receipt: p50=%s p99=%s max=%s
newest stream entry of a frame -> client receipt: p50=%s p99=%s
relay, insert -> published (ticketing_outbox_publish_delay_seconds): p50<=%s p99<=%s; relay batch p50<=%s p99<=%s
server RSS: idle %.1f MiB -> %d subscribers %.1f MiB (under load %.1f MiB); Go heap in use %.1f -> %.1f MiB
memory per idle subscriber: RSS %.1f KiB, heap %.1f KiB, goroutine stacks %.1f KiB
CPU during load (+2 s): server %.1f s, load generator (clients + hold workers) %.1f s, of %.0f s available
`, subscribers, seatsN, workers, loadFor, runtime.NumCPU(), connectTook.Round(time.Millisecond),
		ops.Load(), float64(ops.Load())/loadFor.Seconds(),
		metric(addr, "ticketing_seatmap_frames_total"), metric(addr, "ticketing_seatmap_coalesced_entries_total"),
		metric(addr, "ticketing_seatmap_dropped_subscribers_total"),
		received.Load(), n, p50, p99, max, fp50, fp99,
		histQuantile(addr, "ticketing_outbox_publish_delay_seconds", 0.5), histQuantile(addr, "ticketing_outbox_publish_delay_seconds", 0.99),
		histQuantile(addr, "ticketing_outbox_batch_seconds", 0.5), histQuantile(addr, "ticketing_outbox_batch_seconds", 0.99),
		mib(rss0), subscribers, mib(rss1), mib(rss2), mib(heap0), mib(heap1),
		float64(rss1-rss0)/1024/float64(subscribers), float64(heap1-heap0)/1024/float64(subscribers),
		(stack1-stack0)/1024/float64(subscribers),
		loadCPU.Seconds(), selfCPU.Seconds(), (loadFor+2*time.Second).Seconds()*float64(runtime.NumCPU()))
	fmt.Print(report)
	if out := os.Getenv("REPORT"); out != "" {
		_ = os.WriteFile(out, []byte(report), 0o644)
	}
	for _, c := range conns {
		c.Close()
	}
}

func mib(b float64) float64 { return b / (1 << 20) }

// hotEvent creates an event with n seats on sale.
func hotEvent(t *testing.T, st *store.Store, n int) (string, []string) {
	ctx := context.Background()
	venue, section, event := uuid.NewString(), uuid.NewString(), uuid.NewString()
	q := func(sql string, args ...any) { require.NoError(t, st.Exec(ctx, sql, args...)) }
	q(`INSERT INTO venues (id, name, address, city, country, lat, lon) VALUES ($1, 'Arena', 'a', 'Madrid', 'ES', 40, -3)`, venue)
	q(`INSERT INTO sections (id, venue_id, position, name, kind, capacity) VALUES ($1, $2, 0, 'Pista', 'SEATED', $3)`, section, venue, n)
	q(`INSERT INTO seats (id, section_id, row_label, row_index, number, x, y)
	   SELECT gen_random_uuid(), $1, 'R' || (g / 50), g / 50, g % 50 + 1, g % 50, g / 50 FROM generate_series(0, $2 - 1) g`, section, n)
	q(`INSERT INTO events (id, venue_id, name, category, starts_at, sale_starts_at, max_tickets_per_user, hold_duration_seconds)
	   VALUES ($1, $2, 'Hot', 'music', now() + interval '30 days', now() - interval '1 hour', 1000000, 600)`, event, venue)
	q(`INSERT INTO event_prices (event_id, section_id, amount, currency) VALUES ($1, $2, 5000, 'EUR')`, event, section)
	q(`INSERT INTO inventory (event_id, section_id, seat_id) SELECT $1, section_id, id FROM seats WHERE section_id = $2`, event, section)
	rows, err := st.SeatMapSeats(ctx, event)
	require.NoError(t, err)
	var seats []string
	for _, r := range rows {
		seats = append(seats, r.SeatID)
	}
	return event, seats
}

// record notes the commit time of the seat's current version.
func record(st *store.Store, commits *sync.Map, seat string, at time.Time) {
	var v int64
	if err := st.Pool().QueryRow(context.Background(), `SELECT version FROM inventory WHERE seat_id = $1`, seat).Scan(&v); err == nil {
		commits.Store(v, at)
	}
}

func seatMapCursor(t *testing.T, addr, eventID string) string {
	body := fmt.Sprintf(`{"query":"{ event(id: \"%s\") { seatMap { cursor } } }"}`, eventID)
	r, err := http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer r.Body.Close()
	var out struct {
		Data struct {
			Event struct{ SeatMap struct{ Cursor string } }
		}
	}
	b, _ := io.ReadAll(r.Body)
	require.NoError(t, json.Unmarshal(b, &out))
	require.NotEmpty(t, out.Data.Event.SeatMap.Cursor, string(b))
	return out.Data.Event.SeatMap.Cursor
}

func subscribe(addr, eventID, cursor string) (*websocket.Conn, error) {
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 30 * time.Second,
		ReadBufferSize: 4096, WriteBufferSize: 256, WriteBufferPool: &sync.Pool{}}
	c, _, err := d.Dial("ws://"+addr+"/graphql", nil)
	if err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := c.WriteJSON(map[string]any{"type": "connection_init"}); err != nil {
		c.Close()
		return nil, err
	}
	var ack struct{ Type string }
	if err := c.ReadJSON(&ack); err != nil || ack.Type != "connection_ack" {
		c.Close()
		return nil, fmt.Errorf("no ack: %v %q", err, ack.Type)
	}
	q := `subscription($e: ID!, $a: String) { seatMapUpdates(eventId: $e, after: $a) { cursor seats { seatId status version } } }`
	err = c.WriteJSON(map[string]any{"id": "1", "type": "subscribe",
		"payload": map[string]any{"query": q, "variables": map[string]any{"e": eventID, "a": cursor}}})
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
	}
	return c, err
}

// readLoop is the client. Every subscriber receives the same frames, so
// the work per message is kept constant: the first subscriber to receive a
// frame (told apart by its cursor) parses its seat versions once, and every
// receipt only adds its delay since that first receipt to the frame's
// histogram. The latency of each (seat version, subscriber) pair, commit ->
// receipt, is then (first receipt - commit) + (receipt - first receipt),
// combined after the run (latencies). This keeps the load generator, which
// shares the two cores with the server, from costing more per message than
// the server itself.
func readLoop(c *websocket.Conn, fs *frameSet, received *atomic.Int64) {
	var buf bytes.Buffer
	for {
		_, r, err := c.NextReader()
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		now := time.Now()
		msg := buf.Bytes()
		if bytes.HasPrefix(msg, []byte(`{"type":"ping"`)) {
			_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
			continue
		}
		i := bytes.Index(msg, cursorKey)
		if i < 0 {
			continue
		}
		cur := msg[i+len(cursorKey):]
		if j := bytes.IndexByte(cur, '"'); j >= 0 {
			cur = cur[:j]
		}
		fr := fs.frame(cur, msg, now)
		fr.recv[min(max(int(now.Sub(fr.first)/time.Millisecond), 0), len(fr.recv)-1)].Add(1)
		received.Add(int64(len(fr.versions)))
		// The cursor is the id of the frame's newest stream entry, whose
		// first part is the Redis clock (ms) when the relay appended it.
		ms := int64(0)
		for _, d := range cur {
			if d < '0' || d > '9' {
				break
			}
			ms = ms*10 + int64(d-'0')
		}
		if ms > 0 { // not the snapshot of a stream that did not exist yet ("0-0")
			fanout.add(now.Sub(time.UnixMilli(ms)))
		}
	}
}

// frameSet is every distinct frame the subscribers received, by cursor.
type frameSet struct {
	mu     sync.RWMutex
	frames map[string]*frameRec
}

// frameRec is one frame: its seat versions, when it was first received,
// and the histogram (1 ms buckets) of its receipts' delays after that.
type frameRec struct {
	first    time.Time
	versions []int64
	recv     [30001]atomic.Int32
}

func (fs *frameSet) frame(cursor, msg []byte, now time.Time) *frameRec {
	fs.mu.RLock()
	fr := fs.frames[string(cursor)]
	fs.mu.RUnlock()
	if fr != nil {
		return fr
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fr = fs.frames[string(cursor)]; fr == nil {
		fr = &frameRec{first: now, versions: versions(msg)}
		fs.frames[string(cursor)] = fr
	}
	return fr
}

// versions scans a frame for its seat versions without decoding it.
func versions(msg []byte) []int64 {
	var out []int64
	for {
		i := bytes.Index(msg, versionKey)
		if i < 0 {
			return out
		}
		msg = msg[i+len(versionKey):]
		v := int64(0)
		for len(msg) > 0 && msg[0] >= '0' && msg[0] <= '9' {
			v = v*10 + int64(msg[0]-'0')
			msg = msg[1:]
		}
		out = append(out, v)
	}
}

// latencies fills h with commit -> receipt of every (seat version whose
// commit time is known, subscriber) pair.
func (fs *frameSet) latencies(commits *sync.Map, h *hist) {
	type bucket struct {
		delay time.Duration
		n     int64
	}
	for _, fr := range fs.frames {
		var recv []bucket
		for ms := range fr.recv {
			if n := fr.recv[ms].Load(); n > 0 {
				recv = append(recv, bucket{time.Duration(ms) * time.Millisecond, int64(n)})
			}
		}
		for _, v := range fr.versions {
			at, ok := commits.Load(v)
			if !ok {
				continue
			}
			base := fr.first.Sub(at.(time.Time))
			for _, b := range recv {
				h.addN(base+b.delay, b.n)
			}
		}
	}
}

var (
	versionKey = []byte(`"version":`)
	cursorKey  = []byte(`"cursor":"`)
	// fanout: newest stream entry of a frame -> its receipt (the hub's
	// coalescing plus the fan-out), as opposed to commit -> receipt.
	fanout *hist
)

// procCPU is a process's user+system CPU time so far.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// hist is a latency histogram with 1 ms buckets up to 30 s.
type hist struct{ b [30001]atomic.Int64 }

func newHist() *hist { return &hist{} }

func (h *hist) add(d time.Duration) { h.addN(d, 1) }

func (h *hist) addN(d time.Duration, n int64) {
	ms := int(d / time.Millisecond)
	h.b[min(max(ms, 0), len(h.b)-1)].Add(n)
}

func (h *hist) quantiles() (p50, p99, maxd time.Duration, n int64) {
	for i := range h.b {
		n += h.b[i].Load()
	}
	var c int64
	for i := range h.b {
		k := h.b[i].Load()
		if k == 0 {
			continue
		}
		c += k
		d := time.Duration(i) * time.Millisecond
		if p50 == 0 && c*100 >= n*50 {
			p50 = d
		}
		if p99 == 0 && c*100 >= n*99 {
			p99 = d
		}
		maxd = d
	}
	return
}

// serverMem is the server's RSS (from /proc) and Go heap in use (metrics).
func serverMem(t *testing.T, pid int, addr string) (rss, heap float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			rss = kb * 1024
		}
	}
	return rss, metric(addr, "go_memstats_heap_inuse_bytes")
}

// histQuantile is the upper bound of the bucket of a Prometheus histogram
// (from /metrics) that holds quantile q.
func histQuantile(addr, name string, q float64) string {
	r, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "?"
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	type bucket struct{ le, n float64 }
	var bs []bucket
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, name+`_bucket{le="`)
		if !ok {
			continue
		}
		le, n, _ := strings.Cut(rest, `"} `)
		lv, err1 := strconv.ParseFloat(le, 64)
		nv, err2 := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err1 == nil && err2 == nil {
			bs = append(bs, bucket{lv, nv})
		}
	}
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return "?"
	}
	total := bs[len(bs)-1].n
	for _, bk := range bs {
		if bk.n >= q*total {
			return (time.Duration(bk.le * float64(time.Second))).String()
		}
	}
	return "?"
}

// metric reads one unlabelled (or summed) sample from /metrics.
func metric(addr, name string) float64 {
	r, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	var sum float64
	lines := strings.Split(string(b), "\n")
	sort.Strings(lines)
	for _, l := range lines {
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}
