package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/demo"
)

// cmdSeed loads data: `seed --demo` the demo catalog (idempotent),
// `seed --events N` N generated events for benchmarks (also idempotent per N).
func cmdSeed(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	demoFlag := fs.Bool("demo", false, "load the demo catalog (idempotent)")
	events := fs.Int("events", 0, "add N generated events (small venues in the demo cities, next 12 months), for benchmarks")
	if err := fs.Parse(args); err != nil {
		return exitCode(2)
	}
	if !*demoFlag && *events <= 0 {
		fmt.Fprintln(fs.Output(), "seed: give --demo or --events N")
		return exitCode(2)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if *demoFlag {
		start := time.Now()
		c, err := demo.Seed(ctx, a.Catalog, a.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "demo catalog: created %d venues, %d artists, %d events in %v\n",
			c.Venues, c.Artists, c.Events, time.Since(start).Round(time.Millisecond))
	}
	if *events > 0 {
		start := time.Now()
		c, err := demo.SeedEvents(ctx, a.Catalog, a.Now(), *events)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "generated catalog: created %d events in %v\n", c.Events, time.Since(start).Round(time.Millisecond))
	}
	return nil
}
