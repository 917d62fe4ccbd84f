package payments

import (
	"context"
	"errors"
	"time"

	"github.com/ticketing/ticketing/internal/recent"
)

// Gauge wraps a Provider and measures the calls the orders engine makes to
// it (VerifyWebhook, which calls nobody, passes through the embedding): an EWMA of their latency and a running count of those that failed
// for the provider's sake (unknown outcome, unavailable; not a business
// refusal such as ErrNotPending). It is the adaptive admission
// controller's view of the provider (queue.Pressure).
type Gauge struct {
	Provider
	calls recent.Latency
}

// NewGauge measures p.
func NewGauge(p Provider) *Gauge { return &Gauge{Provider: p} }

// Pressure reports the recent latency of provider calls (zero when none ran
// lately) and how many have failed so far.
func (g *Gauge) Pressure() (latency time.Duration, failed uint64) { return g.calls.Read() }

func (g *Gauge) observe(start time.Time, err error) {
	g.calls.Observe(time.Since(start))
	if providerFault(err) {
		g.calls.Fail()
	}
}

// providerFault reports whether err says the provider could not answer
// (rather than answered no).
func providerFault(err error) bool {
	return err != nil && (errors.Is(err, ErrUnknownOutcome) || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, context.DeadlineExceeded))
}

// CreatePayment implements Provider.
func (g *Gauge) CreatePayment(ctx context.Context, req CreateRequest) (ProviderPayment, error) {
	start := time.Now()
	p, err := g.Provider.CreatePayment(ctx, req)
	g.observe(start, err)
	return p, err
}

// GetPayment implements Provider.
func (g *Gauge) GetPayment(ctx context.Context, id string) (ProviderPayment, error) {
	start := time.Now()
	p, err := g.Provider.GetPayment(ctx, id)
	g.observe(start, err)
	return p, err
}

// CancelPayment implements Provider.
func (g *Gauge) CancelPayment(ctx context.Context, id string) (ProviderPayment, error) {
	start := time.Now()
	p, err := g.Provider.CancelPayment(ctx, id)
	g.observe(start, err)
	return p, err
}

// Refund implements Provider.
func (g *Gauge) Refund(ctx context.Context, paymentID, idempotencyKey string) (Refund, error) {
	start := time.Now()
	r, err := g.Provider.Refund(ctx, paymentID, idempotencyKey)
	g.observe(start, err)
	return r, err
}

// FailedMaySucceed implements FailureReopener as the measured provider does.
func (g *Gauge) FailedMaySucceed() bool { return FailedMaySucceed(g.Provider) }
