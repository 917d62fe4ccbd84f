package payments

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// slowProvider answers after a delay with a chosen error (the Provider
// interface's other methods are not called by these tests).
type slowProvider struct {
	Provider
	delay time.Duration
	err   error
}

func (p slowProvider) CreatePayment(context.Context, CreateRequest) (ProviderPayment, error) {
	time.Sleep(p.delay)
	return ProviderPayment{}, p.err
}

func (p slowProvider) GetPayment(context.Context, string) (ProviderPayment, error) {
	time.Sleep(p.delay)
	return ProviderPayment{}, p.err
}

type reopener struct{ slowProvider }

func (reopener) FailedMaySucceed() bool { return true }

func TestGaugeMeasuresCallsAndCountsProviderFaults(t *testing.T) {
	ctx := context.Background()
	g := NewGauge(slowProvider{delay: 20 * time.Millisecond})
	if _, err := g.CreatePayment(ctx, CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if l, n := g.Pressure(); l < 20*time.Millisecond || n != 0 {
		t.Fatalf("after one 20 ms call: latency %v, failed %d", l, n)
	}
	for _, tc := range []struct {
		err   error
		fault bool
	}{
		{fmt.Errorf("create: %w", ErrUnknownOutcome), true},
		{fmt.Errorf("get: %w", ErrUnavailable), true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("cancel: %w", ErrNotPending), false},
		{fmt.Errorf("create: %w", ErrRejected), false},
	} {
		_, before := g.Pressure()
		g.Provider = slowProvider{err: tc.err}
		_, _ = g.GetPayment(ctx, "p")
		if _, after := g.Pressure(); (after > before) != tc.fault {
			t.Errorf("%v counted as a provider fault: %v, want %v", tc.err, after > before, tc.fault)
		}
	}
	if FailedMaySucceed(NewGauge(slowProvider{})) {
		t.Error("a gauge over a provider whose failures are final says they may succeed")
	}
	if !FailedMaySucceed(NewGauge(reopener{})) {
		t.Error("a gauge hides its provider's FailedMaySucceed")
	}
}
