package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// scenario is a chaos action injected in the middle of a sale.
type scenario struct {
	// setup adjusts the configuration (instances, faults).
	setup func(*Config)
	// run waits for its moment and breaks something, then repairs it.
	run func(context.Context, *Run)
}

var scenarios = map[string]scenario{
	"": {setup: func(*Config) {}, run: func(context.Context, *Run) {}},
	// Two API instances behind HAProxy (-lb, the default), no fault.
	"two-apis": {setup: func(c *Config) { c.APIs = 2 }, run: func(context.Context, *Run) {}},
	// kill -9 of one of two API instances in the middle of checkouts, then restart.
	"kill-api": {setup: func(c *Config) { c.APIs = 2 }, run: func(ctx context.Context, r *Run) {
		if !r.midSale(ctx) {
			return
		}
		r.Note("CHAOS kill -9 api0 (%d orders created, %d buyers in checkout)", r.ordersCreated.Load(), r.inCheckout.Load())
		r.apis[0].Kill9()
		sleep(ctx, r.chaosFor(5*time.Second))
		r.restart(r.apis[0])
	}},
	// Redis (private) stopped for 30 s; it comes back empty (no persistence).
	"redis": {setup: func(*Config) {}, run: func(ctx context.Context, r *Run) {
		if !r.midSale(ctx) {
			return
		}
		r.Note("CHAOS redis-server stopped")
		r.redis.Stop()
		sleep(ctx, r.chaosFor(30*time.Second))
		r.restart(r.redis)
	}},
	// The relay (the only worker instance) stopped for 60 s, then restarted.
	"relay": {setup: func(c *Config) { c.SplitWorkers = true }, run: func(ctx context.Context, r *Run) {
		if !r.midSale(ctx) {
			return
		}
		r.Note("CHAOS worker instance (relay, sweeper, reconciler, queue controller) stopped")
		r.worker.Stop()
		sleep(ctx, r.chaosFor(60*time.Second))
		r.restart(r.worker)
	}},
	// Every webhook dropped for a minute; the reconciler settles them.
	"webhooks": {setup: func(c *Config) { c.Faults = false }, run: func(ctx context.Context, r *Run) {
		if !r.midSale(ctx) {
			return
		}
		r.Note("CHAOS paysim drop_webhooks on")
		_ = r.C.JSON(ctx, http.MethodPost, r.paysimURL+"/v1/faults", map[string]any{"drop_webhooks": true})
		sleep(ctx, r.chaosFor(60*time.Second))
		_ = r.C.JSON(context.Background(), http.MethodDelete, r.paysimURL+"/v1/faults", nil)
		r.Note("CHAOS paysim faults reset")
	}},
	// A private Postgres cluster restarted (fast shutdown) mid-sale.
	"postgres": {setup: func(*Config) {}, run: func(ctx context.Context, r *Run) {
		if !r.midSale(ctx) {
			return
		}
		r.Note("CHAOS postgres stop (fast)")
		if err := r.pg.Stop("fast"); err != nil {
			r.Note("pg stop: %v", err)
		}
		sleep(ctx, r.chaosFor(10*time.Second))
		if err := r.pg.Start(); err != nil {
			r.Note("pg start: %v", err)
		}
		r.Note("CHAOS postgres started again")
	}},
}

func scenarioNames() string {
	var n []string
	for k := range scenarios {
		if k != "" {
			n = append(n, k)
		}
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func scenarioFor(name string) (scenario, error) {
	s, ok := scenarios[name]
	if !ok {
		return s, fmt.Errorf("unknown scenario %q (%s)", name, scenarioNames())
	}
	return s, nil
}

// midSale waits until a tenth of the buyers have orders (checkouts under
// way); false if the sale ended first.
func (r *Run) midSale(ctx context.Context) bool {
	for ctx.Err() == nil {
		if r.ordersCreated.Load() >= int64(max(5, r.Cfg.Buyers/10)) {
			return true
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return false
}

func (r *Run) chaosFor(def time.Duration) time.Duration {
	if r.Cfg.ChaosFor > 0 {
		return r.Cfg.ChaosFor
	}
	return def
}

// restart starts a stopped process again, noting how long it took.
func (r *Run) restart(p *Proc) {
	start := time.Now()
	if err := p.Start(); err != nil {
		r.Note("CHAOS restart %s FAILED: %v", p.Name, err)
		return
	}
	r.Note("CHAOS %s restarted (healthy after %s)", p.Name, time.Since(start).Round(10*time.Millisecond))
}
