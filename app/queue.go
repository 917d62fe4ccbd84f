package app

import (
	"net/http"
	"net/netip"

	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/queue"
)

// queueConfig is the virtual waiting room's configuration: QUEUE_ADMIT_RATE,
// QUEUE_WINDOW, QUEUE_ADMISSION_TTL, QUEUE_JOIN_RATE_USER,
// QUEUE_JOIN_RATE_ADDR, TRUSTED_PROXIES... of the environment config.Load
// read (queue.ConfigFromEnv), signed with QUEUE_SIGNING_KEY.
func queueConfig(cfg config.Config) (queue.Config, error) {
	env := cfg.Env
	if env == nil {
		env = func(string) string { return "" }
	}
	return queue.ConfigFromEnv(env, cfg.QueueSigningKey)
}

// initQueue builds the virtual waiting room from the configuration
// (queueConfig).
func (a *App) initQueue() error {
	qcfg, err := queueConfig(a.Cfg)
	if err != nil {
		return err
	}
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
