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
		require.ElementsMatch(t, []string{"QUEUE_SIGNING_KEY", "TICKET_SIGNING_KEY"}, c.GeneratedKeys)
		require.GreaterOrEqual(t, len(c.QueueSigningKey), 16)
	})
	t.Run("OKAllowedOrigins", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{"ALLOWED_ORIGINS": " https://a.example , ,https://b.example"}))
		require.NoError(t, err)
		require.Equal(t, []string{"https://a.example", "https://b.example"}, c.AllowedOrigins)
	})

	t.Run("OKDurationsAndPayments", func(t *testing.T) {
		t.Parallel()
		c, err := Load(env(map[string]string{"SEATMAP_COALESCE": "250ms", "PAYMENTS_RECONCILE_AFTER": "2s",
			"PAYMENTS_RECONCILE_INTERVAL": "500ms", "PAYMENTS_PROVIDER": "stripe", "STRIPE_SECRET_KEY": "sk_test_x",
			"DEV_SIGNIN": "off"}))
		require.NoError(t, err)
		require.Equal(t, 250*time.Millisecond, c.SeatMapCoalesce)
		require.Equal(t, 2*time.Second, c.PaymentsReconcileAfter)
		require.Equal(t, 500*time.Millisecond, c.PaymentsReconcileInterval)
		require.Equal(t, "sk_test_x", c.StripeSecretKey)
		require.Equal(t, "off", c.DevSignIn)
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
		{"PaysimDatabaseURL", map[string]string{"PAYSIM_DATABASE_URL": "nope"}, "PAYSIM_DATABASE_URL"},
		{"ShortHS256Secret", map[string]string{"JWT_HS256_SECRET": "short"}, "JWT_HS256_SECRET"},
		{"ShortQueueKey", map[string]string{"QUEUE_SIGNING_KEY": "short"}, "QUEUE_SIGNING_KEY"},
		{"ShortTicketKey", map[string]string{"TICKET_SIGNING_KEY": "short"}, "TICKET_SIGNING_KEY"},
		{"SeatMapCoalesce", map[string]string{"SEATMAP_COALESCE": "fast"}, "SEATMAP_COALESCE"},
		{"ReconcileAfter", map[string]string{"PAYMENTS_RECONCILE_AFTER": "-1s"}, "PAYMENTS_RECONCILE_AFTER"},
		{"ReconcileInterval", map[string]string{"PAYMENTS_RECONCILE_INTERVAL": "30"}, "PAYMENTS_RECONCILE_INTERVAL"},
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
