package app

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/queue"
)

func TestClientAddr(t *testing.T) {
	trusted, err := queue.ParsePrefixes("10.0.0.0/8")
	require.NoError(t, err)
	req := func(remote, xff string) string {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return clientAddr(r, trusted)
	}
	require.Equal(t, "203.0.113.9", req("203.0.113.9:5555", "1.2.3.4"), "untrusted peer: header ignored")
	require.Equal(t, "1.2.3.4", req("10.1.1.1:5555", "1.2.3.4"))
	require.Equal(t, "1.2.3.4", req("10.1.1.1:5555", "6.6.6.6, 1.2.3.4, 10.2.2.2"), "right-most untrusted hop")
	require.Equal(t, "10.1.1.1", req("10.1.1.1:5555", ""))
	require.Equal(t, "2001:db8::1", req("[2001:db8::1]:443", ""))
}

// A WebSocket connection keeps the request id, the client's address and the
// caller of its upgrade request, and not the request's cancellation.
func TestWSConnContext(t *testing.T) {
	t.Parallel()
	reqCtx, cancel := context.WithCancel(context.Background())
	reqCtx = context.WithValue(reqCtx, requestIDKey{}, "req-1")
	reqCtx = queue.WithClientAddr(reqCtx, "203.0.113.7")
	reqCtx = auth.WithUser(reqCtx, auth.User{ID: "user-1"})
	r := httptest.NewRequest("GET", "/graphql", nil).WithContext(reqCtx)
	ctx := wsConnContext(r)
	cancel()
	require.NoError(t, ctx.Err())
	require.Equal(t, "req-1", RequestID(ctx))
	require.Equal(t, "203.0.113.7", queue.ClientAddr(ctx))
	u, ok := auth.UserFrom(ctx)
	require.True(t, ok)
	require.Equal(t, "user-1", u.ID)

	_, ok = auth.UserFrom(wsConnContext(httptest.NewRequest("GET", "/graphql", nil)))
	require.False(t, ok, "no caller without one on the request")
}
