// Package config reads the service configuration from the environment, as
// listed in the API contract (../shared/api/README.md). A missing or invalid
// setting is reported in one line that names the variable.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of the ticketing binary.
type Config struct {
	HTTPAddr    string
	DatabaseURL string
	// DatabaseReadURL (DATABASE_READ_URL, default empty) is a Postgres
	// streaming replica for browsing reads (store.Reads); decisions never
	// read it.
	DatabaseReadURL string
	RedisURL        string
	// RedisClusterAddrs (REDIS_CLUSTER_ADDRS, comma separated host:port, default
	// empty) selects a Redis Cluster client for everything Redis does;
	// REDIS_URL is then ignored.
	RedisClusterAddrs []string
	SearchBackend     string
	SearchDir         string
	ElasticsearchURL  string
	JWTIssuer         string
	JWTAudience       string
	JWTHS256Secret    string
	JWTPublicKeyFile  string
	JWTJWKSURL        string
	QueueSigningKey   string
	TicketSigningKey  string
	PaymentsProvider  string
	PaymentsBaseURL   string
	PaymentsSecret    string
	// StripeSecretKey (STRIPE_SECRET_KEY) is required with
	// PAYMENTS_PROVIDER=stripe.
	StripeSecretKey string
	// PaymentsReconcileAfter (PAYMENTS_RECONCILE_AFTER, default 1m in the
	// orders engine when zero) is how long an open payment attempt is left
	// alone before the reconciler asks the provider; PaymentsReconcileInterval
	// (PAYMENTS_RECONCILE_INTERVAL, default 30s) is the time between passes.
	// Load tests and chaos runs shorten both.
	PaymentsReconcileAfter    time.Duration
	PaymentsReconcileInterval time.Duration
	PublicBaseURL             string
	// PaymentsWebhookBaseURL (PAYMENTS_WEBHOOK_BASE_URL, default
	// PUBLIC_BASE_URL) is where the provider sends notifications: an
	// ingress of their own, so a crowd of fans filling the public front
	// door's connections cannot keep a paid order from confirming.
	PaymentsWebhookBaseURL string
	PaysimAddr             string
	PaysimDatabaseURL      string
	// AllowedOrigins is the Origin allow-list of WebSocket and SSE clients
	// (ALLOWED_ORIGINS, comma separated); empty means same host plus
	// PUBLIC_BASE_URL.
	AllowedOrigins []string
	// SeatMapRedisPrefix (SEATMAP_REDIS_PREFIX, default empty) is put before
	// the live seat map's Redis keys and channels and the request rate
	// limits' keys; instances that serve the
	// same clients must share it (tests give each test its own).
	SeatMapRedisPrefix string
	// SeatMapCoalesce (SEATMAP_COALESCE, default 100ms) is the shortest time
	// between two frames of one event's live seat map.
	SeatMapCoalesce time.Duration
	// HoldsRedisTimeout (HOLDS_REDIS_TIMEOUT, default 100ms) bounds each
	// Redis call of the hold path (leases, the per-address cap): past it the
	// hold goes on with Postgres alone, as when Redis is down.
	HoldsRedisTimeout time.Duration
	// WarmupEvents (WARMUP_EVENTS, default 2000, 0 = off) is how many
	// events' pages an instance loads before it listens (app.Warm), and
	// WarmupTimeout (WARMUP_TIMEOUT, default 10s) the longest it spends
	// on them before it listens all the same.
	WarmupEvents  int
	WarmupTimeout time.Duration
	// DebugAddr (DEBUG_ADDR, default empty: off) is a separate listener for
	// net/http/pprof; keep it on loopback.
	DebugAddr string
	// DevSignIn (DEV_SIGNIN: on/off, default: on when PUBLIC_BASE_URL is a
	// loopback address and JWT_HS256_SECRET is set) is the raw setting of
	// the development sign-in (app.DevSignInEnabled decides).
	DevSignIn string
	// Env is the environment Load read, for the settings a package parses
	// itself: app builds the virtual waiting room's configuration from it
	// (QUEUE_* and TRUSTED_PROXIES, queue.ConfigFromEnv), signed with
	// QueueSigningKey. Nil reads as an empty environment.
	Env func(string) string
	// Introspection (GRAPHQL_INTROSPECTION: on/off, default: on exactly
	// where development sign-in is on) allows __schema/__type queries and
	// the "did you mean" suggestions of validation errors.
	Introspection bool
	// AbuseLimits (ABUSE_LIMITS: on/off, default on) turns the per-address
	// and per-user request rate limits and HoldLimitPerAddress on.
	AbuseLimits bool
	// HoldLimitPerAddress (HOLD_LIMIT_PER_ADDRESS, default 40, 0 = no cap)
	// is the most tickets held at once from one client address per event.
	HoldLimitPerAddress int
	// GeneratedKeys names the signing keys that were not set and got a
	// random value for this process (development only: see Warnings).
	GeneratedKeys []string
}

