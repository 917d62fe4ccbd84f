package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// CheckFunc reports whether a dependency answers; nil means up. Return
// ErrNotConfigured for a dependency this process does not use.
type CheckFunc func(ctx context.Context) error

// ErrNotConfigured marks a dependency that is not wired (yet) in this
// process; /readyz shows it as "unknown" and it never fails readiness.
var ErrNotConfigured = errors.New("not configured")

// checkTimeout bounds each readiness check.
const checkTimeout = 2 * time.Second

type readinessCheck struct {
	fn       CheckFunc
	critical bool
}

// readiness is the registry behind /readyz.
type readiness struct {
	mu     sync.Mutex
	checks map[string]readinessCheck
}

// AddReadinessCheck registers (or replaces) the check of a named dependency.
// /readyz answers 503 while any critical check fails; non-critical ones are
// only reported. postgres (critical) and redis are registered by New; search
// and payments are placeholders until their packages register real checks.
func (a *App) AddReadinessCheck(name string, fn CheckFunc, critical bool) {
	r := &a.platform.readiness
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checks == nil {
		r.checks = map[string]readinessCheck{}
	}
	r.checks[name] = readinessCheck{fn: fn, critical: critical}
}

// PostgresCheck pings the pool.
func PostgresCheck(pool *pgxpool.Pool) CheckFunc {
	return func(ctx context.Context) error { return pool.Ping(ctx) }
}

// RedisCheck pings Redis.
func RedisCheck(c redis.UniversalClient) CheckFunc {
	return func(ctx context.Context) error { return c.Ping(ctx).Err() }
}

// DependencyState is one dependency in the /readyz body.
type DependencyState struct {
	// Status is "up", "down" or "unknown" (not configured).
	Status    string `json:"status"`
	Critical  bool   `json:"critical"`
	Error     string `json:"error,omitempty"`
	LatencyMS int64  `json:"latencyMs"`
}

// Readiness is the /readyz body.
type Readiness struct {
	// Status is "ready" or "unavailable".
	Status string `json:"status"`
	// Mode is how reads are served (store.Reads.Mode): "read-write",
	// "read-only: replica" (the primary is down, browsing reads the
	// replica) or "read-only: cache" (both unreachable: the last good
	// answers, at most store.StaleFor old). Holds and orders answer
	// SERVICE_UNAVAILABLE in both read-only modes.
	Mode         string                     `json:"mode,omitempty"`
	Dependencies map[string]DependencyState `json:"dependencies"`
}

// CheckReadiness runs every check concurrently.
func (a *App) CheckReadiness(ctx context.Context) Readiness {
	r := &a.platform.readiness
	r.mu.Lock()
	names := make([]string, 0, len(r.checks))
	checks := make([]readinessCheck, 0, len(r.checks))
	for n := range r.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		checks = append(checks, r.checks[n])
	}
	r.mu.Unlock()

	states := make([]DependencyState, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			defer cancel()
			start := time.Now()
			err := c.fn(cctx)
			s := DependencyState{Status: "up", Critical: c.critical, LatencyMS: time.Since(start).Milliseconds()}
			switch {
			case errors.Is(err, ErrNotConfigured):
				s.Status, s.Critical = "unknown", false
			case err != nil:
				s.Status, s.Error = "down", err.Error()
			}
			states[i] = s
		})
	}
	wg.Wait()
	out := Readiness{Status: "ready", Dependencies: map[string]DependencyState{}}
	if a.Reads != nil {
		out.Mode = a.Reads.Mode()
	}
	for i, n := range names {
		out.Dependencies[n] = states[i]
		if states[i].Critical && states[i].Status == "down" {
			out.Status = "unavailable"
		}
	}
	return out
}

func (a *App) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

func (a *App) readyz(w http.ResponseWriter, r *http.Request) {
	res := a.CheckReadiness(r.Context())
	for name, s := range res.Dependencies {
		if s.Status == "down" {
			a.Log.WarnContext(r.Context(), "readiness check failed", "dependency", name, "critical", s.Critical, "err", s.Error)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if res.Status != "ready" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(res)
}
