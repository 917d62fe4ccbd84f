// Command ticketing is the whole product in one binary: the API server, the
// sandbox payment provider, migrations, demo data and operational tools.
// See README.md and ../shared/api/README.md for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var exit exitCode
		if errors.As(err, &exit) {
			os.Exit(int(exit))
		}
		fmt.Fprintln(os.Stderr, "ticketing:", err)
		os.Exit(1)
	}
}

// exitCode ends the process with that status and no further message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

const usage = `usage: ticketing <command> [flags]

commands:
  serve     API, web app and background workers (--workers=false for API only)
  migrate   apply the database migrations
  seed      load data: --demo for the demo catalog, --events N for a large one
  token     print a development token: --sub USER [--roles admin] [--ttl 1h]
  paysim    run the sandbox payment provider on PAYSIM_ADDR
  reindex   rebuild the search projection from Postgres
  audit     explain every seat and payment of an event: --event ID
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(2)
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	cmd, args := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(ctx, args, getenv, log)
	case "token":
		return cmdToken(args, getenv, stdout, stderr)
	case "migrate":
		return cmdMigrate(ctx, getenv, log)
	case "seed":
		return cmdSeed(ctx, args, getenv, stdout, log)
	case "paysim":
		return cmdPaysim(ctx, getenv, log)
	case "audit":
		return cmdAudit(ctx, args, getenv, stdout, stderr, log)
	case "reindex":
		return cmdReindex(ctx, getenv, stdout, log)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", cmd, usage)
		return exitCode(2)
	}
}

func cmdMigrate(ctx context.Context, getenv func(string) string, log *slog.Logger) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	return app.Migrate(ctx, cfg, log)
}

func cmdServe(ctx context.Context, args []string, getenv func(string) string, log *slog.Logger) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	workers := fs.Bool("workers", true, "run the background workers (relay, sweeper, reconciler)")
	if err := fs.Parse(args); err != nil {
		return exitCode(2)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		log.Warn("config: " + w)
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if *workers {
		go a.RunWorkers(ctx)
	}
	// Not listening yet: a load balancer sends it nothing (connections
	// are refused and go to the other instances) until the pages most
	// likely browsed are in memory (WARMUP_EVENTS, WARMUP_TIMEOUT).
	a.Warm(ctx)
	// No ReadTimeout/WriteTimeout: they would cut WebSocket and SSE streams.
	// Bodies are read (with a deadline and size limit) by the app's body
	// middleware. Long-lived streams hang off baseCtx, which shutdown cancels
	// after a short grace so Shutdown does not wait on them.
	baseCtx, cancelStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStreams()
	srv := &http.Server{
		Addr:              cfg.HTTPAddr,
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	srv.RegisterOnShutdown(func() { time.AfterFunc(5*time.Second, cancelStreams) })
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	if cfg.DebugAddr != "" {
		// Profiles only, on their own listener: never on the public one.
		dbg := http.NewServeMux()
		dbg.HandleFunc("/debug/pprof/", pprof.Index)
		dbg.HandleFunc("/debug/pprof/profile", pprof.Profile)
		dbg.HandleFunc("/debug/pprof/trace", pprof.Trace)
		dbg.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		go func() {
			errc <- (&http.Server{Addr: cfg.DebugAddr, Handler: dbg, ReadHeaderTimeout: 10 * time.Second}).ListenAndServe()
		}()
		log.Info("pprof listening", "addr", cfg.DebugAddr)
	}
	log.Info("listening", "addr", cfg.HTTPAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
