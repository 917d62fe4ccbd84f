package orders

import (
	"context"
	"fmt"

	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/store"
)

// voidAttempts enqueues the void of the order's attempts that must be
// voided at the provider (voidable), but the one of id except, once the
// order can no longer use them; a note, if any, is recorded on each.
func (s *Service) voidAttempts(ctx context.Context, tx *store.Store, orderID, except, note string) error {
	ps, err := tx.OrderPayments(ctx, orderID)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.ID == except || !s.voidable(p.Status) {
			continue
		}
		if note != "" {
			if err := tx.RecordPaymentEvent(ctx, p.ID, p.Status, note); err != nil {
				return err
			}
		}
		if err := s.enqueue(ctx, tx, VoidArgs{PaymentID: p.ID}); err != nil {
			return err
		}
	}
	return nil
}

// endedStatus is the status of an order whose hold h is no longer active:
// CANCELLED if its owner cancelled it, else EXPIRED (it ran out).
func endedStatus(h store.Hold) string {
	if h.Status == holds.StatusCancelled {
		return OrderCancelled
	}
	return OrderExpired
}

// lateCharge ends order o, whose hold is no longer active (why: what
// confirm found), after payment p (locked) succeeded on it: the order is
// EXPIRED or CANCELLED as expire would have made it, its other attempts
// (a retry) are voided, or the provider could still take money on them,
// and the charge is compensated.
func (s *Service) lateCharge(ctx context.Context, tx *store.Store, o Order, p Payment, why string) error {
	h, err := tx.GetHold(ctx, o.HoldID)
	if err != nil {
		return err
	}
	if err := tx.SetOrderStatus(ctx, o.ID, endedStatus(h)); err != nil {
		return err
	}
	if err := s.voidAttempts(ctx, tx, o.ID, p.ID, ""); err != nil {
		return err
	}
	return s.compensate(ctx, tx, p.ID, "late charge: "+why)
}

// compensate marks a succeeded payment REFUND_PENDING and enqueues its
// refund in the same transaction.
func (s *Service) compensate(ctx context.Context, tx *store.Store, paymentID, why string) error {
	ok, err := tx.TransitionPayment(ctx, paymentID, PaymentSucceeded, PaymentRefundPending, why+"; refund requested")
	if err != nil {
		return err
	}
	if !ok { // the caller just moved it to SUCCEEDED in this transaction
		return fmt.Errorf("payment %s: not SUCCEEDED when compensating", paymentID)
	}
	return s.enqueue(ctx, tx, RefundArgs{PaymentID: paymentID})
}

// expireIfDue expires an order awaiting payment whose hold is no longer
// active; it returns the order as it is now.
func (s *Service) expireIfDue(ctx context.Context, o Order) (Order, error) {
	if !confirmable(o.Status) {
		return o, nil
	}
	h, err := s.st.GetHold(ctx, o.HoldID)
	if err != nil || h.Status == holds.StatusActive {
		return o, err
	}
	if err := s.expire(ctx, o.ID); err != nil {
		return o, err
	}
	return s.st.GetOrder(ctx, o.ID)
}

// expire ends an order whose hold ran out (EXPIRED) or was cancelled
// (CANCELLED) before a verified payment, and enqueues the void of its open
// attempt in the same transaction.
func (s *Service) expire(ctx context.Context, orderID string) error {
	return s.st.InTx(ctx, func(tx *store.Store) error {
		o, err := tx.GetOrderForUpdate(ctx, orderID)
		if err != nil || !confirmable(o.Status) {
			return err
		}
		h, err := tx.GetHold(ctx, o.HoldID)
		if err != nil || h.Status == holds.StatusActive {
			return err
		}
		status := endedStatus(h)
		if err := tx.SetOrderStatus(ctx, o.ID, status); err != nil {
			return err
		}
		return s.voidAttempts(ctx, tx, o.ID, "", "order "+status+" (hold "+h.Status+"): void requested")
	})
}
