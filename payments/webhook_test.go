package payments_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/payments"
)

const testSecret = "whsec_test_secret"

var notificationBody = []byte(`{"id":"evt_1","object":"event","type":"payment.succeeded","created":1700000000,` +
	`"data":{"id":"pay_1","object":"payment","status":"succeeded","amount":5000,"currency":"EUR","reference":"ord_1",` +
	`"checkout_url":"http://x/checkout/pay_1","created":1700000000,"updated":1700000000}}`)

func header(v string) http.Header {
	h := http.Header{}
	if v != "" {
		h.Set(payments.SignatureHeader, v)
	}
	return h
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	sb := payments.NewSandbox("http://127.0.0.1:1", testSecret, nil)
	now := time.Unix(1700000100, 0)

	n, err := sb.VerifyWebhook(header(payments.Sign(testSecret, now.Add(-time.Minute), notificationBody)), notificationBody, now)
	require.NoError(t, err)
	require.Equal(t, "evt_1", n.ID)
	require.Equal(t, payments.EventPaymentSucceeded, n.Type)
	require.Equal(t, "pay_1", n.Payment.ID)
	require.Equal(t, payments.StatusSucceeded, n.Payment.Status)
	require.Equal(t, int64(5000), n.Payment.Amount)
	require.Equal(t, time.Unix(1700000000, 0), n.Created)

	ts := strconv.FormatInt(now.Unix(), 10)
	good := payments.Sign(testSecret, now, notificationBody)
	goodSig := strings.TrimPrefix(good, "t="+ts+",")
	reject := map[string]struct {
		header string
		body   []byte
	}{
		"missing header":      {"", notificationBody},
		"forged (other key)":  {payments.Sign("whsec_attacker", now, notificationBody), notificationBody},
		"stale (6 min)":       {payments.Sign(testSecret, now.Add(-6*time.Minute), notificationBody), notificationBody},
		"future (6 min)":      {payments.Sign(testSecret, now.Add(6*time.Minute), notificationBody), notificationBody},
		"tampered body":       {good, []byte(strings.Replace(string(notificationBody), "5000", "1", 1))},
		"no timestamp":        {goodSig, notificationBody},
		"no v1":               {"t=" + ts, notificationBody},
		"malformed":           {"garbage", notificationBody},
		"timestamp changed":   {"t=" + strconv.FormatInt(now.Unix()-1, 10) + "," + goodSig, notificationBody},
		"two timestamps":      {"t=" + ts + "," + good, notificationBody},
		"non-hex signature":   {"t=" + ts + ",v1=zz", notificationBody},
		"v0 scheme only":      {"t=" + ts + ",v0=" + strings.TrimPrefix(goodSig, "v1="), notificationBody},
		"truncated signature": {good[:len(good)-2], notificationBody},
	}
	for name, c := range reject {
		_, err := sb.VerifyWebhook(header(c.header), c.body, now)
		require.ErrorIs(t, err, payments.ErrInvalidSignature, name)
	}

	// Several v1 signatures (secret rotation): one valid is enough.
	forged := payments.Sign("whsec_old", now, notificationBody)
	multi := good + "," + strings.TrimPrefix(forged, "t="+ts+",")
	_, err = sb.VerifyWebhook(header(multi), notificationBody, now)
	require.NoError(t, err)
	multi = "t=" + ts + "," + strings.TrimPrefix(forged, "t="+ts+",") + "," + goodSig
	_, err = sb.VerifyWebhook(header(multi), notificationBody, now)
	require.NoError(t, err)

	// The signature is checked before the body is parsed; a signed body
	// that is not a notification is a different error.
	bad := []byte(`{"nope":`)
	_, err = sb.VerifyWebhook(header(payments.Sign(testSecret, now, bad)), bad, now)
	require.ErrorIs(t, err, payments.ErrBadNotification)
	_, err = sb.VerifyWebhook(header(payments.Sign("x", now, bad)), bad, now)
	require.ErrorIs(t, err, payments.ErrInvalidSignature)
}