// DevWebhookSecret is PAYMENTS_WEBHOOK_SECRET's development default, shared
// with `ticketing paysim` (public: never a production secret).
const DevWebhookSecret = "whsec_dev"

// Warnings are the settings that are fine for development but not for a
// deployment, one line each, for the log at start: keys generated for this
// process (other instances cannot verify what this one signs, and a restart
// invalidates them) and, when PUBLIC_BASE_URL is not a loopback address, the
// public development webhook secret.
func (c Config) Warnings() []string {
	var out []string
	for _, k := range c.GeneratedKeys {
		out = append(out, k+" is not set: a random key for this process only (set the same key on every instance)")
	}
	if c.PaymentsSecret == DevWebhookSecret && !IsLoopbackURL(c.PublicBaseURL) {
		out = append(out, "PAYMENTS_WEBHOOK_SECRET is the public development default while PUBLIC_BASE_URL is not a loopback address: anyone can sign notifications")
	}
	return out
}

// onOff parses a switch: on/off, true/false, 1/0, yes/no.
func onOff(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "on", "true", "1", "yes":
		return true, nil
	case "off", "false", "0", "no":
		return false, nil
	}
	return false, fmt.Errorf("config: %s: want on or off, got %q", name, v)
}

// DevSignInOn decides whether development sign-in is on: an HS256 secret
// and either DEV_SIGNIN on, or DEV_SIGNIN unset with a loopback
// PUBLIC_BASE_URL.
func DevSignInOn(hs256Secret, publicBaseURL, devSignIn string) bool {
	if hs256Secret == "" {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(devSignIn)) {
	case "":
		return IsLoopbackURL(publicBaseURL)
	case "1", "true", "on", "yes":
		return true
	}
	return false
}

