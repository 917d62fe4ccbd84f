package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// newRequest is the provider request of a new attempt, persisted with it
// (payments.request_*) when the attempt is recorded.
func (s *Service) newRequest(paymentID, orderID string) (*store.PaymentRequest, error) {
	r := &store.PaymentRequest{
		Reference:  paymentID,
		WebhookURL: s.cfg.WebhookBaseURL + "/webhooks/payments",
		ReturnURL:  s.cfg.PublicBaseURL + "/orders/" + orderID,
	}
	if len(s.cfg.Simulate) > 0 {
		b, err := json.Marshal(s.cfg.Simulate)
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		r.Simulate = string(b)
	}
	return r, nil
}

// createRequest is the provider request of an attempt, read from its row:
// amount and currency are the row's, the rest is what the attempt was
// created with (payments.request_*), so every create of the attempt, first
// or repeated, from any instance, is the same request and the provider
// answers it with the same payment. PUBLIC_BASE_URL and PAYMENTS_WEBHOOK_BASE_URL may differ
// between instances: it is only read when the attempt is created. Rows older than
// the persisted request are rebuilt from this instance's configuration.
func (s *Service) createRequest(p Payment) (payments.CreateRequest, error) {
	r := payments.CreateRequest{
		Amount:         p.Amount,
		Currency:       p.Currency,
		IdempotencyKey: p.IdempotencyKey,
	}
	req := p.Request
	if req == nil { // legacy row
		var err error
		if req, err = s.newRequest(p.ID, p.OrderID); err != nil {
			return r, err
		}
	}
	r.Reference, r.WebhookURL, r.ReturnURL = req.Reference, req.WebhookURL, req.ReturnURL
	if req.Simulate != "" {
		// json.Number keeps the numbers' text: the re-encoded object is the
		// one first sent (encoding/json sorts map keys).
		dec := json.NewDecoder(strings.NewReader(req.Simulate))
		dec.UseNumber()
		if err := dec.Decode(&r.Simulate); err != nil {
			return r, fmt.Errorf("payment %s: persisted simulate: %w", p.ID, err)
		}
	}
	return r, nil
}

// createOutcome is what a create's error says about the attempt.
type createOutcome int

const (
	// outcomeUnknown: the provider may hold a payment under the key.
	outcomeUnknown createOutcome = iota
	// outcomeRefused: a definite refusal of the request; no payment exists.
	outcomeRefused
)

// classifyCreate: a 422 idempotency_key_reused is NOT a refusal of the
// charge: the provider already holds a payment under this key (created by
// an earlier request of the attempt, possibly being paid right now); the
// outcome is unknown and resolved later (a notification carries our
// reference, or a repeat of the original request gets the payment).
func classifyCreate(err error) createOutcome {
	if errors.Is(err, payments.ErrIdempotencyKeyReused) || !errors.Is(err, payments.ErrRejected) {
		return outcomeUnknown
	}
	return outcomeRefused
}

// openAtProvider creates (or re-creates, same key) the attempt at the
// provider and records the answer. An unknown outcome leaves the attempt
// UNKNOWN for the reconciler; a definite refusal fails it.
func (s *Service) openAtProvider(ctx context.Context, p Payment) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ProviderTimeout)
	defer cancel()
	req, err := s.createRequest(p)
	if err != nil {
		s.cfg.Log.Error("build provider request", "payment", p.ID, "err", err)
		return
	}
	pp, err := s.cfg.Provider.CreatePayment(ctx, req)
	switch {
	case err == nil:
		err = s.recordAnswer(ctx, p.ID, pp, "provider answered create: "+string(pp.Status))
	case errors.Is(err, payments.ErrIdempotencyKeyReused):
		s.cfg.Log.Warn("payment create answered idempotency_key_reused: outcome unknown", "payment", p.ID, "err", err)
		err = s.st.RecordPaymentEvent(ctx, p.ID, p.Status,
			"provider holds a payment under this key with another request (422 idempotency_key_reused): outcome unknown, left to reconciliation")
	case classifyCreate(err) == outcomeRefused:
		// Our decision rests on the status read (UNKNOWN, no answer yet):
		// if anything recorded an answer meanwhile, it is stale.
		err = s.recordStatus(ctx, p.ID, PaymentFailed, "provider refused create: "+err.Error(), p.Status)
	default: // unknown outcome or unavailable: the reconciler resolves it with the same key
		s.cfg.Log.Warn("payment create outcome unknown", "payment", p.ID, "err", err)
		return
	}
	if err != nil {
		s.cfg.Log.Error("record provider answer", "payment", p.ID, "err", err)
	}
}

