package orders

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// Order statuses.
const (
	OrderAwaitingPayment = "AWAITING_PAYMENT"
	OrderConfirmed       = "CONFIRMED"
	OrderPaymentFailed   = "PAYMENT_FAILED"
	OrderExpired         = "EXPIRED"
	OrderCancelled       = "CANCELLED"
)

// Payment statuses (one payment row is one attempt at the provider).
const (
	// PaymentUnknown: the attempt is recorded but the provider's answer to
	// the create is not known (not yet sent, or it timed out).
	PaymentUnknown       = "UNKNOWN"
	PaymentPending       = "PENDING"
	PaymentSucceeded     = "SUCCEEDED"
	PaymentFailed        = "FAILED"
	PaymentCancelled     = "CANCELLED"
	PaymentRefundPending = "REFUND_PENDING"
	PaymentRefunded      = "REFUNDED"
)

// transitions is the payment state machine. Anything else (a duplicate, a
// late or reordered notification) is ignored:
//
//	UNKNOWN  -> PENDING | SUCCEEDED | FAILED | CANCELLED | REFUNDED
//	PENDING  -> SUCCEEDED | FAILED | CANCELLED | REFUNDED
//	FAILED -> SUCCEEDED | REFUNDED | CANCELLED  (the provider's word wins;
//	          CANCELLED: a payable failed intent voided, with Stripe)
//	CANCELLED -> SUCCEEDED | REFUNDED
//	SUCCEEDED -> REFUND_PENDING | REFUNDED
//	REFUND_PENDING -> REFUNDED
//	REFUNDED: final
//
// REFUNDED straight from PENDING/UNKNOWN/SUCCEEDED covers a refund the
// provider reports before we learnt of the charge (reordering, or a refund
// made at the provider's dashboard): the money is back either way.
//
// FAILED and CANCELLED are our bookkeeping, and may be wrong (a refusal
// recorded on a stale read, a void that lost to the buyer's payment): a
// verified report that the provider took the money (SUCCEEDED) or gave it
// back (REFUNDED) overrides them, so that a charge is never ignored: it
// confirms the order or is refunded. Nothing moves a payment back to FAILED
// or CANCELLED once it has succeeded, so the machine cannot oscillate and
// duplicates or reordered notifications stay harmless.
var transitions = map[string][]string{
	PaymentUnknown:       {PaymentPending, PaymentSucceeded, PaymentFailed, PaymentCancelled, PaymentRefunded},
	PaymentPending:       {PaymentSucceeded, PaymentFailed, PaymentCancelled, PaymentRefunded},
	PaymentFailed:        {PaymentSucceeded, PaymentRefunded, PaymentCancelled},
	PaymentCancelled:     {PaymentSucceeded, PaymentRefunded},
	PaymentSucceeded:     {PaymentRefundPending, PaymentRefunded},
	PaymentRefundPending: {PaymentRefunded},
}

