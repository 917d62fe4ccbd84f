package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// A fan who navigates away mid-request cancels its context: the resolver
// errors that follow are no fault of the server and are not logged as
// errors; a real internal error still is.
func TestAbandonedRequestIsNotLoggedAsAnError(t *testing.T) {
	var buf bytes.Buffer
	a := &App{Log: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	gone, cancel := context.WithCancel(context.Background())
	cancel()

	gerr := a.presentError(gone, resolverError{fmt.Errorf("event: events by ids: %w", context.Canceled)})
	require.Equal(t, "INTERNAL", gerr.Extensions["code"])
	require.Contains(t, buf.String(), `"level":"DEBUG"`)
	require.NotContains(t, buf.String(), `"level":"ERROR"`)

	buf.Reset()
	a.presentError(context.Background(), resolverError{errors.New("boom")})
	require.Contains(t, buf.String(), `"level":"ERROR"`)
	buf.Reset()
	// A cancellation that is not the request's own (a dependency's call cut short) is still an error.
	a.presentError(context.Background(), resolverError{fmt.Errorf("x: %w", context.Canceled)})
	require.Contains(t, buf.String(), `"level":"ERROR"`)
}
