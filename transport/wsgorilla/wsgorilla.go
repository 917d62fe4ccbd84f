// Package wsgorilla is the GraphQL WebSocket transport (graphql-transport-ws
// and the legacy graphql-ws) on github.com/gorilla/websocket, used in place
// of gqlgen's transport.Websocket (see Transport for why), and the Origin
// allow-list shared by the WebSocket and SSE endpoints.
package wsgorilla

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// writeWait bounds one write, so a client that stopped reading cannot block
// the connection's writer (and every subscription on it) forever.
const writeWait = 10 * time.Second

// OriginChecker returns a CheckOrigin function for browsers' cross-site
// requests. It allows requests without an Origin header (non-browser
// clients), an Origin whose host is the request's Host, and the listed
// origins ("scheme://host[:port]"; "*" allows any).
func OriginChecker(allowed ...string) func(r *http.Request) bool {
	set := map[string]bool{}
	for _, a := range allowed {
		if o := normalizeOrigin(a); o != "" {
			set[o] = true
		}
	}
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" || set["*"] {
			return true
		}
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" {
			return false
		}
		if strings.EqualFold(u.Host, r.Host) {
			return true
		}
		return set[normalizeOrigin(origin)]
	}
}

// normalizeOrigin reduces a URL to its lower-case scheme://host[:port].
func normalizeOrigin(s string) string {
	s = strings.TrimSpace(s)
	if s == "*" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
