package wsgorilla

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOriginChecker(t *testing.T) {
	t.Parallel()
	check := OriginChecker("https://Tickets.example/", "http://127.0.0.1:8080", "not a url")
	cases := []struct {
		origin, host string
		ok           bool
	}{
		{"", "api.example", true}, // non-browser client
		{"https://api.example", "api.example", true},
		{"https://tickets.example", "api.example", true},
		{"HTTPS://TICKETS.EXAMPLE", "api.example", true},
		{"http://127.0.0.1:8080", "api.example", true},
		{"http://tickets.example", "api.example", false}, // scheme matters
		{"https://evil.example", "api.example", false},
		{"null", "api.example", false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "http://"+c.host+"/graphql", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		require.Equal(t, c.ok, check(r), "origin %q host %q", c.origin, c.host)
	}
	r := httptest.NewRequest("GET", "/graphql", nil)
	r.Header.Set("Origin", "https://anything.example")
	require.True(t, OriginChecker("*")(r))
}
