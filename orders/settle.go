package orders

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
	"github.com/ticketing/ticketing/tickets"
)

// newRequest is the provider request of a new attempt, persisted with it
// (payments.request_*) when the attempt is recorded.
func (s *Service) newRequest(paymentID, orderID string) (*store.PaymentRequest, error) {
	r := &store.PaymentRequest{
		Reference:  paymentID,
		WebhookURL: s.cfg.PublicBaseURL + "/webhooks/payments",
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
// answers it with the same payment. PUBLIC_BASE_URL may differ between
// instances: it is only read when the attempt is created. Rows older than
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
		err = s.settle(ctx, p.ID, pp, "provider answered create: "+string(pp.Status))
	case errors.Is(err, payments.ErrIdempotencyKeyReused):
		s.cfg.Log.Warn("payment create answered idempotency_key_reused: outcome unknown", "payment", p.ID, "err", err)
		err = s.st.RecordPaymentEvent(ctx, p.ID, p.Status,
			"provider holds a payment under this key with another request (422 idempotency_key_reused): outcome unknown, left to reconciliation")
	case classifyCreate(err) == outcomeRefused:
		// Our decision rests on the status read (UNKNOWN, no answer yet):
		// if anything recorded an answer meanwhile, it is stale.
		err = s.transition(ctx, p.ID, PaymentFailed, "provider refused create: "+err.Error(), p.Status)
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
			_ = s.resolve(ctx, p)
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

// resolve learns the provider's state of an open attempt and records it.
func (s *Service) resolve(ctx context.Context, p Payment) error {
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
			return s.transition(ctx, p.ID, PaymentFailed, "provider refused repeated create: "+err.Error(), p.Status)
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
	return s.settle(ctx, p.ID, pp, "reconciled with provider: "+string(pp.Status))
}

// settle records the provider's view of a payment (its id, checkout page
// and status) through the state machine.
func (s *Service) settle(ctx context.Context, paymentID string, pp payments.ProviderPayment, reason string) error {
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
		eff, err = s.apply(ctx, tx, o, p, to, reason, reversalOf(pp))
		return err
	})
	s.after(ctx, eff, err)
	return err
}

// transition moves a payment to a status for a reason of ours. With
// onlyFrom, the decision was taken on a status read earlier (before a
// provider call): it is a compare-and-set on that status, and is dropped
// (recorded as a note) if the payment has moved since: a concurrent actor
// knew more. Without it, the reason is a fact from the provider (a refund
// it confirmed) that holds whatever the current status, and the state
// machine decides.
func (s *Service) transition(ctx context.Context, paymentID, to, reason string, onlyFrom ...string) error {
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
		eff, err = s.apply(ctx, tx, o, p, to, reason)
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
	o, err := tx.GetOrderForUpdate(ctx, p.OrderID)
	if err != nil {
		return p, o, err
	}
	p, err = tx.GetPaymentForUpdate(ctx, paymentID)
	return p, o, err
}

// ApplyNotification applies a verified provider notification: deduplicated
// by its id through webhook_inbox in the same transaction as its effect,
// then applied through the state machine (duplicates and reordered ones
// change nothing). A notification about a payment we do not know is
// recorded and ignored.
func (s *Service) ApplyNotification(ctx context.Context, provider string, n payments.Notification, raw []byte) error {
	if !json.Valid(raw) {
		raw, _ = json.Marshal(map[string]any{"id": n.ID, "type": n.Type, "payment": n.Payment})
	}
	var eff effects
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		fresh, err := tx.InboxInsert(ctx, n.ID, provider, n.Type, raw)
		if err != nil || !fresh {
			return err
		}
		// By the provider's id, or (the create's answer never came) by our
		// reference, the attempt id.
		reference := ""
		if validUUID(n.Payment.Reference) {
			reference = n.Payment.Reference
		}
		reason := "webhook " + n.ID + " " + n.Type
		p, err := tx.PaymentForNotification(ctx, provider, n.Payment.ID, reference)
		if errors.Is(err, store.ErrNotFound) && reference != "" {
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
				return tx.InboxProcessed(ctx, provider, n.ID)
			} else if !errors.Is(qerr, store.ErrNotFound) {
				return qerr
			}
		}
		if errors.Is(err, store.ErrNotFound) {
			s.cfg.Log.Warn("notification for an unknown payment", "notification", n.ID, "payment", n.Payment.ID)
			return tx.InboxProcessed(ctx, provider, n.ID)
		}
		if err != nil {
			return err
		}
		p, o, err := lockPayment(ctx, tx, p.ID)
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
			return tx.InboxProcessed(ctx, provider, n.ID)
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
			eff, err = s.apply(ctx, tx, o, p, to, reason, rev)
			if err != nil {
				return err
			}
		}
		return tx.InboxProcessed(ctx, provider, n.ID)
	})
	s.after(ctx, eff, err)
	return err
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

