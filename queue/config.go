package queue

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Config tunes the waiting room. Zero values take the defaults of
// DefaultConfig (through New).
type Config struct {
	// SigningKey signs admission tokens (QUEUE_SIGNING_KEY); all instances
	// must share it. Required.
	SigningKey []byte
	// AdmitRate is the admissions per second per event (QUEUE_ADMIT_RATE).
	AdmitRate float64
	// AdmitBurst is the token bucket size (QUEUE_ADMIT_BURST).
	AdmitBurst int
	// Window is the most admitted-but-unfinished buyers per event: the
	// checkout capacity (QUEUE_WINDOW).
	Window int
	// AdmissionTTL is how long an admission (and its token) lasts
	// (QUEUE_ADMISSION_TTL, a Go duration).
	AdmissionTTL time.Duration
	// JoinUserRate/JoinUserBurst limit joinQueue calls per user
	// (QUEUE_JOIN_RATE_USER per second; burst 5 times the rate, at least 5).
	JoinUserRate  float64
	JoinUserBurst int
	// JoinAddrRate/JoinAddrBurst limit joinQueue calls per client address
	// (QUEUE_JOIN_RATE_ADDR per second; burst 5 times the rate).
	JoinAddrRate  float64
	JoinAddrBurst int
	// TrustedProxies are the proxies whose X-Forwarded-For is believed
	// (TRUSTED_PROXIES, comma-separated CIDRs or addresses). Empty: the
	// client address is the TCP peer.
	TrustedProxies []netip.Prefix
	// Tick is the admission controller's period.
	Tick time.Duration
	// RateTau is the time constant of the measured admission rate (EWMA).
	RateTau time.Duration
	// OpTimeout bounds the Redis calls of the controller, leaves and
	// releases, so a dead Redis fails fast.
	OpTimeout time.Duration
	// StallTimeout is how long Redis may leave a join or position read
	// unanswered (a hung Redis) before every waiting one fails; a refused
	// connection fails at once. Waiting behind a crowd is not a stall.
	StallTimeout time.Duration
	// WaitTimeout is the longest a join or position read waits its turn
	// while Redis is answering (a burst of joins queues, it is not refused).
	WaitTimeout time.Duration
	// Refresh is the period of queueUpdates refreshes without a change, and
	// the longest a new position far from the head waits (positionGap).
	Refresh time.Duration
	// Adaptive turns on adaptive admission where the application supplies
	// Deps.Pressure (QUEUE_ADAPTIVE, default true): AdmitRate and Window are
	// then ceilings.
	Adaptive bool
	// LatencyTarget, RateInterval and RateDecrease tune adaptive admission
	// (controller.go): the hold latency above which the rate backs off, the
	// least time between two changes, and the factor of a back-off.
	LatencyTarget time.Duration
	RateInterval  time.Duration
	RateDecrease  float64
	// RateDecreaseGap is the least time between two back-offs: about the
	// time a back-off takes to show in the latencies (the buyers admitted
	// before it still hold and pay), so one overload is answered by one
	// back-off, not one a second until the latencies catch up.
	RateDecreaseGap time.Duration
	// ConfirmTarget, ProviderTarget and PoolWaitTarget are the other
	// signals' limits: the latency of applying a payment notification up to
	// the order's confirmation, of a call to the payment provider, and of
	// waiting for a Postgres connection, above which the rate backs off.
	ConfirmTarget, ProviderTarget, PoolWaitTarget time.Duration
	// CompletedFloor is the fraction of the measured completion rate
	// (admissions released by confirmed orders per second, over RateTau)
	// that a back-off does not go below (redisstore.RateParams.Completed);
	// negative turns the floor off.
	CompletedFloor float64
	// JoinWait is how long a queueUpdates stream opened before the user
	// joined waits for the join.
	JoinWait time.Duration
	// KeyPrefix prefixes every Redis key (tests use testdb.RedisPrefix).
	KeyPrefix string
}

// The defaults of QUEUE_ADMIT_RATE and QUEUE_WINDOW with adaptive admission
// (QUEUE_ADAPTIVE, the default): ceilings well above what one database
// sustains, so the controller, not a guess, sets the pace. It starts at a
// quarter of the rate. With QUEUE_ADAPTIVE=false the fixed defaults of
// DefaultConfig (20/s, 500) apply.
const (
	AdaptiveCeilingRate   = 400
	AdaptiveCeilingWindow = 4000
)