// IsLoopbackURL reports whether raw's host is localhost or a loopback IP
// (what scripts/dev.sh runs).
func IsLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Load reads the configuration through getenv and validates it.
func Load(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		HTTPAddr:         get("HTTP_ADDR", ":8080"),
		DatabaseURL:      get("DATABASE_URL", "postgres:///ticketing?host=/var/run/postgresql"),
		RedisURL:         get("REDIS_URL", "redis://127.0.0.1:6379/0"),
		SearchBackend:    get("SEARCH_BACKEND", "embedded"),
		SearchDir:        get("SEARCH_DIR", "./data/search"),
		ElasticsearchURL: get("ELASTICSEARCH_URL", ""),
		JWTIssuer:        get("JWT_ISSUER", "ticketing-dev"),
		JWTAudience:      get("JWT_AUDIENCE", "ticketing"),
		JWTHS256Secret:   get("JWT_HS256_SECRET", ""),
		JWTPublicKeyFile: get("JWT_PUBLIC_KEY_FILE", ""),
		JWTJWKSURL:       get("JWT_JWKS_URL", ""),
		QueueSigningKey:  get("QUEUE_SIGNING_KEY", ""),
		TicketSigningKey: get("TICKET_SIGNING_KEY", ""),
		PaymentsProvider: get("PAYMENTS_PROVIDER", "sandbox"),
		PaymentsBaseURL:  get("PAYMENTS_BASE_URL", "http://127.0.0.1:8090"),
		PaymentsSecret:   get("PAYMENTS_WEBHOOK_SECRET", DevWebhookSecret),
		PublicBaseURL:    get("PUBLIC_BASE_URL", "http://127.0.0.1:8080"),
		PaysimAddr:       get("PAYSIM_ADDR", ":8090"),
	}
	c.PaymentsWebhookBaseURL = get("PAYMENTS_WEBHOOK_BASE_URL", c.PublicBaseURL)
	c.DatabaseReadURL = get("DATABASE_READ_URL", "")
	for _, a := range strings.Split(get("REDIS_CLUSTER_ADDRS", ""), ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.RedisClusterAddrs = append(c.RedisClusterAddrs, a)
		}
	}
	c.SeatMapRedisPrefix = get("SEATMAP_REDIS_PREFIX", "")
	c.DebugAddr = get("DEBUG_ADDR", "")
	c.DevSignIn = get("DEV_SIGNIN", "")
	c.StripeSecretKey = get("STRIPE_SECRET_KEY", "")
	var err error
	if c.AbuseLimits, err = onOff("ABUSE_LIMITS", get("ABUSE_LIMITS", "on")); err != nil {
		return c, err
	}
	if v := get("GRAPHQL_INTROSPECTION", ""); v != "" {
		if c.Introspection, err = onOff("GRAPHQL_INTROSPECTION", v); err != nil {
			return c, err
		}
	} else {
		c.Introspection = DevSignInOn(c.JWTHS256Secret, c.PublicBaseURL, c.DevSignIn)
	}
	// Whole numbers from 0 (what the hint says 0 means) to max.
	c.HoldLimitPerAddress, c.WarmupEvents, c.WarmupTimeout = 40, 2000, 10*time.Second
	numbers := []struct {
		name string
		dst  *int
		max  int
		zero string
	}{
		{"HOLD_LIMIT_PER_ADDRESS", &c.HoldLimitPerAddress, 1_000_000, "no cap"},
		{"WARMUP_EVENTS", &c.WarmupEvents, 100_000, "off"},
	}
	for _, d := range numbers {
		if v := get(d.name, ""); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > d.max {
				return c, fmt.Errorf("config: %s: want a whole number from 0 (%s) to %d, got %q", d.name, d.zero, d.max, v)
			}
			*d.dst = n
		}
	}
	durations := []struct {
		name string
		dst  *time.Duration
		max  time.Duration
		hint string
	}{
		{"SEATMAP_COALESCE", &c.SeatMapCoalesce, 10 * time.Second, "a duration like 100ms (at most 10s)"},
		{"HOLDS_REDIS_TIMEOUT", &c.HoldsRedisTimeout, 10 * time.Second, "a duration like 100ms (at most 10s)"},
		{"WARMUP_TIMEOUT", &c.WarmupTimeout, 10 * time.Minute, "a duration like 10s (at most 10m)"},
		{"PAYMENTS_RECONCILE_AFTER", &c.PaymentsReconcileAfter, 24 * time.Hour, "a duration like 1m (at most 24h)"},
		{"PAYMENTS_RECONCILE_INTERVAL", &c.PaymentsReconcileInterval, 24 * time.Hour, "a duration like 30s (at most 24h)"},
	}
	for _, d := range durations {
		if v := get(d.name, ""); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 || x > d.max {
				return c, fmt.Errorf("config: %s: want %s, got %q", d.name, d.hint, v)
			}
			*d.dst = x
		}
	}
	c.PaysimDatabaseURL = get("PAYSIM_DATABASE_URL", c.DatabaseURL)
	if o := get("ALLOWED_ORIGINS", ""); o != "" {
		for _, s := range strings.Split(o, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.AllowedOrigins = append(c.AllowedOrigins, s)
			}
		}
	}
	if c.QueueSigningKey == "" {
		c.QueueSigningKey = randomKey()
		c.GeneratedKeys = append(c.GeneratedKeys, "QUEUE_SIGNING_KEY")
	}
	if c.TicketSigningKey == "" {
		c.TicketSigningKey = randomKey()
		c.GeneratedKeys = append(c.GeneratedKeys, "TICKET_SIGNING_KEY")
	}
	c.Env = getenv
	return c, c.validate()
}

