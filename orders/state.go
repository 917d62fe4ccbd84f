package orders

import "github.com/ticketing/ticketing/payments"

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