// effects are what to do after a transaction commits.
type effects struct {
	confirmed *Order
}

func (s *Service) after(ctx context.Context, eff effects, err error) {
	if err != nil {
		return // rolled back: nothing happened
	}
	if o := eff.confirmed; o != nil {
		if o.ConfirmedAt != nil {
			s.metrics.checkout.Observe(o.ConfirmedAt.Sub(o.CreatedAt).Seconds())
		}
		if s.cfg.Holds != nil {
			s.cfg.Holds.ReleaseAddressCap(ctx, o.EventID, o.HoldID)
		}
		if s.cfg.Queue != nil {
			h, err := s.st.GetHold(context.WithoutCancel(ctx), o.HoldID)
			if err == nil {
				err = s.cfg.Queue.Release(context.WithoutCancel(ctx), o.EventID, o.Owner, h.CreatedAt)
			}
			if err != nil {
				s.cfg.Log.Warn("release queue admission", "order", o.ID, "err", err)
			}
		}
	}
}

// apply is the state machine step of payment p (locked, with its order o
// locked) to status to, with its effects on the order, in tx.
//
// A REFUNDED reported while the payment is SUCCEEDED and its order
// CONFIRMED is a reversal the provider made on its own (a dashboard refund;
// rev "dispute": a chargeback): the payment is the one that confirmed the
// order (any other success is compensated at once), so the order is
// refunded too (refundOrder: tickets VOID, seats back on sale), with
// nothing more to refund.
func (s *Service) apply(ctx context.Context, tx *store.Store, o Order, p Payment, to, reason string, rev ...string) (effects, error) {
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
		ok, err := tx.TransitionPayment(ctx, p.ID, p.Status, to, why)
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
	if err := tx.TouchOrder(ctx, o.ID); err != nil {
		return eff, err
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
		confirmed, why, err := s.confirm(ctx, tx, o)
		if err != nil {
			return eff, err
		}
		if confirmed != nil {
			eff.confirmed = confirmed
			return eff, s.voidOthers(ctx, tx, o.ID, p.ID)
		}
		// The hold ran out (EXPIRED) or its owner cancelled it (CANCELLED),
		// as expire() decides.
		status := OrderExpired
		if h, err := tx.GetHold(ctx, o.HoldID); err != nil {
			return eff, err
		} else if h.Status == "CANCELLED" {
			status = OrderCancelled
		}
		if err := tx.SetOrderStatus(ctx, o.ID, status); err != nil {
			return eff, err
		}
		// The order is over: its other open attempt (a retry) is voided,
		// as expire() does, or the provider could still take money on it.
		if err := s.voidOthers(ctx, tx, o.ID, p.ID); err != nil {
			return eff, err
		}
		return eff, s.compensate(ctx, tx, p.ID, "late charge: "+why)
	case PaymentFailed, PaymentCancelled, PaymentRefunded:
		if Open(p.Status) && o.Status == OrderAwaitingPayment {
			return eff, tx.SetOrderStatus(ctx, o.ID, OrderPaymentFailed)
		}
	}
	return eff, nil
}

// errNotConfirmable rolls back the confirmation savepoint.
var errNotConfirmable = errors.New("not confirmable")