// resumeUnknown resolves the open attempts of an order: a create without an
// answer is repeated with the same key; a pending one is queried.
func (s *Service) resumeUnknown(ctx context.Context, orderID string) {
	ps, err := s.st.OrderPayments(ctx, orderID)
	if err != nil {
		return
	}
	for _, p := range ps {
		if Open(p.Status) {
			_ = s.askProvider(ctx, p)
		}
	}
}

// ErrKeyWindowPassed: the create of an attempt was never answered within
// payments.KeyWindow, so it is not repeated (a repeat could open a second
// payment). The attempt stays UNKNOWN for a person to resolve at the
// provider by its reference, the attempt id: the audit reports it,
// ticketing_payments_unknown_stuck counts it, and a late notification still
// settles it.
var ErrKeyWindowPassed = errors.New("outcome unknown past the provider's idempotency window: not repeated (resolve it at the provider by the attempt's reference)")

// askProvider learns the provider's state of an open (or rechecked)
// attempt, by repeating its create with the same key while it has no
// provider payment, else by reading that payment, and records it
// (recordAnswer).
func (s *Service) askProvider(ctx context.Context, p Payment) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ProviderTimeout)
	defer cancel()
	var (
		pp  payments.ProviderPayment
		err error
	)
	if p.ProviderRef == nil {
		if s.cfg.Now().Sub(p.CreatedAt) > payments.KeyWindow {
			return fmt.Errorf("payment %s: %w", p.ID, ErrKeyWindowPassed)
		}
		req, rerr := s.createRequest(p)
		if rerr != nil {
			return rerr
		}
		pp, err = s.cfg.Provider.CreatePayment(ctx, req)
		if err != nil && classifyCreate(err) == outcomeRefused {
			// Only valid against the status read: a concurrent answer
			// (PENDING, a notification) makes the refusal stale.
			return s.recordStatus(ctx, p.ID, PaymentFailed, "provider refused repeated create: "+err.Error(), p.Status)
		}
		if errors.Is(err, payments.ErrIdempotencyKeyReused) {
			return fmt.Errorf("payment %s: repeated create: provider holds a payment under this key (outcome unknown): %w", p.ID, err)
		}
	} else {
		pp, err = s.cfg.Provider.GetPayment(ctx, *p.ProviderRef)
	}
	if err != nil {
		return err
	}
	return s.recordAnswer(ctx, p.ID, pp, "reconciled with provider: "+string(pp.Status))
}

// voidPayment cancels an open attempt of an order that can no longer be
// confirmed. If the provider says it is no longer pending, its real state is
// recorded (a success is then refunded).
//
// With a provider whose failed payments may still succeed (Stripe), a
// FAILED attempt is voided too: its intent stays payable otherwise.
func (s *Service) voidPayment(ctx context.Context, paymentID string) error {
	p, err := s.st.GetPayment(ctx, paymentID)
	if err != nil || !s.voidable(p.Status) {
		return err
	}
	if p.ProviderRef == nil && p.Status == PaymentFailed {
		return nil // refused at create: nothing exists to void
	}
	if p.ProviderRef == nil {
		if err := s.askProvider(ctx, p); err != nil {
			return err
		}
		if p, err = s.st.GetPayment(ctx, paymentID); err != nil || !Open(p.Status) {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ProviderTimeout)
	defer cancel()
	pp, err := s.cfg.Provider.CancelPayment(ctx, *p.ProviderRef)
	switch {
	case err == nil:
		return s.recordAnswer(ctx, p.ID, pp, "voided at the provider: order no longer confirmable")
	case errors.Is(err, payments.ErrNotPending) && pp.Status != "":
		return s.recordAnswer(ctx, p.ID, pp, "void refused, provider says "+string(pp.Status))
	}
	return err
}

// refundPayment asks the provider to refund a REFUND_PENDING payment (the
// key is fixed per payment) and records REFUNDED once it confirms.
func (s *Service) refundPayment(ctx context.Context, paymentID string) error {
	p, err := s.st.GetPayment(ctx, paymentID)
	if err != nil || p.Status != PaymentRefundPending {
		return err
	}
	if p.ProviderRef == nil {
		return fmt.Errorf("payment %s: REFUND_PENDING without provider reference", p.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ProviderTimeout)
	defer cancel()
	r, err := s.cfg.Provider.Refund(ctx, *p.ProviderRef, "refund_"+p.ID)
	switch {
	case err == nil:
		return s.recordStatus(ctx, p.ID, PaymentRefunded, "refund "+r.ID+" confirmed by the provider")
	case errors.Is(err, payments.ErrNotRefundable) && r.Payment.Status == payments.StatusRefunded:
		return s.recordStatus(ctx, p.ID, PaymentRefunded, "provider reports the payment already refunded")
	}
	return err
}