// DefaultConfig is the configuration without any environment override.
func DefaultConfig() Config {
	return Config{
		AdmitRate:       20,
		AdmitBurst:      20,
		Window:          500,
		AdmissionTTL:    10 * time.Minute,
		JoinUserRate:    1,
		JoinUserBurst:   5,
		JoinAddrRate:    50,
		JoinAddrBurst:   250,
		Tick:            100 * time.Millisecond,
		RateTau:         10 * time.Second,
		OpTimeout:       500 * time.Millisecond,
		WaitTimeout:     15 * time.Second,
		StallTimeout:    3 * time.Second,
		Refresh:         30 * time.Second,
		JoinWait:        5 * time.Minute,
		LatencyTarget:   200 * time.Millisecond,
		RateInterval:    time.Second,
		RateDecrease:    0.7,
		RateDecreaseGap: 3 * time.Second,
		// The sale's target is a notification confirmed within 1 s (p99):
		// back off while the average is at half of it.
		ConfirmTarget:  500 * time.Millisecond,
		ProviderTarget: 2 * time.Second,
		PoolWaitTarget: 50 * time.Millisecond,
		CompletedFloor: 0.8,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.AdmitRate <= 0 {
		c.AdmitRate = d.AdmitRate
	}
	if c.AdmitBurst <= 0 {
		c.AdmitBurst = max(1, int(c.AdmitRate))
	}
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if c.AdmissionTTL <= 0 {
		c.AdmissionTTL = d.AdmissionTTL
	}
	if c.Tick <= 0 {
		c.Tick = d.Tick
	}
	if c.RateTau <= 0 {
		c.RateTau = d.RateTau
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = d.OpTimeout
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = d.StallTimeout
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = d.WaitTimeout
	}
	if c.Refresh <= 0 {
		c.Refresh = d.Refresh
	}
	if c.LatencyTarget <= 0 {
		c.LatencyTarget = d.LatencyTarget
	}
	if c.RateInterval <= 0 {
		c.RateInterval = d.RateInterval
	}
	if c.RateDecrease <= 0 || c.RateDecrease >= 1 {
		c.RateDecrease = d.RateDecrease
	}
	if c.RateDecreaseGap == 0 {
		c.RateDecreaseGap = d.RateDecreaseGap
	}
	if c.JoinWait <= 0 {
		c.JoinWait = d.JoinWait
	}
	if c.ConfirmTarget <= 0 {
		c.ConfirmTarget = d.ConfirmTarget
	}
	if c.ProviderTarget <= 0 {
		c.ProviderTarget = d.ProviderTarget
	}
	if c.PoolWaitTarget <= 0 {
		c.PoolWaitTarget = d.PoolWaitTarget
	}
	switch {
	case c.CompletedFloor == 0:
		c.CompletedFloor = d.CompletedFloor
	case c.CompletedFloor < 0:
		c.CompletedFloor = 0
	}
	return c
}

// ConfigFromEnv reads the waiting room's settings (QUEUE_ADMIT_RATE,
// QUEUE_ADMIT_BURST, QUEUE_WINDOW, QUEUE_ADMISSION_TTL, QUEUE_JOIN_RATE_USER,
// QUEUE_JOIN_RATE_ADDR, TRUSTED_PROXIES, and QUEUE_KEY_PREFIX for tests that
// share a Redis) over DefaultConfig. A join rate of 0
// disables that limit. An invalid value is an error naming the variable.
func ConfigFromEnv(getenv func(string) string, signingKey string) (Config, error) {
	c := DefaultConfig()
	c.SigningKey = []byte(signingKey)
	num := func(name string, dst *float64) error {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("config: %s: want a non-negative number, got %q", name, v)
		}
		*dst = f
		return nil
	}
	c.Adaptive = true
	switch v := strings.TrimSpace(getenv("QUEUE_ADAPTIVE")); v {
	case "", "true", "1":
		// The controller sets the pace; unset, QUEUE_ADMIT_RATE and
		// QUEUE_WINDOW are only the ceilings of a safety net.
		c.AdmitRate, c.Window = AdaptiveCeilingRate, AdaptiveCeilingWindow
	case "false", "0":
		c.Adaptive = false
	default:
		return c, fmt.Errorf("config: QUEUE_ADAPTIVE: want true or false, got %q", v)
	}
	var burst, window float64
	if err := num("QUEUE_ADMIT_RATE", &c.AdmitRate); err != nil {
		return c, err
	}
	if err := num("QUEUE_ADMIT_BURST", &burst); err != nil {
		return c, err
	}
	if err := num("QUEUE_WINDOW", &window); err != nil {
		return c, err
	}
	if err := num("QUEUE_JOIN_RATE_USER", &c.JoinUserRate); err != nil {
		return c, err
	}
	if err := num("QUEUE_JOIN_RATE_ADDR", &c.JoinAddrRate); err != nil {
		return c, err
	}
	if c.AdmitRate == 0 {
		return c, fmt.Errorf("config: QUEUE_ADMIT_RATE: must be positive")
	}
	c.AdmitBurst = max(1, int(c.AdmitRate))
	if burst > 0 {
		c.AdmitBurst = int(burst)
	}
	if window > 0 {
		c.Window = int(window)
	}
	c.JoinUserBurst = max(5, int(5*c.JoinUserRate))
	c.JoinAddrBurst = max(5, int(5*c.JoinAddrRate))
	if v := strings.TrimSpace(getenv("QUEUE_ADMISSION_TTL")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("config: QUEUE_ADMISSION_TTL: want a duration of at least 1s, got %q", v)
		}
		c.AdmissionTTL = d
	}
	c.KeyPrefix = strings.TrimSpace(getenv("QUEUE_KEY_PREFIX"))
	if v := strings.TrimSpace(getenv("TRUSTED_PROXIES")); v != "" {
		ps, err := ParsePrefixes(v)
		if err != nil {
			return c, fmt.Errorf("config: TRUSTED_PROXIES: %v", err)
		}
		c.TrustedProxies = ps
	}
	return c, nil
}

// ParsePrefixes parses comma-separated CIDRs or single addresses.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, err
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
