package apperr_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
)

func TestCheckIdempotencyKey(t *testing.T) {
	t.Parallel()
	require.NoError(t, apperr.CheckIdempotencyKey("input.idempotencyKey", "k"))
	require.NoError(t, apperr.CheckIdempotencyKey("input.idempotencyKey", strings.Repeat("k", 200)))
	for _, key := range []string{"", strings.Repeat("k", 201)} {
		var inv *apperr.InvalidInputError
		require.ErrorAs(t, apperr.CheckIdempotencyKey("idempotencyKey", key), &inv)
		require.Equal(t, "idempotencyKey", inv.Field)
	}
}
