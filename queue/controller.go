package queue

import (
	"math"
	"time"

	"github.com/ticketing/ticketing/redisstore"
)

// Pressure is what the checkout path reports about itself: the recent
// latency of hold transactions and the holds refused so far because the
// hold path was saturated (a running count).
type Pressure struct {
	Latency time.Duration
	Shed    uint64
}

// Adaptive admission (issue 17): with Deps.Pressure set, the controller
// sets each event's admission rate from what checkout sustains, AIMD like
// a congestion controller: once per RateInterval, whichever instance gets
// there first, the shared rate (Redis, the event's meta hash) is
//   - multiplied by RateDecrease when holds were shed or hold latency is
//     above LatencyTarget (it backs off before latency explodes);
//   - raised by RateStep when latency is below half the target and people
//     are waiting (it climbs while there is room);
//   - left alone otherwise.
//
// QUEUE_ADMIT_RATE and QUEUE_WINDOW are ceilings: the rate never exceeds
// the first, and the window is scaled with the rate (never above the
// second). It starts at a quarter of the ceiling. Without Deps.Pressure the
// rate is the ceiling (the fixed-rate controller).

type rateState struct {
	decided time.Time
	shed    uint64
	demand  bool
}

// adaptiveRate returns the event's rate and window for this pass.
func (s *Service) adaptiveRate(octxNow time.Time, eventID string, adjust func(redisstore.RateParams) (float64, string, error)) (float64, int) {
	if s.pressure == nil {
		return s.cfg.AdmitRate, s.cfg.Window
	}
	s.rateMu.Lock()
	st := s.rates[eventID]
	dec, why := redisstore.RateHold, ""
	if octxNow.Sub(st.decided) >= s.cfg.RateInterval {
		p := s.pressure()
		switch {
		case p.Shed > st.shed && st.decided != (time.Time{}):
			dec, why = redisstore.RateDecrease, "shed"
		case p.Latency > s.cfg.LatencyTarget:
			dec, why = redisstore.RateDecrease, "latency"
		case p.Latency < s.cfg.LatencyTarget/2 && st.demand:
			dec, why = redisstore.RateIncrease, "room"
		}
		st.decided, st.shed = octxNow, p.Shed
		s.rates[eventID] = st
	}
	s.rateMu.Unlock()
	ceil := s.cfg.AdmitRate
	rate, reason, err := adjust(redisstore.RateParams{
		Now: octxNow, Interval: s.cfg.RateInterval, Ceiling: ceil, Floor: math.Min(1, ceil),
		Initial: ceil / 4, Step: math.Max(1, ceil/20), Factor: s.cfg.RateDecrease,
		Decision: dec, Reason: why,
	})
	if err != nil || rate <= 0 {
		return ceil / 4, max(1, s.cfg.Window/4) // Redis trouble: the admit pass fails anyway
	}
	s.m.rate.WithLabelValues(eventID).Set(rate)
	for _, r := range []string{"start", "room", "latency", "shed"} {
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
