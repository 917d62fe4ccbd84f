package orders_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// pauseAfterLookup pauses the first statement that looks a payment up by
// the provider's id, once it has run, until resume is closed (alone or in
// a pipelined batch).
type pauseAfterLookup struct {
	once           sync.Once
	paused, resume chan struct{}
}

func isLookup(sql string) bool {
	return strings.Contains(sql, "FROM payments") && strings.Contains(sql, "provider_ref = $2")
}

func (p *pauseAfterLookup) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if isLookup(d.SQL) {
		return context.WithValue(ctx, p, true)
	}
	return ctx
}

func (p *pauseAfterLookup) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (p *pauseAfterLookup) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if isLookup(d.SQL) {
		p.once.Do(func() { close(p.paused); <-p.resume })
	}
}

func (p *pauseAfterLookup) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (p *pauseAfterLookup) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(p) != nil {
		p.once.Do(func() { close(p.paused); <-p.resume })
	}
}

// A notification that arrives while the create's answer is being recorded
// (the provider sends both at once): whichever commits first, it is
// applied, never dropped as "unknown payment" (it was, when the lookup by
// the provider's id and the one by our reference were two statements and
// the answer committed between them).
func TestNotificationRacingTheCreateAnswerIsApplied(t *testing.T) {
	t.Parallel()
	u := user("alice")
	e, o, p := newUnansweredEnv(t, u)
	ref := paysimPaymentID(t, p.ID)

	tr := &pauseAfterLookup{paused: make(chan struct{}), resume: make(chan struct{})}
	cfg, err := pgxpool.ParseConfig(e.pool.Config().ConnString())
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = tr
	traced, err := pgxpool.NewWithConfig(e.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(traced.Close)
	svc, err := orders.New(store.New(traced), orders.Config{Provider: e.sb, PublicBaseURL: e.srv.URL, TicketKeys: ticketKeys,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)

	n := payments.Notification{ID: "evt_race_" + p.ID, Type: payments.EventPaymentSucceeded, Created: time.Now(),
		Payment: payments.ProviderPayment{ID: ref, Status: payments.StatusSucceeded, Amount: p.Amount, Currency: p.Currency, Reference: p.ID}}
	done := make(chan error, 1)
	go func() { done <- svc.ApplyNotification(e.ctx, "sandbox", n, nil) }()
	select {
	case <-tr.paused:
	case err := <-done:
		t.Fatalf("the notification never looked the payment up by the provider's id: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the notification's lookup never ran")
	}
	// Meanwhile the create's answer is recorded (as settle does).
	require.NoError(t, e.st.SetPaymentProviderRef(e.ctx, p.ID, ref, paysimURL+"/checkout/"+ref))
	close(tr.resume)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the notification never finished")
	}
	require.Equal(t, orders.PaymentSucceeded, e.payments(o.ID)[0].Status)
	require.Equal(t, orders.OrderConfirmed, e.order(u, o.ID).Status)
}
