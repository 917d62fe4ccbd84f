package payments

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// NotificationSink applies a verified notification durably (the orders
// engine: inbox deduplication and the state machine in one transaction).
type NotificationSink interface {
	ApplyNotification(ctx context.Context, provider string, n Notification, raw []byte) error
}

// maxWebhookBody bounds a notification body.
const maxWebhookBody = 1 << 20

// WebhookHandler serves POST /webhooks/payments. It authenticates the raw
// body with the provider's signature (constant time, 5-minute tolerance)
// before parsing anything: a missing, forged or stale signature is 401 and
// changes nothing; a signed body that is not a notification is 400. A
// verified notification is answered 200 only once the sink has recorded it
// durably; a sink failure is 500, so the provider retries.
func WebhookHandler(p Provider, providerName string, sink NotificationSink, now func() time.Time, log *slog.Logger) http.Handler {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "body too large or unreadable", http.StatusBadRequest)
			return
		}
		n, err := p.VerifyWebhook(r.Header, body, now())
		switch {
		case errors.Is(err, ErrInvalidSignature):
			log.Warn("webhook rejected: invalid signature", "err", err, "remote", r.RemoteAddr)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		case err != nil:
			log.Warn("webhook rejected: bad notification", "err", err)
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		if err := sink.ApplyNotification(r.Context(), providerName, n, body); err != nil {
			log.Error("webhook not recorded", "notification", n.ID, "err", err)
			http.Error(w, "not recorded, retry", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"received":true}`))
	})
}
