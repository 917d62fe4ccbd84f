package app

import (
	"net/http"
	"net/netip"

	"github.com/ticketing/ticketing/queue"
)

// initQueue builds the virtual waiting room from the configuration
// (config.Config.Queue: QUEUE_SIGNING_KEY, QUEUE_ADMIT_RATE, QUEUE_WINDOW,
// QUEUE_ADMISSION_TTL, QUEUE_JOIN_RATE_USER, QUEUE_JOIN_RATE_ADDR,
// TRUSTED_PROXIES).
func (a *App) initQueue() error {
	qcfg := a.Cfg.Queue
	var err error
	deps := queue.Deps{Redis: a.Redis, Events: a.Store, Now: a.Now, Log: a.Log, Metrics: a.Metrics}
	if qcfg.Adaptive {
		// Adaptive admission: checkout's latencies and refusals set the
		// rate; QUEUE_ADMIT_RATE/QUEUE_WINDOW are ceilings (pressure.go).
		deps.Pressure = a.CheckoutPressure
	}
	a.Queue, err = queue.New(deps, qcfg)
	if err != nil {
		return err
	}
	a.Log.Info("virtual queue", "config", qcfg.String())
	return nil
}

// withClientAddr puts the client address in the request context for the
// queue's per-address join limit (see clientip.go).
func (a *App) withClientAddr(next http.Handler) http.Handler {
	var trusted []netip.Prefix
	if a.Queue != nil {
		trusted = a.Queue.Config().TrustedProxies
	}
	return withClientAddr(trusted, next)
}
