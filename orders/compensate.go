package orders

import (
	"context"
	"fmt"

	"github.com/ticketing/ticketing/store"
)

// voidOthers enqueues the void of the order's other open attempts (an
// older attempt succeeded while a newer one was open).
func (s *Service) voidOthers(ctx context.Context, tx *store.Store, orderID, paidID string) error {
	ps, err := tx.OrderPayments(ctx, orderID)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.ID != paidID && s.voidable(p.Status) {
			if err := s.enqueue(ctx, tx, VoidArgs{PaymentID: p.ID}); err != nil {
				return err
			}
		}
	}
	return nil
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
	if err != nil || h.Status == "ACTIVE" {
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
		if err != nil || h.Status == "ACTIVE" {
			return err
		}
		status := OrderExpired
		if h.Status == "CANCELLED" {
			status = OrderCancelled
		}
		if err := tx.SetOrderStatus(ctx, o.ID, status); err != nil {
			return err
		}
		ps, err := tx.OrderPayments(ctx, o.ID)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if !s.voidable(p.Status) {
				continue
			}
			if err := tx.RecordPaymentEvent(ctx, p.ID, p.Status, "order "+status+" (hold "+h.Status+"): void requested"); err != nil {
				return err
			}
			if err := s.enqueue(ctx, tx, VoidArgs{PaymentID: p.ID}); err != nil {
				return err
			}
		}
		return nil
	})
}