func (c Config) validate() error {
	urls := []struct{ name, val string }{
		{"DATABASE_URL", c.DatabaseURL},
		{"PAYSIM_DATABASE_URL", c.PaysimDatabaseURL},
		{"PAYMENTS_BASE_URL", c.PaymentsBaseURL},
		{"PUBLIC_BASE_URL", c.PublicBaseURL},
		{"PAYMENTS_WEBHOOK_BASE_URL", c.PaymentsWebhookBaseURL},
	}
	for _, u := range urls {
		if err := checkURL(u.val); err != nil {
			return fmt.Errorf("config: %s: %v", u.name, err)
		}
	}
	if c.DatabaseReadURL != "" {
		if err := checkURL(c.DatabaseReadURL); err != nil {
			return fmt.Errorf("config: DATABASE_READ_URL: %v", err)
		}
	}
	for _, a := range c.RedisClusterAddrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return fmt.Errorf("config: REDIS_CLUSTER_ADDRS: want host:port[,host:port...], got %q", a)
		}
	}
	if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return fmt.Errorf("config: REDIS_URL: want redis://host:port/db, got %q", c.RedisURL)
	}
	switch c.SearchBackend {
	case "embedded":
	case "elasticsearch":
		if err := checkURL(c.ElasticsearchURL); err != nil {
			return fmt.Errorf("config: ELASTICSEARCH_URL: required with SEARCH_BACKEND=elasticsearch: %v", err)
		}
	default:
		return fmt.Errorf("config: SEARCH_BACKEND: want embedded or elasticsearch, got %q", c.SearchBackend)
	}
	switch c.PaymentsProvider {
	case "sandbox", "stripe": // payments.NewProvider requires STRIPE_SECRET_KEY with stripe
	default:
		return fmt.Errorf("config: PAYMENTS_PROVIDER: want sandbox or stripe, got %q", c.PaymentsProvider)
	}
	if c.JWTIssuer == "" {
		return fmt.Errorf("config: JWT_ISSUER: must not be empty")
	}
	if c.JWTAudience == "" {
		return fmt.Errorf("config: JWT_AUDIENCE: must not be empty")
	}
	if c.JWTHS256Secret != "" && len(c.JWTHS256Secret) < 16 {
		return fmt.Errorf("config: JWT_HS256_SECRET: must be at least 16 bytes")
	}
	if len(c.QueueSigningKey) < 16 {
		return fmt.Errorf("config: QUEUE_SIGNING_KEY: must be at least 16 bytes")
	}
	for _, k := range strings.Split(c.TicketSigningKey, ",") {
		if len(strings.TrimSpace(k)) < 16 {
			return fmt.Errorf("config: TICKET_SIGNING_KEY: every key (comma-separated, the first signs) must be at least 16 bytes")
		}
	}
	if c.PaymentsSecret == "" {
		return fmt.Errorf("config: PAYMENTS_WEBHOOK_SECRET: must not be empty")
	}
	if c.PaymentsProvider == "stripe" && c.PaymentsSecret == DevWebhookSecret {
		// Stripe signs with the endpoint's own secret: the public
		// development default would verify only forged notifications.
		return fmt.Errorf("config: PAYMENTS_WEBHOOK_SECRET: required with PAYMENTS_PROVIDER=stripe (the endpoint's whsec_ signing secret)")
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return fmt.Errorf("must not be empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Scheme == "" {
		return fmt.Errorf("not a URL (no scheme): %q", s)
	}
	return nil
}

func randomKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
