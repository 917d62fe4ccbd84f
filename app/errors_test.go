package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/ticketing/ticketing/apperr"
)

func TestPresentError(t *testing.T) {
	t.Parallel()
	a := &App{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()

	t.Run("OKKnown", func(t *testing.T) {
		t.Parallel()
		e := a.presentError(ctx, resolverError{fmt.Errorf("createVenue: %w", apperr.Invalid("input.name", "must not be empty"))})
		require.Equal(t, "BAD_USER_INPUT", e.Extensions["code"])
		require.Equal(t, "input.name", e.Extensions["field"])
		e = a.presentError(ctx, resolverError{fmt.Errorf("op: %w", apperr.ErrForbidden)})
		require.Equal(t, "FORBIDDEN", e.Extensions["code"])
	})
	t.Run("OKUnknownIsInternal", func(t *testing.T) {
		t.Parallel()
		e := a.presentError(ctx, resolverError{errors.New("pq: secret table exploded")})
		require.Equal(t, "INTERNAL", e.Extensions["code"])
		require.Equal(t, "internal error", e.Message)
	})
	t.Run("OKKeepsGqlgenCode", func(t *testing.T) {
		t.Parallel()
		g := gqlerror.Errorf("Cannot query field")
		g.Extensions = map[string]any{"code": "GRAPHQL_VALIDATION_FAILED"}
		e := a.presentError(ctx, g)
		require.Equal(t, "GRAPHQL_VALIDATION_FAILED", e.Extensions["code"])
		require.Equal(t, "Cannot query field", e.Message)
	})
	t.Run("OKInputCoercion", func(t *testing.T) {
		t.Parallel()
		e := a.presentError(ctx, gqlerror.WrapPath(nil, errors.New("time should be RFC3339Nano formatted string")))
		require.Equal(t, "BAD_USER_INPUT", e.Extensions["code"])
	})
}
