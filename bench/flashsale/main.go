// Command flashsale is the flash-sale load generator: it starts its own
// `ticketing paysim` and `ticketing serve` processes (plus a private
// redis-server, and for one chaos scenario a private Postgres cluster) on a
// fresh database, creates one hot queue-protected event (seated sections
// plus a GA floor) through the admin GraphQL API, and runs N buyers through
// the public API only: joinQueue → admission → live seat map → createHold
// (with real contention) → createOrder → the provider's hosted checkout with
// a fault mix → the order's final state. It ends with the audit (audit.Run
// and `ticketing audit --event`), a linearizability check of every seat's
// observed history (porcupine), and a text + HTML report in bench/out/.
//
//	go run ./bench/flashsale -buyers 2000
//	go run ./bench/flashsale -buyers 20000 -seats 10000 -ga 10000 -sections 4
//	go run ./bench/flashsale -scenario redis     # see bench/chaos/run.sh
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

func main() { os.Exit(run()) }

func run() int {
	cfg := DefaultConfig()
	cfg.Flags(flag.CommandLine)
	cpuprofile := flag.String("cpuprofile", "", "write this generator's own CPU profile of the whole run to this file")
	flag.Parse()
	raiseFileLimit()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "flashsale:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Execute(ctx, cfg, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flashsale:", err)
		return 2
	}
	if !res.Clean() {
		return 1
	}
	return 0
}

// Config is every knob of a run.
type Config struct {
	Buyers, Seats, GA, Sections, HoldSeconds, Window, HoldAttempts, APIs, Paysims, Streams int
	AdmitRate, SnapshotFrac                                                                float64
	Profile, Ramp, Think, PollEvery, OrderSettle, Settle, MaxDuration, FaultPhase          time.Duration
	ReconcileAfter, ChaosFor, AdmissionTTL                                                 time.Duration
	Faults, SplitWorkers, Keep, Progress, PublicPerInstance                                bool
	// LB is "haproxy" (default) or "round-robin".
	LB                                 string
	DBBase, Bin, Out, Scenario, Secret string
}

// DefaultConfig is a quick run: 2,000 buyers on 1,000 seats + 1,000 GA.
func DefaultConfig() Config {
	return Config{
		Buyers: 2000, Seats: 1000, GA: 1000, Sections: 1, HoldSeconds: 45, HoldAttempts: 5, APIs: 1, Paysims: 1, Streams: 6000,
		SnapshotFrac: 0.02,
		Ramp:         20 * time.Second, Think: 3 * time.Second, PollEvery: 1500 * time.Millisecond, OrderSettle: 2 * time.Minute,
		Settle: 4 * time.Minute, MaxDuration: 15 * time.Minute, FaultPhase: 15 * time.Second, ReconcileAfter: 10 * time.Second,
		AdmissionTTL: 2 * time.Minute,
		Faults:       true, Progress: true, LB: "haproxy",
		DBBase: "postgres:///postgres?host=/var/run/postgresql&user=postgres", Out: "bench/out",
		Secret: "flashsale-dev-secret-0123456789abcdef",
	}
}

