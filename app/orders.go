package app

import (
	"context"
	"net/http"
	"os"

	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/payments"
)

// initOrders builds the payment provider (PAYMENTS_PROVIDER; STRIPE_SECRET_KEY
// for stripe) and the orders engine, and registers its metrics.
func (a *App) initOrders() error {
	p, err := payments.NewProvider(a.Cfg.PaymentsProvider, a.Cfg.PaymentsBaseURL, a.Cfg.PaymentsSecret, os.Getenv("STRIPE_SECRET_KEY"))
	if err != nil {
		return err
	}
	cfg := orders.Config{
		Provider:      p,
		ProviderName:  a.Cfg.PaymentsProvider,
		PublicBaseURL: a.Cfg.PublicBaseURL,
		TicketKey:     []byte(a.Cfg.TicketSigningKey),
		Log:           a.Log,
		Now:           a.Now,
	}
	if a.Queue != nil {
		cfg.Queue = a.Queue
	}
	a.Orders, err = orders.New(a.Store, cfg)
	if err != nil {
		return err
	}
	a.Metrics.MustRegister(a.Orders.Collectors()...)
	return nil
}

// mountOrders serves the payment provider's notifications.
func (a *App) mountOrders(mux *http.ServeMux) {
	if a.Orders == nil {
		return
	}
	mux.Handle("POST /webhooks/payments", a.Orders.WebhookHandler())
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
