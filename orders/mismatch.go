package orders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// Amount and currency are checked on every notification and every answer
// of the provider: a provider payment whose amount or currency differ from
// the attempt it names (by the provider's id, or by our reference) never
// confirms an order, never binds an attempt that has no provider id yet,
// and is recorded in payment_mismatches (the audit's PAYMENT_MISMATCH until
// it is settled). A job settles it from the provider's own state: voided
// while pending, refunded if it took money. A provider payment that once
// disagreed stays suspect: nothing it reports later confirms anything.

// matches reports whether a provider payment is for exactly the attempt's
// amount and currency.
func matches(p Payment, pp payments.ProviderPayment) bool {
	return pp.Amount == p.Amount && strings.EqualFold(pp.Currency, p.Currency)
}

// disagrees reports whether pp may not be applied to p: another amount or
// currency, or a provider payment already recorded as a mismatch.
func disagrees(ctx context.Context, tx *store.Store, provider string, p Payment, pp payments.ProviderPayment) (bool, error) {
	if !matches(p, pp) {
		return true, nil
	}
	if pp.ID == "" {
		return false, nil
	}
	return tx.IsMismatched(ctx, provider, pp.ID)
}

// mismatch records provider payment pp as disagreeing with attempt p
// (locked, with its order o), in tx, and enqueues its settlement. An open
// attempt bound to that provider payment is FAILED: it can never confirm.
func (s *Service) mismatch(ctx context.Context, tx *store.Store, provider string, o Order, p Payment, pp payments.ProviderPayment, reason string) (effects, error) {
	var eff effects
	if pp.ID == "" {
		return eff, fmt.Errorf("payment %s: provider answer without an id disagrees with the attempt", p.ID)
	}
	why := fmt.Sprintf("%s: provider payment %s is %d %s (%s), the attempt %d %s: never confirms", reason, pp.ID,
		pp.Amount, pp.Currency, pp.Status, p.Amount, p.Currency)
	fresh, err := tx.RecordMismatch(ctx, store.Mismatch{Provider: provider, ProviderPaymentID: pp.ID, PaymentID: &p.ID,
		Amount: pp.Amount, Currency: pp.Currency, ProviderStatus: string(pp.Status), Reason: why})
	if err != nil {
		return eff, err
	}
	s.cfg.Log.Warn("provider payment disagrees with the attempt", "payment", p.ID, "provider_payment", pp.ID,
		"amount", pp.Amount, "currency", pp.Currency, "want_amount", p.Amount, "want_currency", p.Currency)
	if fresh {
		if err := tx.RecordPaymentEvent(ctx, p.ID, p.Status, why); err != nil {
			return eff, err
		}
	}
	if p.ProviderRef != nil && *p.ProviderRef == pp.ID && Open(p.Status) {
		if eff, err = s.advance(ctx, tx, o, p, PaymentFailed, why); err != nil {
			return eff, err
		}
	}
	return eff, s.enqueue(ctx, tx, MismatchArgs{Provider: provider, ProviderPaymentID: pp.ID})
}

// MismatchArgs asks for the settlement of a provider payment that
// disagrees with our attempt.
type MismatchArgs struct {
	Provider          string `json:"provider"`
	ProviderPaymentID string `json:"provider_payment_id"`
}

// Kind is the river job kind.
func (MismatchArgs) Kind() string { return "orders.mismatch" }

// InsertOpts: one live job per provider payment; the reconciler enqueues
// it again while it is unresolved, so no attempt cap drops it.
func (MismatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 1000, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

type mismatchWorker struct {
	river.WorkerDefaults[MismatchArgs]
	s *Service
}

func (w *mismatchWorker) Work(ctx context.Context, j *river.Job[MismatchArgs]) error {
	return w.s.settleMismatch(ctx, j.Args.Provider, j.Args.ProviderPaymentID)
}

func (w *mismatchWorker) NextRetry(j *river.Job[MismatchArgs]) time.Time { return backoff(j.Attempt) }

// settleMismatch settles a disagreeing provider payment from the
// provider's own state: a pending one (or a failed one that may still
// succeed) is voided, one that took money is refunded, and the mismatch is
// resolved once the provider confirms.
func (s *Service) settleMismatch(ctx context.Context, provider, ppID string) error {
	m, err := s.st.GetMismatch(ctx, provider, ppID)
	if err != nil || m.ResolvedAt != nil {
		return err
	}
	if provider != s.cfg.ProviderName {
		return river.JobCancel(fmt.Errorf("mismatch %s is of provider %s, not ours (%s)", ppID, provider, s.cfg.ProviderName))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ProviderTimeout)
	defer cancel()
	pp, err := s.cfg.Provider.GetPayment(ctx, ppID)
	if err != nil {
		return err
	}
	switch {
	case pp.Status == payments.StatusPending || (pp.Status == payments.StatusFailed && payments.FailedMaySucceed(s.cfg.Provider)):
		cur, err := s.cfg.Provider.CancelPayment(ctx, ppID)
		if err != nil {
			return fmt.Errorf("void mismatched payment %s: %w", ppID, err) // its state moved: the retry looks again
		}
		return s.st.ResolveMismatch(ctx, provider, ppID, "voided", string(cur.Status))
	case pp.Status == payments.StatusSucceeded:
		r, err := s.cfg.Provider.Refund(ctx, ppID, "refund_mismatch_"+ppID)
		if errors.Is(err, payments.ErrNotRefundable) && r.Payment.Status == payments.StatusRefunded {
			err = nil
		}
		if err != nil {
			return fmt.Errorf("refund mismatched payment %s: %w", ppID, err)
		}
		return s.st.ResolveMismatch(ctx, provider, ppID, "refunded", string(payments.StatusRefunded))
	case pp.Status == payments.StatusRefunded:
		return s.st.ResolveMismatch(ctx, provider, ppID, "refunded", string(pp.Status))
	default: // failed for good, or cancelled: no money taken
		return s.st.ResolveMismatch(ctx, provider, ppID, "no_money", string(pp.Status))
	}
}
