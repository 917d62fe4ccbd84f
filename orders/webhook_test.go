package orders_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/payments"
)

// The webhook endpoint's answers, status and body: 200 {"received":true}
// once recorded (here a notification about a payment we do not know), 401
// for a bad signature, 400 for a signed body that is no notification or a
// body over 1 MiB, 405 for another method.
func TestWebhookAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	serve := func(method string, body []byte, sig string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/webhooks/payments", bytes.NewReader(body))
		if sig != "" {
			req.Header.Set(payments.SignatureHeader, sig)
		}
		w := httptest.NewRecorder()
		e.svc.WebhookHandler().ServeHTTP(w, req)
		return w
	}
	body, _ := json.Marshal(map[string]any{"id": "evt_unknown", "type": payments.EventPaymentSucceeded,
		"created": time.Now().Unix(), "data": map[string]any{"id": "pay_unknown", "status": "succeeded"}})

	w := serve(http.MethodPost, body, payments.Sign(testSecret, time.Now(), body))
	require.Equal(t, http.StatusOK, w.Code)
	require.Equal(t, `{"received":true}`, w.Body.String())
	require.Equal(t, 1, e.count(`SELECT count(*) FROM webhook_inbox WHERE id = 'evt_unknown'`))

	w = serve(http.MethodPost, body, payments.Sign("whsec_wrong", time.Now(), body))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Equal(t, "invalid signature\n", w.Body.String())

	junk := []byte(`{"not":"a notification"}`)
	w = serve(http.MethodPost, junk, payments.Sign(testSecret, time.Now(), junk))
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "bad notification\n", w.Body.String())

	big := bytes.Repeat([]byte(" "), 1<<20+1)
	w = serve(http.MethodPost, big, payments.Sign(testSecret, time.Now(), big))
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Equal(t, "body too large or unreadable\n", w.Body.String())

	w = serve(http.MethodGet, nil, "")
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	require.Equal(t, http.MethodPost, w.Header().Get("Allow"))
}
