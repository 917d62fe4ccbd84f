package payments

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries the sandbox provider's
// signature: "t=<unix seconds>,v1=<hex HMAC-SHA256>".
const SignatureHeader = "Paysim-Signature"

// SignatureTolerance is how far a signature's timestamp may be from now.
const SignatureTolerance = 5 * time.Minute

func mac(secret string, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Sign returns the Paysim-Signature header value for body signed with
// secret at t, exactly as the provider sends it. Tests of the webhook
// receiver use it to produce (or forge) notifications.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// VerifySignature checks a Paysim-Signature header value against the raw
// body: one t=, at least one v1= (any may match, for secret rotation),
// compared in constant time, and a timestamp within tolerance of now in
// either direction. Errors wrap ErrInvalidSignature.
func VerifySignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if header == "" {
		return fmt.Errorf("%w: missing %s header", ErrInvalidSignature, SignatureHeader)
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: malformed header", ErrInvalidSignature)
		}
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%w: more than one timestamp", ErrInvalidSignature)
			}
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: missing or malformed timestamp", ErrInvalidSignature)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: no v1 signature", ErrInvalidSignature)
	}
	want := mac(secret, ts, body)
	match := false
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			match = true
		}
	}
	if !match {
		return fmt.Errorf("%w: signature does not match", ErrInvalidSignature)
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: timestamp outside the %s tolerance", ErrInvalidSignature, tolerance)
	}
	return nil
}

// parseNotification decodes a verified notification body.
func parseNotification(body []byte) (Notification, error) {
	var raw struct {
		ID      string      `json:"id"`
		Type    string      `json:"type"`
		Created int64       `json:"created"`
		Data    wirePayment `json:"data"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Notification{}, fmt.Errorf("%w: %v", ErrBadNotification, err)
	}
	if raw.ID == "" || raw.Type == "" || raw.Data.ID == "" {
		return Notification{}, fmt.Errorf("%w: missing id, type or data.id", ErrBadNotification)
	}
	return Notification{ID: raw.ID, Type: raw.Type, Created: time.Unix(raw.Created, 0), Payment: raw.Data.payment()}, nil
}