// CanTransition reports whether a payment may move from one status to
// another.
func CanTransition(from, to string) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Open reports whether a payment status is an open attempt (at most one
// per order: the payments_one_open index).
func Open(status string) bool { return status == PaymentPending || status == PaymentUnknown }

// voidable reports whether an attempt in status must be voided at the
// provider when its order can no longer use it: an open one, or, with a
// provider whose failed payments may still succeed (Stripe: the buyer can
// confirm a declined PaymentIntent again), a FAILED one.
func (s *Service) voidable(status string) bool {
	return Open(status) || (status == PaymentFailed && payments.FailedMaySucceed(s.cfg.Provider))
}

// confirmable reports whether an order may still be confirmed by a payment.
func confirmable(status string) bool {
	return status == OrderAwaitingPayment || status == OrderPaymentFailed
}

// fromProvider maps a provider status to ours.
func fromProvider(s payments.Status) string {
	switch s {
	case payments.StatusPending:
		return PaymentPending
	case payments.StatusSucceeded:
		return PaymentSucceeded
	case payments.StatusFailed:
		return PaymentFailed
	case payments.StatusCancelled:
		return PaymentCancelled
	case payments.StatusRefunded:
		return PaymentRefunded
	}
	return ""
}

// fromNotification maps a notification type to the status it reports.
func fromNotification(typ string) string {
	switch typ {
	case payments.EventPaymentSucceeded:
		return PaymentSucceeded
	case payments.EventPaymentFailed:
		return PaymentFailed
	case payments.EventPaymentCancelled:
		return PaymentCancelled
	case payments.EventRefundSucceeded, payments.EventPaymentDisputed:
		return PaymentRefunded
	}
	return ""
}

// advance is the one step of the state machine: payment p (locked, with
// its order o locked) moves to status to, with its effects on the order, in
// tx. Every change of a payment's status that the provider reports comes
// here, through one of three entries that lock the payment:
//
//	ApplyNotification (webhook.go)  a verified notification
//	recordAnswer                    the provider's answer to our call
//	recordStatus                    a refusal of our create, a refund confirmed
//
// (mismatch fails an open attempt through it too). Its effects: a success
// confirms the order (confirm) or, the order being past confirming, is
// compensated (compensate, lateCharge); a failure of the open attempt
// leaves the order PAYMENT_FAILED, open to retryPayment.
//
// A REFUNDED reported while the payment is SUCCEEDED and its order
// CONFIRMED is a reversal the provider made on its own (a dashboard refund;
// rev "dispute": a chargeback): the payment is the one that confirmed the
// order (any other success is compensated at once), so the order is
// refunded too (refundOrder: tickets VOID, seats back on sale), with
// nothing more to refund.
func (s *Service) advance(ctx context.Context, tx *store.Store, o Order, p Payment, to, reason string, rev ...string) (effects, error) {
	var eff effects
	// Compare-and-set on the status read; a lost race (the row is locked
	// by lockPayment, so only a caller that did not lock it can lose)
	// re-reads and re-applies the state machine to what is there now.
	for try := 0; ; try++ {
		if p.Status == to || !CanTransition(p.Status, to) {
			return eff, nil // duplicate, late or reordered: nothing to do
		}
		why := reason
		if to == PaymentSucceeded && (p.Status == PaymentFailed || p.Status == PaymentCancelled) {
			why += " (overrides our " + p.Status + ": the provider reports the money taken)"
		}
		ok, err := tx.TransitionOrderPayment(ctx, o.ID, p.ID, p.Status, to, why)
		if err != nil {
			return eff, err
		}
		if ok {
			break
		}
		if try == 3 {
			return eff, fmt.Errorf("payment %s: status keeps changing under %s -> %s", p.ID, p.Status, to)
		}
		if p, err = tx.GetPaymentForUpdate(ctx, p.ID); err != nil {
			return eff, err
		}
	}
	if to == PaymentRefunded && p.Status == PaymentSucceeded {
		kind := "refund"
		if len(rev) > 0 && rev[0] != "" {
			kind = rev[0]
		}
		if err := tx.SetPaymentReversal(ctx, p.ID, kind, p.Amount); err != nil {
			return eff, err
		}
		if o.Status == OrderConfirmed {
			return eff, s.refundOrder(ctx, tx, o, "the provider reported a "+kind+" of the confirming payment")
		}
	}
	switch to {
	case PaymentSucceeded:
		if !confirmable(o.Status) {
			why := "order already " + o.Status
			if o.Status == OrderConfirmed {
				why = "redundant charge: order already confirmed by another attempt"
			}
			return eff, s.compensate(ctx, tx, p.ID, why)
		}
		confirmed, heldAt, why, err := s.confirm(ctx, tx, o)
		if err != nil {
			return eff, err
		}
		if confirmed != nil {
			// An older attempt succeeded while a newer one was open.
			eff.confirmed, eff.heldAt = confirmed, heldAt
			return eff, s.voidAttempts(ctx, tx, o.ID, p.ID, "")
		}
		return eff, s.lateCharge(ctx, tx, o, p, why)
	case PaymentFailed, PaymentCancelled, PaymentRefunded:
		if Open(p.Status) && o.Status == OrderAwaitingPayment {
			return eff, tx.SetOrderStatus(ctx, o.ID, OrderPaymentFailed)
		}
	}
	return eff, nil
}

// recordAnswer records the provider's answer to a call of ours about a
// payment (create, get, cancel: its id, checkout page and status): the
// entry of createOrder, retryPayment, the reconciler and the void job.
func (s *Service) recordAnswer(ctx context.Context, paymentID string, pp payments.ProviderPayment, reason string) error {
	var eff effects
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		p, o, err := lockPayment(ctx, tx, paymentID)
		if err != nil {
			return err
		}
		if bad, err := disagrees(ctx, tx, s.cfg.ProviderName, p, pp); err != nil {
			return err
		} else if bad {
			if p.ProviderRef == nil && pp.ID != "" {
				// The answer to our own create (same key): it is this
				// attempt's payment, recorded so that it is recognised.
				if err := tx.SetPaymentProviderRef(ctx, p.ID, pp.ID, pp.CheckoutURL); err != nil {
					return err
				}
				ref := pp.ID
				p.ProviderRef = &ref
			}
			eff, err = s.mismatch(ctx, tx, s.cfg.ProviderName, o, p, pp, reason)
			return err
		}
		if pp.ID != "" && p.ProviderRef == nil {
			if err := tx.SetPaymentProviderRef(ctx, p.ID, pp.ID, pp.CheckoutURL); err != nil {
				return err
			}
			if err := tx.TouchOrder(ctx, o.ID); err != nil {
				return err
			}
		}
		to := fromProvider(pp.Status)
		if to == "" {
			return fmt.Errorf("unknown provider status %q", pp.Status)
		}
		if pp.Status == payments.StatusSucceeded && pp.RefundedAmount > 0 {
			if err := s.partialRefund(ctx, tx, p, pp.RefundedAmount, reason); err != nil {
				return err
			}
		}
		eff, err = s.advance(ctx, tx, o, p, to, reason, reversalOf(pp))
		return err
	})
	s.after(ctx, eff, err)
	return err
}

