package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/store"
)

// After the sale: a confirmed order refunded (by its buyer before the
// event's refund deadline, by the event's cancellation, or by a refund or
// dispute the provider reports), the event cancelled, and admission at the
// door. One rule, refundOrder, undoes a sale; the money goes through the
// compensation machinery (REFUND_PENDING, a refund job retried until the
// provider confirms: REFUNDED).

// OrderRefunded: was CONFIRMED, refunded in full; its tickets are VOID.
const OrderRefunded = "REFUNDED"

// Ticket statuses.
const (
	TicketValid = "VALID"
	TicketUsed  = "USED"
	TicketVoid  = "VOID"
)

// HoldEnder ends the active holds of an event, and stops counting a bought
// hold against its client address's cap (holds.Service).
type HoldEnder interface {
	EndEventHolds(ctx context.Context, eventID string) (int, error)
	ReleaseAddressCap(ctx context.Context, eventID, holdID string)
}

// RequestRefund refunds the caller's own CONFIRMED order before its event's
// refund deadline: in one transaction its tickets become VOID, its seats
// AVAILABLE (written to the outbox for the live seat map), the order
// REFUNDED and its payment REFUND_PENDING with a refund job. The same key
// returns the first result. Errors: apperr.ErrUnauthenticated,
// apperr.InvalidInputError (empty key), apperr.ErrNotFound,
// apperr.ErrForbidden (another user's order), apperr.ErrRefundNotAllowed
// (not CONFIRMED, past the deadline, no refunds on request),
// apperr.ErrIdempotencyKeyReused.
func (s *Service) RequestRefund(ctx context.Context, user auth.User, orderID, key string) (Order, error) {
	if user.ID == "" {
		return Order{}, apperr.ErrUnauthenticated
	}
	if err := apperr.CheckIdempotencyKey("idempotencyKey", key); err != nil {
		return Order{}, err
	}
	if !validUUID(orderID) {
		return Order{}, fmt.Errorf("request refund: order: %w", apperr.ErrNotFound)
	}
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		claimed, prev, err := tx.ClaimIdempotencyKey(ctx, user.ID, "requestRefund", key, hashOf(orderID), orderID)
		if err != nil {
			return err
		}
		if !claimed {
			if string(prev.RequestHash) != string(hashOf(orderID)) {
				return apperr.ErrIdempotencyKeyReused
			}
			return nil // replay: the current state is the answer
		}
		o, err := tx.GetOrderForUpdate(ctx, orderID)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("order: %w", apperr.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if o.Owner != user.ID {
			return fmt.Errorf("order: %w", apperr.ErrForbidden)
		}
		if o.Status != OrderConfirmed {
			return apperr.ErrRefundNotAllowed
		}
		evs, err := tx.EventsByIDs(ctx, []string{o.EventID})
		if err != nil {
			return err
		}
		if len(evs) != 1 || evs[0].RefundDeadline == nil || !s.cfg.Now().Before(*evs[0].RefundDeadline) {
			return apperr.ErrRefundNotAllowed
		}
		return s.refundOrder(ctx, tx, o, "refund requested by the buyer")
	})
	if err != nil {
		return Order{}, fmt.Errorf("request refund: %w", err)
	}
	return s.st.GetOrder(ctx, orderID)
}

// refundOrder undoes the sale of a CONFIRMED order o (locked) in tx: its
// tickets VOID, its seats back on sale (outbox 'inventory', kind "refund"),
// the order REFUNDED, and its charge compensated: a SUCCEEDED payment goes
// REFUND_PENDING with its refund job (one already REFUNDED or
// REFUND_PENDING at the provider's word needs nothing more). It is the one
// place a sale is undone.
func (s *Service) refundOrder(ctx context.Context, tx *store.Store, o Order, why string) error {
	if o.Status != OrderConfirmed {
		return nil
	}
	if ok, err := tx.RefundOrder(ctx, o.ID); err != nil || !ok {
		return err
	}
	if _, err := tx.VoidOrderTickets(ctx, o.ID); err != nil {
		return err
	}
	units, err := tx.ReturnOrderSeats(ctx, o.EventID, o.HoldID, o.ID)
	if err != nil {
		return err
	}
	if err := tx.OutboxInsert(ctx, o.EventID, "inventory", unitsPayload(o, "refund", "AVAILABLE", units)); err != nil {
		return err
	}
	ps, err := tx.OrderPayments(ctx, o.ID)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Status != PaymentSucceeded {
			continue
		}
		if _, err := tx.GetPaymentForUpdate(ctx, p.ID); err != nil {
			return err
		}
		if err := s.compensate(ctx, tx, p.ID, "order refunded: "+why); err != nil {
			return err
		}
	}
	return s.voidAttempts(ctx, tx, o.ID, "", "")
}

