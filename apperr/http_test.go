package apperr_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
)

func TestWriteHTTP(t *testing.T) {
	t.Parallel()
	write := func(path string, err error) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		apperr.WriteHTTP(w, httptest.NewRequest("POST", path, nil), err)
		return w
	}

	t.Run("REST", func(t *testing.T) {
		t.Parallel()
		w := write("/api/holds", apperr.Invalid("input.eventId", "not a valid id"))
		require.Equal(t, http.StatusBadRequest, w.Code)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
		require.Equal(t, `{"error":{"code":"BAD_USER_INPUT","field":"input.eventId","message":"input.eventId: not a valid id"}}`+"\n", w.Body.String())
	})
	t.Run("GraphQL", func(t *testing.T) {
		t.Parallel()
		w := write("/graphql", apperr.ErrUnauthenticated)
		require.Equal(t, http.StatusUnauthorized, w.Code)
		require.Equal(t, `{"data":null,"errors":[{"extensions":{"code":"UNAUTHENTICATED"},"message":"authentication required"}]}`+"\n", w.Body.String())
	})
	t.Run("RetryAfter", func(t *testing.T) {
		t.Parallel()
		w := write("/api/holds", &apperr.RateLimitedError{RetryAfter: 1500 * time.Millisecond})
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		require.Equal(t, "2", w.Header().Get("Retry-After"))
		require.Equal(t, `{"error":{"code":"RATE_LIMITED","message":"rate limited","retryAfterSeconds":2}}`+"\n", w.Body.String())
	})
	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		w := write("/api/holds", http.ErrBodyNotAllowed)
		require.Equal(t, http.StatusInternalServerError, w.Code)
		require.Equal(t, `{"error":{"code":"INTERNAL","message":"internal error"}}`+"\n", w.Body.String())
	})
}