// recordStatus moves a payment to a status we learnt without a provider
// payment in hand (its refusal of our create, a refund it confirmed). With
// onlyFrom, the decision was taken on a status read earlier (before a
// provider call): it is a compare-and-set on that status, and is dropped
// (recorded as a note) if the payment has moved since: a concurrent actor
// knew more. Without it, the reason is a fact from the provider (a refund
// it confirmed) that holds whatever the current status, and the state
// machine decides.
func (s *Service) recordStatus(ctx context.Context, paymentID, to, reason string, onlyFrom ...string) error {
	var eff effects
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		p, o, err := lockPayment(ctx, tx, paymentID)
		if err != nil {
			return err
		}
		if len(onlyFrom) > 0 && !slices.Contains(onlyFrom, p.Status) {
			if p.Status == to {
				return nil
			}
			return tx.RecordPaymentEvent(ctx, p.ID, p.Status,
				"ignored "+to+" decided on stale status "+strings.Join(onlyFrom, "|")+": "+reason)
		}
		eff, err = s.advance(ctx, tx, o, p, to, reason)
		return err
	})
	s.after(ctx, eff, err)
	return err
}

// lockPayment locks the payment's order, then the payment (the lock order).
func lockPayment(ctx context.Context, tx *store.Store, paymentID string) (Payment, Order, error) {
	p, err := tx.GetPayment(ctx, paymentID)
	if err != nil {
		return p, Order{}, err
	}
	return lockRead(ctx, tx, p)
}

// lockRead is lockPayment of a payment already read (a payment's order
// never changes), and returns it as locked.
func lockRead(ctx context.Context, tx *store.Store, p Payment) (Payment, Order, error) {
	o, p, err := tx.LockOrderPayment(ctx, p.OrderID, p.ID)
	return p, o, err
}

// reversalOf is the kind of reversal a provider payment reports: "dispute"
// for a chargeback, else "refund".
func reversalOf(pp payments.ProviderPayment) string {
	if pp.FailureCode == payments.FailureDisputed {
		return "dispute"
	}
	return "refund"
}

// partialRefund records a partial refund the provider reports on a
// payment that stays SUCCEEDED: the order is left as it is (a person
// decides: the audit reports PARTIAL_REFUND) and the payment's history
// says so.
func (s *Service) partialRefund(ctx context.Context, tx *store.Store, p Payment, amount int64, reason string) error {
	if err := tx.SetPaymentReversal(ctx, p.ID, "partial_refund", amount); err != nil {
		return err
	}
	return tx.RecordPaymentEvent(ctx, p.ID, p.Status, fmt.Sprintf("%s: the provider reports %d %s of %d refunded (partial: order kept, see the audit)",
		reason, amount, p.Currency, p.Amount))
}
