package app

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/ticketing/ticketing/queue"
)

// withClientAddr puts the client's IP in the request context
// (queue.ClientAddr), for the per-address join limit of the waiting room.
// X-Forwarded-For is believed only when the TCP peer is one of trusted
// (TRUSTED_PROXIES): the address is then the right-most entry that is not a
// trusted proxy, so a client cannot choose its address by sending the header.
func withClientAddr(trusted []netip.Prefix, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := queue.WithClientAddr(r.Context(), clientAddr(r, trusted))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a.String()
		}
		peer = a
	}
	return peer.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
