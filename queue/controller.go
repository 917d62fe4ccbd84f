package queue

import (
	"math"
	"time"

	"github.com/ticketing/ticketing/redisstore"
)

// Pressure is what the checkout path reports about itself. Latencies are
// recent averages (zero: nothing measured lately); counts are running
// totals, of which the controller watches the growth.
type Pressure struct {
	// Latency is that of hold transactions (lane wait + transaction), and
	// Shed the holds refused so far because the hold path was saturated.
	Latency time.Duration
	Shed    uint64
	// Confirm is the latency of applying a verified payment notification
	// (up to the order's CONFIRMED): the paid buyers' path, which must
	// never wait behind new holds.
	Confirm time.Duration
	// Provider is the latency of calls to the payment provider, and
	// ProviderFailed the calls that failed for the provider's sake.
	Provider       time.Duration
	ProviderFailed uint64
	// PoolWait is the recent wait for a Postgres connection.
	PoolWait time.Duration
}

// judge is the controller's decision for one interval given the pressure
// now and the running counts at the last decision (prev).
func (c Config) judge(p, prev Pressure, first, demand bool) (redisstore.RateDecision, string) {
	switch {
	case p.Shed > prev.Shed && !first:
		return redisstore.RateDecrease, "shed"
	case p.Latency > c.LatencyTarget:
		return redisstore.RateDecrease, "latency"
	case p.Confirm > c.ConfirmTarget:
		return redisstore.RateDecrease, "confirm"
	case p.ProviderFailed > prev.ProviderFailed && !first, p.Provider > c.ProviderTarget:
		return redisstore.RateDecrease, "provider"
	case p.PoolWait > c.PoolWaitTarget:
		return redisstore.RateDecrease, "pool"
	case p.Latency < c.LatencyTarget/2 && p.Confirm < c.ConfirmTarget/2 && demand:
		return redisstore.RateIncrease, "room"
	}
	return redisstore.RateHold, ""
}

// reasons are the values of the rate's reason metric.
// "completions" is a back-off stopped at Config.CompletedFloor of the
// completion rate.
var reasons = []string{"start", "room", "latency", "shed", "confirm", "provider", "pool", "completions"}

// Adaptive admission (issue 17): with Deps.Pressure set, the controller
// sets each event's admission rate from what checkout sustains, AIMD like
// a congestion controller: once per RateInterval, whichever instance gets
// there first, the shared rate (Redis, the event's meta hash) is
//   - multiplied by RateDecrease (at most once per RateDecreaseGap, the
//     time a back-off takes to show) when holds were shed, hold latency is
//     above LatencyTarget, confirming a payment notification takes more
//     than ConfirmTarget, the payment provider fails or is slower than
//     ProviderTarget, or waiting for a Postgres connection takes more than
//     PoolWaitTarget (it backs off before latency explodes; Config.judge);
//     but never below Config.CompletedFloor (0.8) of the rate at which
//     checkouts complete (admissions released by confirmed orders, every
//     instance's, measured in Redis): when the pressure comes from fans
//     waiting or browsing, which admission does not control, backing off
//     further would only starve checkout;
//   - raised by RateStep when hold and confirmation latency are below half
//     their targets and people are waiting (it climbs while there is room);
//   - left alone otherwise.
//
// QUEUE_ADMIT_RATE and QUEUE_WINDOW are ceilings: the rate never exceeds
// the first, and the window is scaled with the rate (never above the
// second). It starts at a quarter of the ceiling. Without Deps.Pressure the
// rate is the ceiling (the fixed-rate controller).

type rateState struct {
	decided time.Time
	last    Pressure // at the decision, for the running counts
	demand  bool
}

// adaptiveRate returns the event's rate and window for this pass.
func (s *Service) adaptiveRate(octxNow time.Time, eventID string, adjust func(redisstore.RateParams) (redisstore.RateState, error)) (float64, int) {
	if s.pressure == nil {
		return s.cfg.AdmitRate, s.cfg.Window
	}
	s.rateMu.Lock()
	st := s.rates[eventID]
	dec, why := redisstore.RateHold, ""
	if octxNow.Sub(st.decided) >= s.cfg.RateInterval {
		p := s.pressure()
		for name, d := range map[string]time.Duration{"hold": p.Latency, "confirm": p.Confirm, "provider": p.Provider, "pool_wait": p.PoolWait} {
			s.m.pressure.WithLabelValues(name).Set(d.Seconds())
		}
		dec, why = s.cfg.judge(p, st.last, st.decided.IsZero(), st.demand)
		st.decided, st.last = octxNow, p
		s.rates[eventID] = st
	}
	s.rateMu.Unlock()
	ceil := s.cfg.AdmitRate
	shared, err := adjust(redisstore.RateParams{
		Now: octxNow, Interval: s.cfg.RateInterval, Ceiling: ceil, Floor: math.Min(1, ceil),
		Initial: ceil / 4, Step: math.Max(1, ceil/20), Factor: s.cfg.RateDecrease, DecreaseGap: s.cfg.RateDecreaseGap,
		Completed: s.cfg.CompletedFloor, CompletedTau: s.cfg.RateTau,
		Decision: dec, Reason: why,
	})
	rate, reason := shared.Rate, shared.Reason
	if err != nil || rate <= 0 {
		return ceil / 4, max(1, s.cfg.Window/4) // Redis trouble: the admit pass fails anyway
	}
	s.m.rate.WithLabelValues(eventID).Set(rate)
	s.m.completions.WithLabelValues(eventID).Set(shared.Completions)
	for _, r := range reasons {
		v := 0.0
		if r == reason {
			v = 1
		}
		s.m.reason.WithLabelValues(eventID, r).Set(v)
	}
	window := max(1, int(math.Ceil(float64(s.cfg.Window)*rate/ceil)))
	return rate, min(window, s.cfg.Window)
}

// sawDemand records whether people were waiting after the event's pass.
func (s *Service) sawDemand(eventID string, waiting bool) {
	if s.pressure == nil {
		return
	}
	s.rateMu.Lock()
	st := s.rates[eventID]
	st.demand = waiting
	s.rates[eventID] = st
	s.rateMu.Unlock()
}