// confirm is the confirmation: in a savepoint, the hold's inventory rows
// still HELD by this very hold and unexpired (database clock) become SOLD;
// unless all of them do, nothing changes and why says so. Then the hold is
// PURCHASED, its items' periods open-ended, the order CONFIRMED, tickets
// issued and the sale written to the outbox.
func (s *Service) confirm(ctx context.Context, tx *store.Store, o Order) (*Order, string, error) {
	var confirmed Order
	why := ""
	err := tx.InTx(ctx, func(sp *store.Store) error {
		h, err := sp.GetHoldForUpdate(ctx, o.HoldID)
		if err != nil {
			return err
		}
		if h.Status != "ACTIVE" {
			why = "hold " + h.Status
			return errNotConfirmable
		}
		items, err := sp.HoldItems(ctx, h.ID)
		if err != nil {
			return err
		}
		sold, err := sp.SellHold(ctx, h.EventID, h.ID, o.ID)
		if err != nil {
			return err
		}
		if len(sold) != len(items) || len(items) == 0 {
			why = fmt.Sprintf("only %d of %d seats still held by the hold", len(sold), len(items))
			return errNotConfirmable
		}
		if err := sp.PurchaseHold(ctx, h.ID); err != nil {
			return err
		}
		for _, u := range sold {
			t := store.Ticket{ID: newID(), OrderID: o.ID, EventID: o.EventID, InventoryID: u.InventoryID,
				SectionID: u.SectionID, SeatID: u.SeatID}
			item := ""
			if u.SeatID != nil {
				item = tickets.SeatItem(*u.SeatID)
			} else if u.UnitNo != nil {
				item = tickets.GAItem(u.SectionID, *u.UnitNo)
			}
			if t.Code, err = s.cfg.TicketKeys.Sign(tickets.Claims{TicketID: t.ID, EventID: o.EventID, Item: item}); err != nil {
				return err
			}
			if err := sp.InsertTicket(ctx, t); err != nil {
				return err
			}
		}
		if err := sp.OutboxInsert(ctx, o.EventID, "inventory", salePayload(o, sold)); err != nil {
			return err
		}
		confirmed, err = sp.ConfirmOrder(ctx, o.ID)
		return err
	})
	if errors.Is(err, errNotConfirmable) {
		return nil, why, nil
	}
	if err != nil {
		return nil, "", err
	}
	return &confirmed, "", nil
}

// salePayload is the 'inventory' outbox message of a sale.
func salePayload(o Order, sold []store.SoldUnit) outbox.InventoryChange {
	units := make([]store.InventoryUnit, len(sold))
	for i, u := range sold {
		units[i] = u.InventoryUnit
	}
	return unitsPayload(o, "sale", "SOLD", units)
}

// unitsPayload is the 'inventory' outbox message of an order's rows that
// changed to status (SOLD by a sale, AVAILABLE again by a refund).
func unitsPayload(o Order, kind, status string, units []store.InventoryUnit) outbox.InventoryChange {
	return outbox.NewInventoryChange(o.EventID, kind, o.HoldID, o.ID, status, units)
}

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
		if err := s.resolve(ctx, p); err != nil {
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
		return s.settle(ctx, p.ID, pp, "voided at the provider: order no longer confirmable")
	case errors.Is(err, payments.ErrNotPending) && pp.Status != "":
		return s.settle(ctx, p.ID, pp, "void refused, provider says "+string(pp.Status))
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
		return s.transition(ctx, p.ID, PaymentRefunded, "refund "+r.ID+" confirmed by the provider")
	case errors.Is(err, payments.ErrNotRefundable) && r.Payment.Status == payments.StatusRefunded:
		return s.transition(ctx, p.ID, PaymentRefunded, "provider reports the payment already refunded")
	}
	return err
}

