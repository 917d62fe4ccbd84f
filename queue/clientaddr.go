package queue

import "context"

type clientAddrKey struct{}

// WithClientAddr returns ctx carrying the client's network address (an IP,
// as decided by the HTTP middleware in app/clientip.go).
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// ClientAddr returns the client address of ctx, or "" (then only the
// per-user join limit applies).
func ClientAddr(ctx context.Context) string {
	a, _ := ctx.Value(clientAddrKey{}).(string)
	return a
}
