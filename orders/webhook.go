package orders

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// maxWebhookBody bounds a notification body.
const maxWebhookBody = 1 << 20

// WebhookHandler serves POST /webhooks/payments for the service's
// provider. It authenticates the raw body with the provider's signature
// (constant time, 5-minute tolerance) before parsing anything: a missing,
// forged or stale signature is 401 and changes nothing; a signed body that
// is not a notification is 400. A verified notification is answered 200
// only once ApplyNotification has recorded it durably; a failure there is
// 500, so the provider retries.
func (s *Service) WebhookHandler() http.Handler {
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
		n, err := s.cfg.Provider.VerifyWebhook(r.Header, body, s.cfg.Now())
		switch {
		case errors.Is(err, payments.ErrInvalidSignature):
			s.cfg.Log.Warn("webhook rejected: invalid signature", "err", err, "remote", r.RemoteAddr)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		case err != nil:
			s.cfg.Log.Warn("webhook rejected: bad notification", "err", err)
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		if err := s.ApplyNotification(r.Context(), s.cfg.ProviderName, n, body); err != nil {
			s.cfg.Log.Error("webhook not recorded", "notification", n.ID, "err", err)
			http.Error(w, "not recorded, retry", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"received":true}`))
	})
}

// ApplyNotification applies a verified provider notification: deduplicated
// by its id through webhook_inbox in the same transaction as its effect,
// then applied through the state machine, advance (duplicates and
// reordered ones change nothing). A notification about a payment we do not know is
// recorded and ignored. It runs on Config.Notifications (a pool of its own).
func (s *Service) ApplyNotification(ctx context.Context, provider string, n payments.Notification, raw []byte) error {
	if !json.Valid(raw) {
		raw, _ = json.Marshal(map[string]any{"id": n.ID, "type": n.Type, "payment": n.Payment})
	}
	var eff effects
	start := time.Now()
	var began time.Time
	err := s.cfg.Notifications.InTx(ctx, func(tx *store.Store) error {
		began = time.Now()
		// By the provider's id, or (the create's answer never came) by our
		// reference, the attempt id; read with the inbox's insert.
		reference := ""
		if validUUID(n.Payment.Reference) {
			reference = n.Payment.Reference
		}
		fresh, found, p, err := tx.InboxPayment(ctx, n.ID, provider, n.Type, raw, n.Payment.ID, reference)
		if err != nil || !fresh {
			return err
		}
		reason := "webhook " + n.ID + " " + n.Type
		if !found && reference != "" {
			// Our reference on another provider payment than the one
			// bound to the attempt: someone else's payment naming ours.
			if q, qerr := tx.PaymentByReference(ctx, provider, reference); qerr == nil {
				q, o, err := lockPayment(ctx, tx, q.ID)
				if err != nil {
					return err
				}
				if eff, err = s.mismatch(ctx, tx, provider, o, q, n.Payment, reason+": our reference on another provider payment"); err != nil {
					return err
				}
				return nil
			} else if !errors.Is(qerr, store.ErrNotFound) {
				return qerr
			}
		}
		if !found {
			s.cfg.Log.Warn("notification for an unknown payment", "notification", n.ID, "payment", n.Payment.ID)
			return nil
		}
		p, o, err := lockRead(ctx, tx, p)
		if err != nil {
			return err
		}
		// Amount and currency first: a notification that disagrees with
		// the attempt binds nothing and confirms nothing.
		if bad, err := disagrees(ctx, tx, provider, p, n.Payment); err != nil {
			return err
		} else if bad {
			if eff, err = s.mismatch(ctx, tx, provider, o, p, n.Payment, reason); err != nil {
				return err
			}
			return nil
		}
		if p.ProviderRef == nil {
			if err := tx.SetPaymentProviderRef(ctx, p.ID, n.Payment.ID, n.Payment.CheckoutURL); err != nil {
				return err
			}
		}
		if n.Type == payments.EventRefundPartial {
			if err := s.partialRefund(ctx, tx, p, n.Payment.RefundedAmount, reason); err != nil {
				return err
			}
		}
		if to := fromNotification(n.Type); to != "" {
			rev := reversalOf(n.Payment)
			if n.Type == payments.EventPaymentDisputed {
				rev = "dispute"
			}
			eff, err = s.advance(ctx, tx, o, p, to, reason, rev)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.metrics.notification.WithLabelValues("connection").Observe(began.Sub(start).Seconds())
		s.metrics.notification.WithLabelValues("transaction").Observe(time.Since(began).Seconds())
	}
	s.after(ctx, eff, err)
	return err
}