// Flags registers the knobs on fs.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.Buyers, "buyers", c.Buyers, "simulated buyers")
	fs.IntVar(&c.Seats, "seats", c.Seats, "seats of the hot event (seated sections)")
	fs.IntVar(&c.GA, "ga", c.GA, "general admission floor capacity")
	fs.IntVar(&c.Sections, "sections", c.Sections, "seated sections (rows of up to 100 seats)")
	fs.IntVar(&c.HoldSeconds, "hold", c.HoldSeconds, "holdDurationSeconds of the hot event")
	fs.Float64Var(&c.AdmitRate, "admit-rate", c.AdmitRate, "QUEUE_ADMIT_RATE (admissions/s; 0: the server's default, with the adaptive controller a ceiling)")
	fs.IntVar(&c.Window, "window", c.Window, "QUEUE_WINDOW (admitted buyers in checkout at once; 0: the server's default)")
	fs.IntVar(&c.HoldAttempts, "hold-attempts", c.HoldAttempts, "createHold attempts per buyer (another choice after SEAT_UNAVAILABLE)")
	fs.IntVar(&c.APIs, "apis", c.APIs, "API instances (behind -lb)")
	fs.StringVar(&c.LB, "lb", c.LB, "what is in front of the API instances: haproxy (Debian's, installed when missing) or round-robin (the generator alternates between the instances; the webhooks' front door is an in-process proxy)")
	fs.IntVar(&c.Streams, "streams", c.Streams, "most buyers holding a subscription (queueUpdates, orderUpdates) at once; the others poll, the web app's fallback (each stream is a connection, and a file descriptor in this process, the proxy and the server)")
	fs.IntVar(&c.Paysims, "paysims", c.Paysims, "paysim instances (they share the database; each delivers the notifications of up to 32 payments at once)")
	fs.BoolVar(&c.SplitWorkers, "split-workers", c.SplitWorkers, "API instances with --workers=false plus one separate worker instance")
	fs.Float64Var(&c.SnapshotFrac, "snapshot-frac", c.SnapshotFrac, "share of buyers that also load the full Event.seatMap snapshot")
	fs.DurationVar(&c.Ramp, "ramp", c.Ramp, "buyers arrive uniformly over this time")
	fs.DurationVar(&c.Profile, "profile", c.Profile, "record a CPU profile of the first API instance for this long, from the end of the ramp (0: none)")
	fs.DurationVar(&c.Think, "think", c.Think, "most time a buyer takes before paying")
	fs.DurationVar(&c.PollEvery, "poll", c.PollEvery, "order polling interval")
	fs.DurationVar(&c.OrderSettle, "order-settle", c.OrderSettle, "a buyer waits for the final state until its hold expiry plus this")
	fs.DurationVar(&c.Settle, "settle", c.Settle, "after the sale, wait at most this long for the audit to come out clean")
	fs.DurationVar(&c.MaxDuration, "max-duration", c.MaxDuration, "bound of the sale itself (buyers still running are stopped)")
	fs.DurationVar(&c.FaultPhase, "fault-phase", c.FaultPhase, "length of each global paysim fault phase")
	fs.DurationVar(&c.ReconcileAfter, "reconcile-after", c.ReconcileAfter, "PAYMENTS_RECONCILE_AFTER of the servers (interval: half)")
	fs.DurationVar(&c.AdmissionTTL, "admission-ttl", c.AdmissionTTL, "QUEUE_ADMISSION_TTL (after a Redis restart nobody is admitted for up to this long)")
	fs.DurationVar(&c.ChaosFor, "chaos-for", c.ChaosFor, "outage length of the scenario (0: the scenario's default)")
	fs.BoolVar(&c.Faults, "faults", c.Faults, "cycle paysim's global faults (duplicate, delayed+reordered, dropped webhooks, create timeouts)")
	fs.BoolVar(&c.PublicPerInstance, "public-per-instance", c.PublicPerInstance,
		"give each API instance its own PUBLIC_BASE_URL instead of the shared front door (reproduces a payment bug, see bench/RESULTS.md)")
	fs.BoolVar(&c.Keep, "keep", c.Keep, "keep the database and logs")
	fs.BoolVar(&c.Progress, "progress", c.Progress, "progress bar on stderr")
	fs.StringVar(&c.DBBase, "db", c.DBBase, "Postgres server (a fresh database is created on it and dropped after)")
	fs.StringVar(&c.Bin, "bin", c.Bin, "ticketing binary (default: built from the module)")
	fs.StringVar(&c.Out, "out", c.Out, "report directory (relative to the module root)")
	fs.StringVar(&c.Scenario, "scenario", c.Scenario, "chaos scenario: "+scenarioNames())
}

// raiseFileLimit lets this process and the servers it starts (they inherit
// it) hold one connection per waiting buyer: every buyer in the queue keeps
// a subscription open, as the web app does. Raising the hard limit needs
// privileges; without them the soft limit goes up to the hard one.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return
	}
	want := syscall.Rlimit{Cur: 1 << 18, Max: max(l.Max, 1<<18)}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
