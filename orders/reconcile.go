package orders

import (
	"cmp"
	"context"
	"fmt"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

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
			err = s.askProvider(ctx, p)
		case PaymentSucceeded:
			action = "recheck_succeeded"
			err = s.askProvider(ctx, p)
		default:
			err = s.askProvider(ctx, p)
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
