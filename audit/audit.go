// Package audit explains an event's inventory and money and lists what
// should never happen: a seat sold twice, a sold seat without a valid
// ticket, a ticket without a sale, a succeeded payment with neither a
// confirmed order nor a refund, a refund pending too long, inventory that
// does not add up to capacity, and (when the provider is reachable) our
// settled state disagreeing with the provider's. `ticketing audit`, the
// tests and the load generator all call Run.
//
// A report is clean only when everything was checked: a payment the
// provider could not be asked about makes it incomplete (Report.Outcome),
// never clean.
//
// Adding a check is one change in one place: a query in store.AuditChecks
// (each row one anomaly), or a function in goChecks below (for what needs
// Go or the provider's answers). The summary, the text and JSON output and
// the exit status take any anomaly kind as it comes.
package audit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// Options tune a run.
type Options struct {
	// RefundGrace: a refund pending longer than this is an anomaly (15m).
	RefundGrace time.Duration
	// Provider, if set, is asked for each payment's state. Without it the
	// report says the provider was not asked.
	Provider payments.Provider
	// ProviderTimeout bounds each provider call (5s).
	ProviderTimeout time.Duration
}

// Anomaly is one thing that should not be.
type Anomaly struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// PaymentLine is a payment with where its money is.
type PaymentLine struct {
	store.AuditPayment
	// ProviderStatus is the provider's view: "" when not asked (no
	// provider, or no provider reference yet).
	ProviderStatus string
	// ProviderError is why the provider could not be asked about it; such a
	// payment was not checked (Report.Unchecked).
	ProviderError string
}

// Report is the result of a run.
type Report struct {
	EventID   string
	Units     []store.AuditUnit
	Payments  []PaymentLine
	Anomalies []Anomaly
	// ProviderAsked is whether a provider was given to ask.
	ProviderAsked bool
	// Unchecked says what could not be checked (a payment the provider did
	// not answer about); a report with any is incomplete, never clean.
	Unchecked []string
}

// Outcome is what a report amounts to.
type Outcome string

// The outcomes, each with its exit status in `ticketing audit`.
const (
	Clean      Outcome = "clean"      // everything checked, nothing wrong: exit 0
	Anomalous  Outcome = "anomalies"  // everything checked, anomalies: exit 1
	Incomplete Outcome = "incomplete" // something could not be checked: exit 2, whatever was found
)

// Outcome is Incomplete if anything went unchecked, else Anomalous if
// there is an anomaly, else Clean.
func (r Report) Outcome() Outcome {
	switch {
	case len(r.Unchecked) > 0:
		return Incomplete
	case len(r.Anomalies) > 0:
		return Anomalous
	default:
		return Clean
	}
}

var (
	// ErrNoEvent reports an unknown event id.
	ErrNoEvent = errors.New("audit: no such event")
	// ErrBadEventID reports an event id that is not one (event ids are UUIDs).
	ErrBadEventID = errors.New("audit: not an event id (a UUID)")
)

// goChecks are the checks written in Go, run over what Run gathered (the
// SQL checks are store.AuditChecks).
var goChecks = []func(r *Report, opt Options) []Anomaly{
	outcomeUnknown,
	providerDisagrees,
}

// Run audits the event. An error means the audit could not run (the
// database did not answer, the event does not exist or the id is not one);
// a provider that does not answer is not an error but a report with
// Unchecked lines.
func Run(ctx context.Context, st *store.Store, eventID string, opt Options) (Report, error) {
	if opt.RefundGrace <= 0 {
		opt.RefundGrace = 15 * time.Minute
	}
	if opt.ProviderTimeout <= 0 {
		opt.ProviderTimeout = 5 * time.Second
	}
	r := Report{EventID: eventID, ProviderAsked: opt.Provider != nil}
	if _, err := uuid.Parse(eventID); err != nil {
		return r, fmt.Errorf("%w: %q", ErrBadEventID, eventID)
	}
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
		line := PaymentLine{AuditPayment: p}
		if opt.Provider != nil && p.ProviderRef != nil {
			line.ProviderStatus, line.ProviderError = ask(ctx, opt, *p.ProviderRef)
			if line.ProviderError != "" {
				r.Unchecked = append(r.Unchecked, fmt.Sprintf("payment %s: the provider did not answer (%s)", p.ID, line.ProviderError))
			}
		}
		r.Payments = append(r.Payments, line)
	}
	for _, c := range goChecks {
		r.Anomalies = append(r.Anomalies, c(&r, opt)...)
	}
	return r, nil
}

func ask(ctx context.Context, opt Options, ref string) (status, errText string) {
	ctx, cancel := context.WithTimeout(ctx, opt.ProviderTimeout)
	defer cancel()
	pp, err := opt.Provider.GetPayment(ctx, ref)
	if err != nil {
		return "", err.Error()
	}
	return string(pp.Status), ""
}

