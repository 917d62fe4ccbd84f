package orders

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/ticketing/ticketing/store"
)

// The background work of the orders engine runs as river jobs in the
// "payments" queue: compensations (refund, void) are inserted in the same
// transaction as the state change that needs them, and the reconciler is a
// periodic job. River retries a failed job with the backoff of NextRetry.

// QueueName is the river queue of the orders engine.
const QueueName = "payments"

// live states: a job for the same payment in one of them is not inserted again.
var uniqueStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// RefundArgs asks for the refund of a REFUND_PENDING payment.
type RefundArgs struct {
	PaymentID string `json:"payment_id"`
}

// Kind is the river job kind.
func (RefundArgs) Kind() string { return "orders.refund" }

// InsertOpts: one live refund job per payment, many attempts (about 3
// days at the 5-minute cap; the reconciler enqueues it again while the
// payment is REFUND_PENDING, so no cap drops it).
func (RefundArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 1000, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

// VoidArgs asks for the cancellation of an open attempt whose order can no
// longer be confirmed.
type VoidArgs struct {
	PaymentID string `json:"payment_id"`
}

// Kind is the river job kind.
func (VoidArgs) Kind() string { return "orders.void" }

// InsertOpts: one live void job per payment, many attempts (the
// reconciler enqueues it again while the attempt is still to void:
// store.PaymentsToVoid).
func (VoidArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 1000, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

// ReconcileArgs runs one reconciliation pass.
type ReconcileArgs struct{}

// Kind is the river job kind.
func (ReconcileArgs) Kind() string { return "orders.reconcile" }

// InsertOpts: one pass at a time.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

// CancelSweepArgs sweeps a cancelled event again (sweepCancelled) once the
// transactions in flight at its cancellation have ended.
type CancelSweepArgs struct {
	EventID string `json:"event_id"`
	Reason  string `json:"reason"`
}

// Kind is the river job kind.
func (CancelSweepArgs) Kind() string { return "orders.cancel_sweep" }

// InsertOpts: one live sweep per event, retried like a refund.
func (CancelSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 1000, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates}}
}

// backoff is min(2^attempt s, 5 min).
func backoff(attempt int) time.Time {
	d := time.Duration(1<<min(attempt, 9)) * time.Second
	return time.Now().Add(min(d, 5*time.Minute))
}

type refundWorker struct {
	river.WorkerDefaults[RefundArgs]
	s *Service
}

func (w *refundWorker) Work(ctx context.Context, j *river.Job[RefundArgs]) error {
	return w.s.refundPayment(ctx, j.Args.PaymentID)
}

func (w *refundWorker) NextRetry(j *river.Job[RefundArgs]) time.Time { return backoff(j.Attempt) }

type voidWorker struct {
	river.WorkerDefaults[VoidArgs]
	s *Service
}

func (w *voidWorker) Work(ctx context.Context, j *river.Job[VoidArgs]) error {
	err := w.s.voidPayment(ctx, j.Args.PaymentID)
	if errors.Is(err, ErrKeyWindowPassed) {
		return river.JobCancel(err) // retrying cannot help: a person resolves it
	}
	return err
}

func (w *voidWorker) NextRetry(j *river.Job[VoidArgs]) time.Time { return backoff(j.Attempt) }

type reconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	s *Service
}

func (w *reconcileWorker) Work(ctx context.Context, _ *river.Job[ReconcileArgs]) error {
	_, err := w.s.Reconcile(ctx)
	if err != nil {
		w.s.cfg.Log.Warn("reconciliation incomplete", "err", err)
	}
	return nil // the next periodic run tries again
}

type cancelSweepWorker struct {
	river.WorkerDefaults[CancelSweepArgs]
	s *Service
}

// Work waits until every transaction running now has ended (a hold that
// read the event before its cancellation and has not committed is one of
// them; one that has not read it yet will see the cancellation), then
// sweeps.
func (w *cancelSweepWorker) Work(ctx context.Context, j *river.Job[CancelSweepArgs]) error {
	if err := w.s.st.AwaitTransactionsInFlight(ctx); err != nil {
		return err
	}
	return w.s.sweepCancelled(ctx, j.Args.EventID, j.Args.Reason)
}

func (w *cancelSweepWorker) NextRetry(j *river.Job[CancelSweepArgs]) time.Time {
	return backoff(j.Attempt)
}

func newRiverClient(st *store.Store, s *Service) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &refundWorker{s: s})
	river.AddWorker(workers, &voidWorker{s: s})
	river.AddWorker(workers, &reconcileWorker{s: s})
	river.AddWorker(workers, &mismatchWorker{s: s})
	river.AddWorker(workers, &cancelSweepWorker{s: s})
	quiet := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{
		Queues:            map[string]river.QueueConfig{QueueName: {MaxWorkers: 4}},
		Workers:           workers,
		FetchPollInterval: 200 * time.Millisecond,
		Logger:            quiet,
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(
			river.PeriodicInterval(s.cfg.ReconcileInterval),
			func() (river.JobArgs, *river.InsertOpts) { return ReconcileArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true},
		)},
	})
}

// enqueue inserts a job in the caller's transaction.
func (s *Service) enqueue(ctx context.Context, tx *store.Store, args river.JobArgs) error {
	ptx, ok := tx.Tx()
	if !ok {
		return errors.New("orders: enqueue outside a transaction")
	}
	_, err := s.river.InsertTx(ctx, ptx, args, nil)
	return err
}

// enqueueAt inserts a job in the caller's transaction, to run at at.
func (s *Service) enqueueAt(ctx context.Context, tx *store.Store, args interface {
	river.JobArgs
	river.JobArgsWithInsertOpts
}, at time.Time) error {
	ptx, ok := tx.Tx()
	if !ok {
		return errors.New("orders: enqueue outside a transaction")
	}
	opts := args.InsertOpts()
	opts.ScheduledAt = at
	_, err := s.river.InsertTx(ctx, ptx, args, &opts)
	return err
}

// RunWorkers runs the compensation and reconciliation workers until ctx
// ends, then stops them gracefully. Run it on instances with workers only.
func (s *Service) RunWorkers(ctx context.Context) error {
	if err := s.river.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.river.Stop(stop); err != nil {
		return s.river.StopAndCancel(context.Background())
	}
	return nil
}
