// Package audit explains an event's inventory and money and lists what
// should never happen: a seat sold twice, a sold seat without a valid
// ticket, a ticket without a sale, a succeeded payment with neither a
// confirmed order nor a refund, a refund pending too long, inventory that
// does not add up to capacity, and (when the provider is reachable) our
// settled state disagreeing with the provider's. `ticketing audit`, the
// tests and the load generator all call Run.
package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// Options tune a run.
type Options struct {
	// RefundGrace: a refund pending longer than this is an anomaly (15m).
	RefundGrace time.Duration
	// Provider, if set, is asked for each payment's state.
	Provider payments.Provider
	// ProviderTimeout bounds each provider call (5s).
	ProviderTimeout time.Duration
}

// Anomaly is one thing that should not be.
type Anomaly struct {
	Kind   string
	Detail string
}

// PaymentLine is a payment with where its money is.
type PaymentLine struct {
	store.AuditPayment
	// ProviderStatus is the provider's view ("" when not asked,
	// "unreachable: ..." when the call failed).
	ProviderStatus string
}

// Report is the result of a run.
type Report struct {
	EventID   string
	Units     []store.AuditUnit
	Payments  []PaymentLine
	Anomalies []Anomaly
}

// ErrNoEvent reports an unknown event id.
var ErrNoEvent = errors.New("audit: no such event")

// Run audits the event.
func Run(ctx context.Context, st *store.Store, eventID string, opt Options) (Report, error) {
	if opt.RefundGrace <= 0 {
		opt.RefundGrace = 15 * time.Minute
	}
	if opt.ProviderTimeout <= 0 {
		opt.ProviderTimeout = 5 * time.Second
	}
	r := Report{EventID: eventID}
	ok, err := st.EventExists(ctx, eventID)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, ErrNoEvent
	}
	if r.Units, err = st.AuditUnits(ctx, eventID); err != nil {
		return r, err
	}
	ps, err := st.AuditPayments(ctx, eventID)
	if err != nil {
		return r, err
	}
	for _, c := range store.AuditChecks {
		lines, err := st.AuditRun(ctx, c, eventID, opt.RefundGrace)
		if err != nil {
			return r, err
		}
		for _, l := range lines {
			r.Anomalies = append(r.Anomalies, Anomaly{Kind: c.Kind, Detail: l})
		}
	}
	for _, p := range ps {
		if p.Status == "UNKNOWN" && p.ProviderRef == nil && time.Since(p.CreatedAt) > payments.KeyWindow {
			r.Anomalies = append(r.Anomalies, Anomaly{"PAYMENT_OUTCOME_UNKNOWN", fmt.Sprintf(
				"payment %s (order %s): the provider never answered its create within its idempotency window (key %s, since %s): find it at the provider by reference %s",
				p.ID, p.OrderID, p.IdempotencyKey, p.CreatedAt.Format(time.RFC3339), p.ID)})
		}
		line := PaymentLine{AuditPayment: p}
		if opt.Provider != nil && p.ProviderRef != nil {
			line.ProviderStatus = providerView(ctx, opt, p, &r)
		}
		r.Payments = append(r.Payments, line)
	}
	return r, nil
}

// settledAs is the provider status our settled status implies.
var settledAs = map[string]payments.Status{
	"SUCCEEDED":      payments.StatusSucceeded,
	"FAILED":         payments.StatusFailed,
	"CANCELLED":      payments.StatusCancelled,
	"REFUNDED":       payments.StatusRefunded,
	"REFUND_PENDING": payments.StatusSucceeded, // refund not yet confirmed
}

func providerView(ctx context.Context, opt Options, p store.AuditPayment, r *Report) string {
	ctx, cancel := context.WithTimeout(ctx, opt.ProviderTimeout)
	defer cancel()
	pp, err := opt.Provider.GetPayment(ctx, *p.ProviderRef)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	want, settled := settledAs[p.Status]
	switch {
	case settled && p.Status == "REFUND_PENDING" && pp.Status == payments.StatusRefunded:
		// refunded at the provider, our record catches up (webhook or job)
	case settled && pp.Status != want:
		r.Anomalies = append(r.Anomalies, Anomaly{"PROVIDER_MISMATCH",
			fmt.Sprintf("payment %s is %s here but %s at the provider", p.ID, p.Status, pp.Status)})
	case !settled && pp.Status.Final() && time.Since(p.UpdatedAt) > opt.RefundGrace:
		r.Anomalies = append(r.Anomalies, Anomaly{"UNSETTLED_PAYMENT",
			fmt.Sprintf("payment %s is still %s here but %s at the provider", p.ID, p.Status, pp.Status)})
	}
	return string(pp.Status)
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Write prints the report for people.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "event %s\n\nseats and units (%d):\n", r.EventID, len(r.Units))
	for _, u := range r.Units {
		what := deref(u.SeatLabel, "")
		if u.UnitNo != nil {
			what = fmt.Sprintf("GA #%d", *u.UnitNo)
		}
		fmt.Fprintf(w, "  %-14s %-10s %-9s", u.SectionName, what, u.Status)
		if u.Status != "AVAILABLE" {
			fmt.Fprintf(w, " owner=%s hold=%s", deref(u.Owner, "-"), deref(u.HoldID, "-"))
		}
		if u.OrderID != nil {
			fmt.Fprintf(w, " order=%s(%s)", *u.OrderID, deref(u.OrderStatus, ""))
		}
		if u.PaymentID != nil {
			fmt.Fprintf(w, " payment=%s", *u.PaymentID)
		}
		if u.TicketID != nil {
			fmt.Fprintf(w, " ticket=%s(%s)", *u.TicketID, deref(u.TicketStatus, ""))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\npayments (%d):\n", len(r.Payments))
	for _, p := range r.Payments {
		fmt.Fprintf(w, "  %s order=%s(%s) owner=%s attempt=%d %d %s ours=%s provider=%s ref=%s last=%q\n",
			p.ID, p.OrderID, p.OrderStatus, p.Owner, p.Attempt, p.Amount, p.Currency, p.Status,
			orDash(p.ProviderStatus), deref(p.ProviderRef, "-"), p.LastReason)
	}
	fmt.Fprintf(w, "\nanomalies (%d):\n", len(r.Anomalies))
	for _, a := range r.Anomalies {
		fmt.Fprintf(w, "  %s: %s\n", a.Kind, a.Detail)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
