package app

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
)

func TestSubscriptionCap(t *testing.T) {
	t.Parallel()
	n := new(atomic.Int64)
	conn := context.WithValue(context.Background(), subCountKey{}, n)
	conn = graphql.WithOperationContext(conn, &graphql.OperationContext{
		Operation: &ast.OperationDefinition{Operation: ast.Subscription},
	})
	c := subscriptionCap{max: 2}
	next := func(ctx context.Context) graphql.ResponseHandler {
		return graphql.OneShot(&graphql.Response{Data: []byte(`{}`)})
	}
	ctx1, cancel1 := context.WithCancel(conn)
	ctx2, cancel2 := context.WithCancel(conn)
	defer cancel2()
	require.Empty(t, c.InterceptOperation(ctx1, next)(ctx1).Errors)
	require.Empty(t, c.InterceptOperation(ctx2, next)(ctx2).Errors)
	r := c.InterceptOperation(conn, next)(conn)
	require.Len(t, r.Errors, 1)
	require.Equal(t, "RATE_LIMITED", r.Errors[0].Extensions["code"])
	cancel1() // the first subscription ends
	require.Eventually(t, func() bool { return n.Load() == 1 }, 5*time.Second, 10*time.Millisecond)
	ctx3, cancel3 := context.WithCancel(conn)
	defer cancel3()
	require.Empty(t, c.InterceptOperation(ctx3, next)(ctx3).Errors)
}
