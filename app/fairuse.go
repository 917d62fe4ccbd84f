package app

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/redisstore"
)

// FairUse are the request rate limits of the operations a bot would
// hammer, per user and per client address (GCRA in Redis, shared by every
// instance). A fan never meets them: they allow bursts far above what a
// person clicks, and the address limits are ten times the user's (fans
// behind one NAT share an address). ABUSE_LIMITS=off turns them off.
var FairUse = map[string]struct{ User, Addr redisstore.Limit }{
	"createHold":   {User: redisstore.Limit{Rate: 2, Burst: 20}, Addr: redisstore.Limit{Rate: 20, Burst: 200}},
	"createOrder":  {User: redisstore.Limit{Rate: 1, Burst: 10}, Addr: redisstore.Limit{Rate: 10, Burst: 100}},
	"retryPayment": {User: redisstore.Limit{Rate: 0.5, Burst: 5}, Addr: redisstore.Limit{Rate: 5, Burst: 50}},
	"searchEvents": {User: redisstore.Limit{Rate: 10, Burst: 50}, Addr: redisstore.Limit{Rate: 100, Burst: 500}},
}

// fairUse applies FairUse; nil (ABUSE_LIMITS=off) allows everything.
type fairUse struct {
	rl  *redisstore.RateLimiter
	app *App
}

func (a *App) newFairUse() *fairUse {
	if !a.Cfg.AbuseLimits || a.Redis == nil {
		return nil
	}
	return &fairUse{rl: redisstore.NewRateLimiter(a.Redis, a.Cfg.SeatMapRedisPrefix), app: a}
}

// check spends one op request of the caller and its address: nil, or an
// *apperr.RateLimitedError. Redis trouble lets the request through (the
// limits protect the service; they must not take a sale down).
func (f *fairUse) check(ctx context.Context, op string) error {
	if f == nil {
		return nil
	}
	lim, ok := FairUse[op]
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	now := time.Now()
	var keys []struct {
		key string
		lim redisstore.Limit
	}
	if u, ok := auth.UserFrom(ctx); ok {
		keys = append(keys, struct {
			key string
			lim redisstore.Limit
		}{op + ":u:" + u.ID, lim.User})
	}
	if addr := queue.ClientAddr(ctx); addr != "" {
		keys = append(keys, struct {
			key string
			lim redisstore.Limit
		}{op + ":a:" + addr, lim.Addr})
	}
	for _, k := range keys {
		wait, err := f.rl.Allow(ctx, k.key, k.lim, now)
		if err != nil {
			f.app.Log.WarnContext(ctx, "rate limit check failed; request allowed", "op", op, "err", err)
			return nil
		}
		if wait > 0 {
			return &apperr.RateLimitedError{RetryAfter: wait}
		}
	}
	return nil
}

// fields is the GraphQL field middleware of the limits (root fields only).
func (f *fairUse) fields(ctx context.Context, next graphql.Resolver) (any, error) {
	if f != nil {
		if fc := graphql.GetFieldContext(ctx); fc != nil && (fc.Object == "Mutation" || fc.Object == "Query") {
			if err := f.check(ctx, fc.Field.Name); err != nil {
				return nil, err
			}
		}
	}
	return next(ctx)
}

// restOp names the FairUse operation of a REST request ("" for none).
func restOp(r *http.Request) string {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && p == "/api/holds":
		return "createHold"
	case r.Method == http.MethodPost && p == "/api/orders":
		return "createOrder"
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/api/orders/") && strings.HasSuffix(p, "/payments"):
		return "retryPayment"
	case r.Method == http.MethodGet && p == "/api/events":
		return "searchEvents"
	}
	return ""
}

// rest is the REST middleware of the limits: 429 RATE_LIMITED with
// Retry-After.
func (f *fairUse) rest(next http.Handler) http.Handler {
	if f == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if op := restOp(r); op != "" {
			if err := f.check(r.Context(), op); err != nil {
				d, _ := apperr.Describe(err)
				apperr.WriteHTTPCode(w, r, http.StatusTooManyRequests, d.Code, d.Message, d.Extensions)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
