package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
	"github.com/ticketing/ticketing/tickets"
)

// initOrders builds the payment provider (PAYMENTS_PROVIDER; STRIPE_SECRET_KEY
// for stripe) and the orders engine, and registers its metrics.
func (a *App) initOrders() error {
	p, err := payments.NewProvider(a.Cfg.PaymentsProvider, a.Cfg.PaymentsBaseURL, a.Cfg.PaymentsSecret, a.Cfg.StripeSecretKey)
	if err != nil {
		return err
	}
	keys, err := tickets.ParseKeys(a.Cfg.TicketSigningKey)
	if err != nil {
		return fmt.Errorf("TICKET_SIGNING_KEY: %w", err)
	}
	a.checkout.provider = payments.NewGauge(p)
	cfg := orders.Config{
		Provider:       a.checkout.provider,
		ProviderName:   a.Cfg.PaymentsProvider,
		PublicBaseURL:  a.Cfg.PublicBaseURL,
		WebhookBaseURL: a.Cfg.PaymentsWebhookBaseURL,
		TicketKeys:     keys,
		Holds:          a.Holds,
		EventChanged:   a.Catalog.ForgetEvents,
		Log:            a.Log,
		Now:            a.Now,
		// Load tests and chaos runs settle faster (zero: the defaults).
		ReconcileAfter:    a.Cfg.PaymentsReconcileAfter,
		ReconcileInterval: a.Cfg.PaymentsReconcileInterval,
	}
	if a.Queue != nil {
		cfg.Queue = a.Queue
	}
	// Orders and payments get a pool of their own: a storm of holds must
	// never starve the webhooks, confirmations and compensations that turn
	// paid orders into tickets (seen in the flash-sale runs).
	pcfg, err := pgxpool.ParseConfig(a.Cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if !strings.Contains(a.Cfg.DatabaseURL, "pool_max_conns") {
		pcfg.MaxConns = 16
	}
	if a.ordersPool, err = pgxpool.NewWithConfig(context.Background(), pcfg); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	st := store.New(a.ordersPool).WithHealth(a.PrimaryHealth)
	st.SetOutboxHook(a.outboxKick)
	// And provider notifications one more: in a sale the orders pool is
	// busy with createOrder, order reads and reconciliation, and a paid
	// order's confirmation must not queue behind them (bench/RESULTS.md,
	// 2026-12-04). As many connections as the orders pool (what the sale
	// benchmark runs with, pool_max_conns=16): under a sale's load a
	// notification's transaction takes ~0.2 s (its round trips wait for a
	// CPU), so six connections would confirm at most ~30 orders a second
	// (ticketing_notification_phase_seconds, bench/RESULTS.md 2026-12-04).
	ncfg := pcfg.Copy()
	if !strings.Contains(a.Cfg.DatabaseURL, "pool_max_conns") {
		ncfg.MaxConns = 16
	}
	if a.notifyPool, err = pgxpool.NewWithConfig(context.Background(), ncfg); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	cfg.Notifications = store.New(a.notifyPool).WithHealth(a.PrimaryHealth)
	cfg.Notifications.SetOutboxHook(a.outboxKick)
	a.Orders, err = orders.New(st, cfg)
	if err != nil {
		return err
	}
	a.Metrics.MustRegister(a.Orders.Collectors()...)
	if a.Cfg.PaymentsProvider == "sandbox" {
		// Not critical: holds and reads go on while the provider is down;
		// checkouts then wait in UNKNOWN/PENDING for reconciliation.
		a.AddReadinessCheck("payments", sandboxHealth(a.Cfg.PaymentsBaseURL), false)
	}
	return nil
}

// sandboxHealth checks that the sandbox provider answers its /healthz.
func sandboxHealth(baseURL string) CheckFunc {
	client := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("payments provider: %s", resp.Status)
		}
		return nil
	}
}

// mountOrders serves the payment provider's notifications.
func (a *App) mountOrders(mux *http.ServeMux) {
	if a.Orders == nil {
		return
	}
	mux.Handle("POST /webhooks/payments", a.checkout.timeConfirmations(a.Orders.WebhookHandler()))
}

// runOrders runs the compensation and reconciliation workers.
func (a *App) runOrders(ctx context.Context) {
	if a.Orders == nil {
		return
	}
	if err := a.Orders.RunWorkers(ctx); err != nil {
		a.Log.Error("orders workers", "err", err)
	}
}