// outcomeUnknown: an attempt whose create the provider never answered
// within its idempotency window is no longer repeated; a person must find
// it at the provider.
func outcomeUnknown(r *Report, _ Options) (out []Anomaly) {
	for _, p := range r.Payments {
		if p.Status == "UNKNOWN" && p.ProviderRef == nil && time.Since(p.CreatedAt) > payments.KeyWindow {
			out = append(out, Anomaly{"PAYMENT_OUTCOME_UNKNOWN", fmt.Sprintf(
				"payment %s (order %s): the provider never answered its create within its idempotency window (key %s, since %s): find it at the provider by reference %s",
				p.ID, p.OrderID, p.IdempotencyKey, p.CreatedAt.Format(time.RFC3339), p.ID)})
		}
	}
	return out
}

// settledAs is the provider status our settled status implies.
var settledAs = map[string]payments.Status{
	"SUCCEEDED":      payments.StatusSucceeded,
	"FAILED":         payments.StatusFailed,
	"CANCELLED":      payments.StatusCancelled,
	"REFUNDED":       payments.StatusRefunded,
	"REFUND_PENDING": payments.StatusSucceeded, // refund not yet confirmed
}

// providerDisagrees: our settled state differs from the provider's, or the
// provider settled a payment we still have open, for longer than the grace.
func providerDisagrees(r *Report, opt Options) (out []Anomaly) {
	for _, p := range r.Payments {
		if p.ProviderStatus == "" {
			continue
		}
		theirs := payments.Status(p.ProviderStatus)
		want, settled := settledAs[p.Status]
		switch {
		case settled && p.Status == "REFUND_PENDING" && theirs == payments.StatusRefunded:
			// refunded at the provider, our record catches up (webhook or job)
		case settled && theirs != want:
			out = append(out, Anomaly{"PROVIDER_MISMATCH",
				fmt.Sprintf("payment %s is %s here but %s at the provider", p.ID, p.Status, theirs)})
		case !settled && theirs.Final() && time.Since(p.UpdatedAt) > opt.RefundGrace:
			out = append(out, Anomaly{"UNSETTLED_PAYMENT",
				fmt.Sprintf("payment %s is still %s here but %s at the provider", p.ID, p.Status, theirs)})
		}
	}
	return out
}

// Summary is the report in figures.
type Summary struct {
	// Seats counts the seats and GA units by state (AVAILABLE, HELD, SOLD).
	Seats map[string]int `json:"seats"`
	// Payments counts the payment attempts by state.
	Payments map[string]int `json:"payments"`
	// Money is what the payments add up to, per currency, in minor units.
	Money []MoneySummary `json:"money"`
	// Anomalies counts the anomalies by kind.
	Anomalies map[string]int `json:"anomalies"`
}

// MoneySummary is where the money of one currency is, in minor units.
type MoneySummary struct {
	Currency string `json:"currency"`
	// Taken: charged by the provider (SUCCEEDED, REFUND_PENDING, REFUNDED).
	Taken int64 `json:"taken"`
	// Refunded: given back (REFUNDED); RefundPending: to give back (REFUND_PENDING).
	Refunded      int64 `json:"refunded"`
	RefundPending int64 `json:"refundPending"`
	// Pending: attempts whose outcome is not known yet (PENDING, UNKNOWN).
	Pending int64 `json:"pending"`
	// Kept: taken and not to be given back (SUCCEEDED).
	Kept int64 `json:"kept"`
}

// Summary counts the report.
func (r Report) Summary() Summary {
	s := Summary{Seats: map[string]int{}, Payments: map[string]int{}, Anomalies: map[string]int{}}
	for _, u := range r.Units {
		s.Seats[u.Status]++
	}
	money := map[string]*MoneySummary{}
	for _, p := range r.Payments {
		s.Payments[p.Status]++
		m := money[p.Currency]
		if m == nil {
			m = &MoneySummary{Currency: p.Currency}
			money[p.Currency] = m
		}
		switch p.Status {
		case "SUCCEEDED":
			m.Taken += p.Amount
			m.Kept += p.Amount
		case "REFUND_PENDING":
			m.Taken += p.Amount
			m.RefundPending += p.Amount
		case "REFUNDED":
			m.Taken += p.Amount
			m.Refunded += p.Amount
		case "PENDING", "UNKNOWN":
			m.Pending += p.Amount
		}
	}
	for _, c := range slices.Sorted(maps.Keys(money)) {
		s.Money = append(s.Money, *money[c])
	}
	for _, a := range r.Anomalies {
		s.Anomalies[a.Kind]++
	}
	return s
}
