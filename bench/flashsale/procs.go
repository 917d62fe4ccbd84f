package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Proc is a child process the load generator starts (ticketing serve,
// ticketing paysim, a private redis-server or postgres), restartable.
type Proc struct {
	Name string
	Path string
	Args []string
	Env  []string
	Log  string // log file (appended across restarts)
	// Health is polled after start when set (an http URL).
	Health string
	cmd    *exec.Cmd
	done   chan struct{}
}

// Start starts the process and waits for its health URL (60 s).
func (p *Proc) Start() error {
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s start %s\n", p.Name, time.Now().Format(time.RFC3339Nano))
	p.cmd = exec.Command(p.Path, p.Args...)
	p.cmd.Env = append(os.Environ(), p.Env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); f.Close(); close(p.done) }()
	if p.Health == "" {
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited at start; see %s", p.Name, p.Log)
		default:
		}
		if r, err := http.Get(p.Health); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: not healthy after 60s; see %s", p.Name, p.Log)
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Stop ends the process (SIGTERM, then SIGKILL after 15 s) and waits.
func (p *Proc) Stop() {
	if p.cmd == nil || p.done == nil {
		return
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// Kill9 kills the process with SIGKILL and waits.
func (p *Proc) Kill9() {
	if p.cmd == nil || p.done == nil {
		return
	}
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// freePort asks the kernel for an unused TCP port.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// repoRoot finds the module root from the working directory.
func repoRoot() (string, error) {
	d, _ := os.Getwd()
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/ticketing/ticketing\n") {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", fmt.Errorf("not inside the ticketing module")
		}
		d = p
	}
}

// buildBinary builds the ticketing binary into dir.
func buildBinary(root, dir string) (string, error) {
	bin := filepath.Join(dir, "ticketing")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// redisServer returns a private redis-server on a free port (no
// persistence, like the deployment's).
func redisServer(dir string, port int) *Proc {
	return &Proc{Name: "redis", Path: "redis-server", Log: filepath.Join(dir, "redis.log"),
		Args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}}
}

// waitTCP waits until addr accepts connections.
func waitTCP(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not listening after %s", addr, d)
}

// PrivatePostgres is a throwaway cluster (initdb into a temp dir) on its own
// port, for the Postgres-restart scenario.
type PrivatePostgres struct {
	Dir, Bin string
	Port     int
}

// Start initialises (once) and starts the cluster.
func (pg *PrivatePostgres) Start() error {
	data := filepath.Join(pg.Dir, "data")
	if _, err := os.Stat(data); err != nil {
		if os.Geteuid() == 0 { // initdb refuses root: the cluster belongs to postgres
			if out, err := exec.Command("chown", "-R", "postgres", pg.Dir).CombinedOutput(); err != nil {
				return fmt.Errorf("chown: %v\n%s", err, out)
			}
		}
		out, err := pg.cmd("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8").CombinedOutput()
		if err != nil {
			return fmt.Errorf("initdb: %v\n%s", err, out)
		}
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off", pg.Port, pg.Dir)
	out, err := pg.cmd("pg_ctl", "-D", data, "-l", filepath.Join(pg.Dir, "pg.log"), "-o", opts, "-w", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	return nil
}

// Stop stops the cluster (mode fast or immediate).
func (pg *PrivatePostgres) Stop(mode string) error {
	out, err := pg.cmd("pg_ctl", "-D", filepath.Join(pg.Dir, "data"), "-m", mode, "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// cmd runs a Postgres tool, as the postgres user when we are root.
func (pg *PrivatePostgres) cmd(tool string, args ...string) *exec.Cmd {
	bin := filepath.Join(pg.Bin, tool)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
	}
	return exec.Command(bin, args...)
}

// URL is the cluster's postgres database URL.
func (pg *PrivatePostgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.Port)
}

// scrape reads one metric (summed over its label sets) from a /metrics URL;
// ok is false when the endpoint did not answer.
func scrape(ctx context.Context, c *http.Client, u, name string) (float64, bool) {
	m, ok := scrapeAll(ctx, c, u)
	if !ok {
		return 0, false
	}
	return m.value(name)
}

// metricsPage is one scrape of a /metrics page, a line per series.
type metricsPage []string

// scrapeAll fetches a /metrics page.
func scrapeAll(ctx context.Context, c *http.Client, u string) (metricsPage, bool) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	r, err := c.Do(req)
	if err != nil {
		return nil, false
	}
	defer r.Body.Close()
	var buf strings.Builder
	_, _ = bufCopy(&buf, r)
	return strings.Split(buf.String(), "\n"), true
}

// value is the sum of a metric's series (name), or one series when name
// carries its labels (name{label="v"}).
func (m metricsPage) value(name string) (float64, bool) {
	var sum float64
	found := false
	for _, l := range m {
		if strings.HasPrefix(l, name+" ") || (!strings.Contains(name, "{") && strings.HasPrefix(l, name+"{")) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
			found = true
		}
	}
	return sum, found
}

// label is the value of label key of the first series of metric name whose
// value is 1 (a one-hot gauge such as the admission rate's reason).
func (m metricsPage) label(name, key string) string {
	for _, l := range m {
		if !strings.HasPrefix(l, name+"{") || !strings.HasSuffix(l, "} 1") {
			continue
		}
		_, rest, ok := strings.Cut(l, key+`="`)
		if v, _, ok2 := strings.Cut(rest, `"`); ok && ok2 {
			return v
		}
	}
	return ""
}

func bufCopy(b *strings.Builder, r *http.Response) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Body.Read(buf)
		b.Write(buf[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

// frontDoor is the public address of the API instances (PUBLIC_BASE_URL,
// where paysim sends webhooks), as a load balancer would be: round robin,
// and the next instance when one does not answer.
func frontDoor(bases []string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var next atomic.Uint64
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		for range bases {
			base := bases[int(next.Add(1))%len(bases)]
			out, _ := http.NewRequestWithContext(req.Context(), req.Method, base+req.URL.RequestURI(), bytes.NewReader(body))
			out.Header = req.Header.Clone()
			resp, err := hc.Do(out)
			if err != nil {
				continue
			}
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
			resp.Body.Close()
			return
		}
		http.Error(w, "no instance answered", http.StatusBadGateway)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// startHAProxy writes the configuration of scripts/lib.sh haproxy_config
// for the API ports (installing HAProxy first when it is missing) and
// starts it on a free port; it returns its URL and that of the payment
// provider's own frontend (PAYMENTS_WEBHOOK_BASE_URL), which the fans'
// connections cannot fill.
func (r *Run) startHAProxy(ports []int) (public, hooks string, err error) {
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	listen, hport := freePort(), freePort()
	args := []string{"-c", `. scripts/lib.sh && ensure_haproxy && haproxy_config "$@"`, "haproxy_config",
		strconv.Itoa(listen), "--webhooks", strconv.Itoa(hport)}
	for _, p := range ports {
		args = append(args, strconv.Itoa(p))
	}
	cmd := exec.Command("bash", args...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	cfg, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("haproxy_config: %w", err)
	}
	file := filepath.Join(r.dir, "haproxy.cfg")
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		return "", "", err
	}
	bin := "haproxy"
	if _, err := exec.LookPath(bin); err != nil {
		bin = "/usr/sbin/haproxy"
	}
	r.lb = &Proc{Name: "haproxy", Path: bin, Args: []string{"-f", file, "-db"}, Log: filepath.Join(r.dir, "haproxy.log")}
	if err := r.lb.Start(); err != nil {
		return "", "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d", listen), fmt.Sprintf("http://127.0.0.1:%d", hport), nil
}

// waitHealthy polls u until it answers 200.
func waitHealthy(u string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: not healthy after %s", u, within)
}