// Reconcile settles what is uncertain: orders whose hold ran out are
// expired, open attempts untouched for ReconcileAfter are queried at the
// provider (results whose notification never came), refunds pending are
// re-enqueued, and, with a provider whose failed payments may still
// succeed, recent FAILED payments are queried again (failedToRecheck). It
// returns the number of actions taken.
func (s *Service) Reconcile(ctx context.Context) (int, error) {
	actions := 0
	ids, err := s.st.ExpirableOrders(ctx, 200)
	if err != nil {
		return 0, err
	}
	var firstErr error
	for _, id := range ids {
		// One order that cannot be expired does not stop the pass.
		if err := s.expire(ctx, id); err != nil {
			s.cfg.Log.Warn("reconcile: expire order", "order", id, "err", err)
			firstErr = cmp.Or(firstErr, fmt.Errorf("expire order %s: %w", id, err))
			continue
		}
		actions++
		s.metrics.actions.WithLabelValues("expire_order").Inc()
	}
	// Attempts still to void on orders that ended (their void job may have
	// failed for good): enqueued again, so no attempt cap drops a void.
	payableFailed := ""
	if payments.FailedMaySucceed(s.cfg.Provider) {
		payableFailed = s.cfg.ProviderName
	}
	if voids, err := s.st.PaymentsToVoid(ctx, payableFailed, s.cfg.ReconcileAfter, payments.KeyWindow, s.cfg.ReconcileBatch); err != nil {
		firstErr = cmp.Or(firstErr, err)
	} else {
		for _, id := range voids {
			// Not marked checked: that would delay the recheck of a
			// FAILED one; a live void job is not inserted twice.
			err := s.st.InTx(ctx, func(tx *store.Store) error { return s.enqueue(ctx, tx, VoidArgs{PaymentID: id}) })
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			s.metrics.actions.WithLabelValues("retry_void").Inc()
			actions++
		}
	}
	ps, err := s.st.UnsettledPayments(ctx, s.cfg.ReconcileAfter, payments.KeyWindow, s.cfg.ReconcileBatch)
	if err != nil {
		return actions, cmp.Or(firstErr, err)
	}
	settled, err := s.settledToRecheck(ctx)
	if err != nil {
		return actions, cmp.Or(firstErr, err)
	}
	for _, p := range append(ps, settled...) {
		var err error
		action := "query_provider"
		switch p.Status {
		case PaymentRefundPending:
			action = "retry_refund"
			err = s.st.InTx(ctx, func(tx *store.Store) error { return s.enqueue(ctx, tx, RefundArgs{PaymentID: p.ID}) })
		case PaymentFailed:
			action = "recheck_failed"
			err = s.resolve(ctx, p)
		case PaymentSucceeded:
			action = "recheck_succeeded"
			err = s.resolve(ctx, p)
		default:
			err = s.resolve(ctx, p)
		}
		// Checked whatever the outcome: a payment the provider keeps
		// reporting unchanged, or that keeps failing, waits its turn
		// behind the others instead of filling every pass.
		if cerr := s.st.MarkPaymentChecked(ctx, p.ID); err == nil {
			err = cerr
		}
		if err != nil {
			s.cfg.Log.Warn("reconcile payment", "payment", p.ID, "status", p.Status, "action", action, "err", err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		s.metrics.actions.WithLabelValues(action).Inc()
		actions++
	}
	if ms, err := s.st.OpenMismatches(ctx, s.cfg.ProviderName, s.cfg.ReconcileBatch); err != nil {
		firstErr = cmp.Or(firstErr, err)
	} else {
		for _, m := range ms {
			err := s.st.InTx(ctx, func(tx *store.Store) error {
				return s.enqueue(ctx, tx, MismatchArgs{Provider: m.Provider, ProviderPaymentID: m.ProviderPaymentID})
			})
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			s.metrics.actions.WithLabelValues("settle_mismatch").Inc()
			actions++
		}
	}
	if c, err := s.st.CountPaymentsAtRisk(ctx, payments.KeyWindow); err == nil {
		s.metrics.withoutOrder.Set(float64(c.WithoutOrder))
		s.metrics.compensations.Set(float64(c.RefundsPending))
		s.metrics.unknownStuck.Set(float64(c.UnknownStuck))
		for k, n := range c.Reversals {
			s.metrics.reversals.WithLabelValues(k).Set(float64(n))
		}
	}
	return actions, firstErr
}

// settledToRecheck lists the settled payments to ask the provider about
// again, at doubling intervals: SUCCEEDED ones within RecheckSucceededFor
// of the success (a refund or dispute made at the provider, its
// notification lost: the order is refunded as the notification would
// have), and, when the provider's failed payments may still succeed (a
// Stripe buyer retrying on the same PaymentIntent after a decline), FAILED
// ones within RecheckFailedFor of the failure (a success found goes
// through the state machine like its lost notification would have: the
// order is confirmed if its hold still stands, else the charge is
// compensated).
func (s *Service) settledToRecheck(ctx context.Context) ([]Payment, error) {
	succeeded, err := s.st.PaymentsToRecheck(ctx, PaymentSucceeded, s.cfg.ProviderName, s.cfg.ReconcileAfter, s.cfg.RecheckSucceededFor, s.cfg.ReconcileBatch)
	if err != nil || !payments.FailedMaySucceed(s.cfg.Provider) {
		return succeeded, err
	}
	failed, err := s.st.PaymentsToRecheck(ctx, PaymentFailed, s.cfg.ProviderName, s.cfg.ReconcileAfter, s.cfg.RecheckFailedFor, s.cfg.ReconcileBatch)
	return append(succeeded, failed...), err
}
