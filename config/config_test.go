package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestLoad(t *testing.T) {
	t.Parallel()

	t.Run("OKDefaults", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(nil))
		require.NoError(t, err)
		require.Equal(t, ":8080", c.HTTPAddr)
		require.Equal(t, "ticketing-dev", c.JWTIssuer)
		require.Equal(t, "ticketing", c.JWTAudience)
		require.Equal(t, "http://127.0.0.1:8080", c.PublicBaseURL)
		require.Equal(t, c.DatabaseURL, c.PaysimDatabaseURL)
		// The contract's defaults (../shared/api/README.md).
		require.Equal(t, "postgres:///ticketing?host=/var/run/postgresql", c.DatabaseURL)
		require.Equal(t, "redis://127.0.0.1:6379/0", c.RedisURL)
		require.Equal(t, "embedded", c.SearchBackend)
		require.Equal(t, "./data/search", c.SearchDir)
		require.Equal(t, "sandbox", c.PaymentsProvider)
		require.Equal(t, "http://127.0.0.1:8090", c.PaymentsBaseURL)
		require.Equal(t, "whsec_dev", c.PaymentsSecret)
		require.Equal(t, ":8090", c.PaysimAddr)
		require.Len(t, c.Warnings(), 2, "the two generated keys")
		require.ElementsMatch(t, []string{"QUEUE_SIGNING_KEY", "TICKET_SIGNING_KEY"}, c.GeneratedKeys)
		require.GreaterOrEqual(t, len(c.QueueSigningKey), 16)
		require.Equal(t, 2000, c.WarmupEvents)
		require.Equal(t, 10*time.Second, c.WarmupTimeout)
	})
	t.Run("OKAllowedOrigins", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{"ALLOWED_ORIGINS": " https://a.example , ,https://b.example"}))
		require.NoError(t, err)
		require.Equal(t, []string{"https://a.example", "https://b.example"}, c.AllowedOrigins)
	})

	t.Run("OKReplicaAndCluster", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{"DATABASE_READ_URL": "postgres://r:5434/ticketing",
			"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000, 10.0.0.2:7000,"}))
		require.NoError(t, err)
		require.Equal(t, "postgres://r:5434/ticketing", c.DatabaseReadURL)
		require.Equal(t, []string{"10.0.0.1:7000", "10.0.0.2:7000"}, c.RedisClusterAddrs)
		d, err := Load(env(nil))
		require.NoError(t, err)
		require.Empty(t, d.DatabaseReadURL)
		require.Empty(t, d.RedisClusterAddrs)
	})

	t.Run("OKDurationsAndPayments", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{"SEATMAP_COALESCE": "250ms", "HOLDS_REDIS_TIMEOUT": "2s", "PAYMENTS_RECONCILE_AFTER": "2s",
			"PAYMENTS_RECONCILE_INTERVAL": "500ms", "PAYMENTS_PROVIDER": "stripe", "STRIPE_SECRET_KEY": "sk_test_x",
			"PAYMENTS_WEBHOOK_SECRET": "whsec_from_stripe", "DEV_SIGNIN": "off", "WARMUP_EVENTS": "0", "WARMUP_TIMEOUT": "1m"}))
		require.NoError(t, err)
		require.Equal(t, 250*time.Millisecond, c.SeatMapCoalesce)
		require.Equal(t, 2*time.Second, c.HoldsRedisTimeout)
		require.Equal(t, 2*time.Second, c.PaymentsReconcileAfter)
		require.Equal(t, 500*time.Millisecond, c.PaymentsReconcileInterval)
		require.Equal(t, "sk_test_x", c.StripeSecretKey)
		require.Equal(t, "off", c.DevSignIn)
		require.Zero(t, c.WarmupEvents)
		require.Equal(t, time.Minute, c.WarmupTimeout)
	})

	t.Run("OKWebhookBaseURL", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{"PUBLIC_BASE_URL": "http://127.0.0.1:8080"}))
		require.NoError(t, err)
		require.Equal(t, "http://127.0.0.1:8080", c.PaymentsWebhookBaseURL, "defaults to PUBLIC_BASE_URL")
		c, err = Load(env(map[string]string{"PAYMENTS_WEBHOOK_BASE_URL": "http://127.0.0.1:8081"}))
		require.NoError(t, err)
		require.Equal(t, "http://127.0.0.1:8081", c.PaymentsWebhookBaseURL)
	})

	// Each invalid setting stops start-up with one line naming the variable.
	bad := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"DatabaseURLNoScheme", map[string]string{"DATABASE_URL": "localhost/ticketing"}, "DATABASE_URL"},
		{"RedisURL", map[string]string{"REDIS_URL": "http://127.0.0.1:6379"}, "REDIS_URL"},
		{"SearchBackend", map[string]string{"SEARCH_BACKEND": "solr"}, "SEARCH_BACKEND"},
		{"ElasticsearchURLMissing", map[string]string{"SEARCH_BACKEND": "elasticsearch"}, "ELASTICSEARCH_URL"},
		{"PaymentsProvider", map[string]string{"PAYMENTS_PROVIDER": "paypal"}, "PAYMENTS_PROVIDER"},
		{"PaymentsBaseURL", map[string]string{"PAYMENTS_BASE_URL": "nowhere"}, "PAYMENTS_BASE_URL"},
		{"PublicBaseURL", map[string]string{"PUBLIC_BASE_URL": "tickets.example"}, "PUBLIC_BASE_URL"},
		{"WebhookBaseURL", map[string]string{"PAYMENTS_WEBHOOK_BASE_URL": "hooks.example"}, "PAYMENTS_WEBHOOK_BASE_URL"},
		{"PaysimDatabaseURL", map[string]string{"PAYSIM_DATABASE_URL": "nope"}, "PAYSIM_DATABASE_URL"},
		{"ShortHS256Secret", map[string]string{"JWT_HS256_SECRET": "short"}, "JWT_HS256_SECRET"},
		{"ShortQueueKey", map[string]string{"QUEUE_SIGNING_KEY": "short"}, "QUEUE_SIGNING_KEY"},
		{"ShortTicketKey", map[string]string{"TICKET_SIGNING_KEY": "short"}, "TICKET_SIGNING_KEY"},
		{"DatabaseReadURL", map[string]string{"DATABASE_READ_URL": "replica/ticketing"}, "DATABASE_READ_URL"},
		{"RedisClusterAddrs", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1"}, "REDIS_CLUSTER_ADDRS"},
		{"SeatMapCoalesce", map[string]string{"SEATMAP_COALESCE": "fast"}, "SEATMAP_COALESCE"},
		{"HoldsRedisTimeout", map[string]string{"HOLDS_REDIS_TIMEOUT": "11s"}, "HOLDS_REDIS_TIMEOUT"},
		{"HoldLimitPerAddress", map[string]string{"HOLD_LIMIT_PER_ADDRESS": "many"}, "HOLD_LIMIT_PER_ADDRESS"},
		{"WarmupEvents", map[string]string{"WARMUP_EVENTS": "-1"}, "WARMUP_EVENTS"},
		{"WarmupTimeout", map[string]string{"WARMUP_TIMEOUT": "11m"}, "WARMUP_TIMEOUT"},
		{"ReconcileAfter", map[string]string{"PAYMENTS_RECONCILE_AFTER": "-1s"}, "PAYMENTS_RECONCILE_AFTER"},
		{"ReconcileInterval", map[string]string{"PAYMENTS_RECONCILE_INTERVAL": "30"}, "PAYMENTS_RECONCILE_INTERVAL"},
		// Stripe signs with the endpoint's secret: the public development
		// default would accept only forged notifications.
		{"StripeWithDevWebhookSecret", map[string]string{"PAYMENTS_PROVIDER": "stripe", "STRIPE_SECRET_KEY": "sk_test_x"}, "PAYMENTS_WEBHOOK_SECRET"},
	}
	for _, tc := range bad {
		t.Run("Err"+tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(env(tc.env))
			require.Error(t, err)
			msg := err.Error()
			require.Contains(t, msg, tc.want)
			require.NotContains(t, msg, "\n", "one line")
			require.True(t, strings.HasPrefix(msg, "config: "+tc.want+":"), msg)
		})
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	keys := map[string]string{"QUEUE_SIGNING_KEY": "0123456789abcdef", "TICKET_SIGNING_KEY": "fedcba9876543210"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range keys {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	c, err := Load(env(with(nil)))
	require.NoError(t, err)
	require.Empty(t, c.Warnings(), "keys set, loopback PUBLIC_BASE_URL: development")

	c, err = Load(env(with(map[string]string{"PUBLIC_BASE_URL": "https://tickets.example"})))
	require.NoError(t, err)
	require.Len(t, c.Warnings(), 1)
	require.Contains(t, c.Warnings()[0], "PAYMENTS_WEBHOOK_SECRET")

	c, err = Load(env(with(map[string]string{"PUBLIC_BASE_URL": "https://tickets.example", "PAYMENTS_WEBHOOK_SECRET": "whsec_real"})))
	require.NoError(t, err)
	require.Empty(t, c.Warnings())

	c, err = Load(env(map[string]string{"QUEUE_SIGNING_KEY": "0123456789abcdef"}))
	require.NoError(t, err)
	require.Equal(t, []string{"TICKET_SIGNING_KEY is not set: a random key for this process only (set the same key on every instance)"}, c.Warnings())
}

func TestIsLoopbackURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"http://127.0.0.1:8080": true, "http://localhost:8080": true, "http://[::1]:8080": true, "http://127.1.2.3": true,
		"https://tickets.example": false, "http://10.0.0.1:8080": false, "http://api:8080": false, "::": false,
	} {
		require.Equal(t, want, IsLoopbackURL(raw), raw)
	}
}