// CancelEvent cancels an event (admin only): the sale closes (a new hold
// is refused: SALE_NOT_OPEN), then sweepCancelled ends what the sale left
// open. The transaction that cancels also schedules a CancelSweepArgs job
// that sweeps again later, for what the first sweep cannot see: a hold
// whose transaction began before the cancellation and commits after it
// (the trigger on holds read the event before the cancellation), and a
// queue join on an instance whose view of the event is still the old one.
// Each step is its own short transaction; a repeat changes nothing that is
// done and finishes what is not. Errors: apperr.ErrUnauthenticated,
// apperr.ErrForbidden, apperr.ErrNotFound, apperr.InvalidInputError (empty
// reason).
func (s *Service) CancelEvent(ctx context.Context, user auth.User, eventID, reason string) error {
	if user.ID == "" {
		return apperr.ErrUnauthenticated
	}
	if !user.IsAdmin() {
		return apperr.ErrForbidden
	}
	if !validUUID(eventID) {
		return fmt.Errorf("cancel event: %w", apperr.ErrNotFound)
	}
	if reason == "" {
		return apperr.Invalid("reason", "must not be empty")
	}
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.EventForUpdate(ctx, eventID); errors.Is(err, store.ErrNotFound) {
			return apperr.ErrNotFound
		} else if err != nil {
			return err
		}
		_, cancelled, err := tx.CancelEvent(ctx, eventID, reason)
		if err != nil || !cancelled {
			return err
		}
		return s.enqueueAt(ctx, tx, CancelSweepArgs{EventID: eventID, Reason: reason}, s.cfg.Now().Add(s.cfg.CancelSweepAfter))
	})
	if err != nil {
		return fmt.Errorf("cancel event: %w", err)
	}
	if s.cfg.EventChanged != nil {
		s.cfg.EventChanged(eventID)
	}
	return s.sweepCancelled(ctx, eventID, reason)
}

// sweepCancelled ends what a cancelled event's sale left open: its active
// holds, its queue (joins refused, admissions gone, waiting clients told),
// its orders awaiting payment (CANCELLED, open attempts voided), and its
// CONFIRMED orders (refundOrder). Running it again changes nothing done.
func (s *Service) sweepCancelled(ctx context.Context, eventID, reason string) error {
	if s.cfg.Holds != nil {
		if _, err := s.cfg.Holds.EndEventHolds(ctx, eventID); err != nil {
			return fmt.Errorf("cancel event: %w", err)
		}
	}
	open, err := s.st.OrdersOfEvent(ctx, eventID, []string{OrderAwaitingPayment, OrderPaymentFailed})
	if err != nil {
		return fmt.Errorf("cancel event: %w", err)
	}
	for _, id := range open {
		if err := s.expire(ctx, id); err != nil {
			return fmt.Errorf("cancel event: order %s: %w", id, err)
		}
	}
	confirmed, err := s.st.OrdersOfEvent(ctx, eventID, []string{OrderConfirmed})
	if err != nil {
		return fmt.Errorf("cancel event: %w", err)
	}
	for _, id := range confirmed {
		err := s.st.InTx(ctx, func(tx *store.Store) error {
			o, err := tx.GetOrderForUpdate(ctx, id)
			if err != nil {
				return err
			}
			return s.refundOrder(ctx, tx, o, "event cancelled: "+reason)
		})
		if err != nil {
			return fmt.Errorf("cancel event: order %s: %w", id, err)
		}
	}
	if s.cfg.Queue != nil {
		if err := s.cfg.Queue.EndEvent(ctx, eventID); err != nil {
			return fmt.Errorf("cancel event: %w", err)
		}
	}
	return nil
}

// CheckInResult is the answer of checkIn. Reason is "" when admitted, else
// one of the Reason constants; Ticket is nil when the code does not verify.
type CheckInResult struct {
	Admitted bool
	Ticket   *Ticket
	Reason   string
}

// checkIn refusal reasons (CheckInResult.reason).
const (
	ReasonAlreadyUsed = "ALREADY_USED"
	ReasonVoid        = "VOID"
	ReasonOtherEvent  = "OTHER_EVENT"
	ReasonInvalidCode = "INVALID_CODE"
)

// CheckIn admits a ticket at the door of eventID by its code, once: the
// code's signature is verified, then one conditional UPDATE moves a VALID
// ticket of that event to USED (concurrent scans of one code: exactly one
// is admitted). Errors: apperr.ErrUnauthenticated, apperr.ErrForbidden
// (neither staff nor admin).
func (s *Service) CheckIn(ctx context.Context, user auth.User, eventID, code string) (CheckInResult, error) {
	if user.ID == "" {
		return CheckInResult{}, apperr.ErrUnauthenticated
	}
	if !user.IsStaff() {
		return CheckInResult{}, apperr.ErrForbidden
	}
	c, err := s.cfg.TicketKeys.Verify(code)
	if err != nil || !validUUID(c.TicketID) {
		return CheckInResult{Reason: ReasonInvalidCode}, nil
	}
	t, err := s.st.GetTicket(ctx, c.TicketID)
	if errors.Is(err, store.ErrNotFound) {
		return CheckInResult{Reason: ReasonInvalidCode}, nil
	}
	if err != nil {
		return CheckInResult{}, fmt.Errorf("check in: %w", err)
	}
	if t.EventID != eventID || c.EventID != eventID {
		return CheckInResult{Ticket: &t, Reason: ReasonOtherEvent}, nil
	}
	admitted, err := s.st.AdmitTicket(ctx, t.ID, eventID)
	if err != nil {
		return CheckInResult{}, fmt.Errorf("check in: %w", err)
	}
	if t, err = s.st.GetTicket(ctx, t.ID); err != nil {
		return CheckInResult{}, fmt.Errorf("check in: %w", err)
	}
	if admitted {
		return CheckInResult{Admitted: true, Ticket: &t}, nil
	}
	reason := ReasonAlreadyUsed
	if t.Status == TicketVoid {
		reason = ReasonVoid
	}
	return CheckInResult{Ticket: &t, Reason: reason}, nil
}
