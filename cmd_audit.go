package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ticketing/ticketing/app"
	"github.com/ticketing/ticketing/audit"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// cmdAudit explains every seat and payment of an event and lists the
// anomalies. Exit status: 0 clean (everything checked, nothing wrong), 1
// anomalies, 2 a usage error or a check that could not be made (a bad or
// unknown event id, the database or the provider unreachable): never 0
// when something went unchecked. The provider (PAYMENTS_PROVIDER) is asked
// for each payment's state unless --provider=false.
func cmdAudit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, _ *slog.Logger) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	usage := func(w io.Writer) {
		fmt.Fprint(w, `usage: ticketing audit --event ID [flags]

Explains every seat and payment of an event: a summary (seats by state,
payments by state, money taken, refunded and pending), the anomalies, then
the seats held or sold and the payments. Exit status: 0 clean, 1 anomalies,
2 usage error or something could not be checked (bad id, database or
provider unreachable).

flags:
`)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fs.Usage = func() {} // printed below, on stdout for --help
	event := fs.String("event", "", "event id (required)")
	grace := fs.Duration("refund-grace", 15*time.Minute, "a refund pending longer than this is an anomaly")
	ask := fs.Bool("provider", true, "ask the payment provider for each payment's state")
	anomaliesOnly := fs.Bool("anomalies-only", false, "print the summary and the anomalies, not every seat and payment")
	allSeats := fs.Bool("all-seats", false, "list the free seats and units too (by default they are only counted)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return nil
		}
		usage(stderr)
		return exitCode(2)
	}
	if *event == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "audit: --event ID is required (and nothing else)")
		return exitCode(2)
	}
	fail := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "audit: "+format+"\n", a...)
		return exitCode(2)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fail("%v", err)
	}
	pool, err := app.OpenPool(ctx, cfg)
	if err != nil {
		return fail("%v", err)
	}
	defer pool.Close()
	opt := audit.Options{RefundGrace: *grace}
	if *ask {
		p, err := payments.NewProvider(cfg.PaymentsProvider, cfg.PaymentsBaseURL, cfg.PaymentsSecret, cfg.StripeSecretKey)
		if err != nil {
			return fail("payments provider: %v (--provider=false audits without it)", err)
		}
		opt.Provider = p
	}
	r, err := audit.Run(ctx, store.New(pool), *event, opt)
	switch {
	case errors.Is(err, audit.ErrBadEventID):
		return fail("--event %q is not an event id (a UUID)", *event)
	case errors.Is(err, audit.ErrNoEvent):
		return fail("no event %s", *event)
	case err != nil:
		return fail("could not audit: %v", err)
	}
	wo := audit.WriteOptions{AnomaliesOnly: *anomaliesOnly, AllSeats: *allSeats}
	if *asJSON {
		if err := r.WriteJSON(stdout, wo); err != nil {
			return fail("%v", err)
		}
	} else {
		r.Write(stdout, wo)
	}
	switch r.Outcome() {
	case audit.Incomplete:
		fmt.Fprintf(stderr, "audit: incomplete: %d could not be checked\n", len(r.Unchecked))
		return exitCode(2)
	case audit.Anomalous:
		return exitCode(1)
	}
	return nil
}
