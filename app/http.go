package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/config"
	"github.com/ticketing/ticketing/graph"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/resolvers"
	"github.com/ticketing/ticketing/transport/sharedexec"
	"github.com/ticketing/ticketing/transport/wsgorilla"
)

// Limits of the GraphQL endpoint.
const (
	// MaxQueryDepth is the deepest selection nesting accepted (introspection
	// fields excluded: their depth is bounded by the schema).
	MaxQueryDepth = 15
	// MaxQueryComplexity is gqlgen's complexity budget per operation.
	MaxQueryComplexity = 2000
	// MaxSubscriptionsPerConnection caps the live subscriptions of one
	// WebSocket connection.
	MaxSubscriptionsPerConnection = 20
	// wsKeepAlive is the graphql-ws "ka" interval and the graphql-transport-ws
	// ping interval (a peer that misses two pongs is dropped).
	wsKeepAlive = 15 * time.Second
)

// platform is the App's HTTP plumbing: readiness registry and HTTP metrics.
type platform struct {
	once         sync.Once
	readiness    readiness
	httpDuration *prometheus.HistogramVec
}

// authConfig takes the JWT settings of the process configuration
// (JWT_ISSUER, JWT_AUDIENCE, JWT_HS256_SECRET, JWT_PUBLIC_KEY_FILE,
// JWT_JWKS_URL).
func authConfig(c config.Config) auth.Config {
	return auth.Config{
		Issuer:        c.JWTIssuer,
		Audience:      c.JWTAudience,
		HS256Secret:   c.JWTHS256Secret,
		PublicKeyFile: c.JWTPublicKeyFile,
		JWKSURL:       c.JWTJWKSURL,
	}
}

// initPlatform sets up the verifier, metrics and default readiness checks.
// New calls it; it is idempotent.
func (a *App) initPlatform() error {
	var err error
	a.platform.once.Do(func() {
		if a.Auth == nil {
			a.Auth, err = auth.NewVerifier(authConfig(a.Cfg))
			if err != nil {
				return
			}
		}
		a.Metrics, a.platform.httpDuration = newMetrics()
		if a.Pool != nil {
			a.AddReadinessCheck("postgres", PostgresCheck(a.Pool), true)
		}
		if a.Redis != nil {
			a.AddReadinessCheck("redis", RedisCheck(a.Redis), false)
		}
		notYet := func(context.Context) error { return ErrNotConfigured }
		a.AddReadinessCheck("search", notYet, false)
		a.AddReadinessCheck("payments", notYet, false)
	})
	return err
}

// graphqlHandler is /graphql: POST/GET JSON, WebSocket (gorilla) and SSE,
// with the depth and complexity limits, APQ and the contract's error
// presentation.
func (a *App) graphqlHandler() http.Handler {
	// seatMapUpdates frames are executed once per distinct operation and
	// shared by every subscriber (transport/sharedexec).
	srv := handler.New(sharedexec.Wrap(graph.NewExecutableSchema(graph.Config{Resolvers: a.Resolver, Complexity: costModel()}), "seatMapUpdates"))
	allowOrigin := wsgorilla.OriginChecker(a.allowedOrigins()...)
	srv.AddTransport(wsgorilla.Transport{
		Upgrader: websocket.Upgrader{
			CheckOrigin:      allowOrigin,
			HandshakeTimeout: 10 * time.Second,
		},
		ConnContext: wsConnContext,
		InitFunc:    a.websocketInit,
		InitTimeout: 10 * time.Second,
		KeepAlive:   wsKeepAlive,
		ReadLimit:   64 << 10,
		ErrorFunc: func(ctx context.Context, err error) {
			a.Log.DebugContext(ctx, "websocket", "err", err)
		},
		MaxSubscriptions:  MaxSubscriptionsPerConnection,
		SubscriptionLimit: subscriptionLimitError,
		Detach:            keepStreamSlot,
		CheckPayload:      scanBody, // app/prescan.go
	})
	srv.AddTransport(transport.SSE{KeepAlivePingInterval: wsKeepAlive})
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})

	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(MaxQueryTokens)
	if a.Cfg.Introspection {
		srv.Use(extension.Introspection{})
	} else {
		srv.SetDisableSuggestion(true)
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	srv.Use(NewDocumentLimits(1000, a.Cfg.Introspection)) // after APQ, which may supply the query
	srv.Use(DepthLimit{Max: MaxQueryDepth})
	srv.Use(&InputCheck{})
	srv.Use(&ComplexityLimit{Max: MaxQueryComplexity, Sizes: newListSizer(a.Catalog, a.Store)})
	srv.AroundOperations(resolvers.LoaderOperations(a.Catalog))
	srv.AroundFields(markResolverErrors)
	srv.AroundFields(a.newFairUse().fields) // FairUse (app/fairuse.go)
	srv.AroundResponses(capErrors)
	srv.SetErrorPresenter(a.presentError)
	srv.SetRecoverFunc(func(ctx context.Context, v any) error {
		a.Log.ErrorContext(ctx, "panic in resolver", "request_id", RequestID(ctx), "panic", fmt.Sprint(v))
		return resolverError{fmt.Errorf("panic: %v", v)}
	})

	checked := prescan(srv) // app/prescan.go, before anything is decoded
	// The Origin check is repeated here so a refused browser gets a clean 403
	// (for WebSocket and SSE alike) instead of a failed upgrade.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streaming := r.Header.Get("Upgrade") != "" || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
		if streaming && !allowOrigin(r) {
			apperr.WriteHTTPCode(w, r, http.StatusForbidden, "FORBIDDEN", "origin not allowed", nil)
			return
		}
		checked.ServeHTTP(w, r)
	})
}

// allowedOrigins is ALLOWED_ORIGINS plus PUBLIC_BASE_URL (same-host origins
// are always allowed).
func (a *App) allowedOrigins() []string {
	return append([]string{a.Cfg.PublicBaseURL}, a.Cfg.AllowedOrigins...)
}

// wsConnContext is what a WebSocket connection keeps of its upgrade
// request's context: the request id, the client's address and the caller
// authenticated from its headers (connection_init's token may replace it).
// Not the rest of the chain (net/http's contexts, the route's loaders),
// which every idle subscriber would otherwise hold. A value that operations
// over WebSocket need must be copied here.
func wsConnContext(r *http.Request) context.Context {
	from := r.Context()
	ctx := context.WithValue(context.Background(), requestIDKey{}, RequestID(from))
	ctx = queue.WithClientAddr(ctx, queue.ClientAddr(from))
	if u, ok := auth.UserFrom(from); ok {
		if exp, ok := auth.UserExpiry(from); ok {
			ctx = auth.WithUserUntil(ctx, u, exp)
		} else {
			ctx = auth.WithUser(ctx, u)
		}
	}
	return ctx
}

// websocketInit authenticates a WebSocket from the connection_init payload
// {"Authorization": "Bearer <JWT>"}. No token keeps the connection anonymous
// (or authenticated by the upgrade request's header); an invalid token closes
// it with 4403 (graphql-transport-ws) / a connection_error (graphql-ws). An
// authenticated connection ends when its token expires (the transport
// closes a connection whose context ends): an expired token must not go on
// reading orders or making holds over a socket opened while it was valid.
func (a *App) websocketInit(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	u, exp, ok, err := a.Auth.AuthenticateUntil(p.Authorization())
	if err != nil {
		return ctx, nil, &wsgorilla.InitError{Code: 4403, Reason: "UNAUTHENTICATED", Err: errors.New("UNAUTHENTICATED: invalid token")}
	}
	if ok {
		ctx = auth.WithUserUntil(ctx, u, exp)
	} else if exp, ok = auth.UserExpiry(ctx); !ok {
		return ctx, nil, nil // anonymous
	}
	// The timer outlives a connection closed earlier, until exp at most.
	ctx, cancel := context.WithCancelCause(ctx)
	time.AfterFunc(time.Until(exp), func() { cancel(auth.ErrTokenExpired) })
	return ctx, nil, nil
}

// presentError maps errors to the contract: codes gqlgen already set
// (GRAPHQL_VALIDATION_FAILED, GRAPHQL_PARSE_FAILED, limits) stay; apperr
// values get their code and extensions from apperr.Describe; other resolver
// errors become INTERNAL with a generic message and the cause is logged;
// gqlgen's own argument coercion errors are BAD_USER_INPUT.
func (a *App) presentError(ctx context.Context, err error) *gqlerror.Error {
	gerr := graphql.DefaultErrorPresenter(ctx, err)
	if _, ok := gerr.Extensions["code"]; ok {
		return gerr
	}
	d, known := apperr.Describe(err)
	var rerr resolverError
	switch {
	case known:
		gerr.Message = d.Message
		gerr.Extensions = map[string]any{"code": d.Code}
		maps.Copy(gerr.Extensions, d.Extensions)
	case errors.As(err, &rerr) || (gerr.Err == nil && len(gerr.Path) > 0):
		// A resolver's error, or one gqlgen raised while executing a field
		// (a null for a non-null field): the server's fault.
		level := slog.LevelError
		if apperr.Abandoned(ctx, err) {
			level = slog.LevelDebug // the client went away mid-request
		}
		a.Log.Log(ctx, level, "graphql internal error", "request_id", RequestID(ctx),
			"path", gerr.Path.String(), "err", err)
		gerr.Message = "internal error"
		gerr.Extensions = map[string]any{"code": "INTERNAL"}
	case gerr.Err == nil:
		// Raised by gqlgen before any field ran: a body that does not
		// decode (a JSON array batch, variables nested too deep), a bad
		// persisted-query hash. The client's fault; its message may quote
		// the body, so it is cut short, and logged once at info.
		gerr.Message = truncate(gerr.Message, 200)
		a.Log.InfoContext(ctx, "graphql bad request", "request_id", RequestID(ctx), "err", gerr.Message)
		gerr.Extensions = map[string]any{"code": "BAD_USER_INPUT"}
	default:
		gerr.Extensions = map[string]any{"code": "BAD_USER_INPUT"}
	}
	return gerr
}

// resolverError marks an error returned by a resolver (as opposed to one
// gqlgen raised itself while coercing input).
type resolverError struct{ err error }

func (e resolverError) Error() string { return e.err.Error() }
func (e resolverError) Unwrap() error { return e.err }

func markResolverErrors(ctx context.Context, next graphql.Resolver) (any, error) {
	res, err := next(ctx)
	if err != nil {
		if _, ok := errors.AsType[*gqlerror.Error](err); !ok {
			err = resolverError{err}
		}
	}
	return res, err
}

// ComplexityLimit refuses, before execution, operations whose gqlgen
// complexity exceeds Max, with code COMPLEXITY_LIMIT_EXCEEDED and the
// message of gqlgen's extension.ComplexityLimit. Unlike that extension it
// does not record the figures in the operation's stats: that map stayed in
// memory with every live subscription.
type ComplexityLimit struct {
	Max int
	// Sizes prices the seat and section lists (nil: as the largest venue
	// of the floors in app/complexity.go).
	Sizes *listSizer
	es    graphql.ExecutableSchema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = &ComplexityLimit{}

// ExtensionName implements graphql.HandlerExtension.
func (*ComplexityLimit) ExtensionName() string { return "ComplexityLimit" }

// Validate implements graphql.HandlerExtension.
func (l *ComplexityLimit) Validate(es graphql.ExecutableSchema) error {
	l.es = es
	return nil
}

// MutateOperationContext implements graphql.OperationContextMutator.
func (l *ComplexityLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	w := costWalker{es: l.es, vars: oc.Variables, sizes: l.Sizes}
	c := w.set(ctx, oc.Operation.SelectionSet, nil)
	if c <= l.Max {
		return nil
	}
	err := gqlerror.Errorf("operation has complexity %d, which exceeds the limit of %d", c, l.Max)
	errcode.Set(err, "COMPLEXITY_LIMIT_EXCEEDED")
	return err
}

// DepthLimit refuses, before execution, operations whose selections nest
// deeper than Max, with code GRAPHQL_VALIDATION_FAILED and
// extensions.maxDepth.
type DepthLimit struct{ Max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = DepthLimit{}

// ExtensionName implements graphql.HandlerExtension.
func (DepthLimit) ExtensionName() string { return "DepthLimit" }

// Validate implements graphql.HandlerExtension.
func (DepthLimit) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext implements graphql.OperationContextMutator.
func (l DepthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	d := selectionDepth(oc.Operation.SelectionSet, oc.Doc.Fragments, map[string]bool{})
	if d <= l.Max {
		return nil
	}
	err := gqlerror.Errorf("query depth %d exceeds the limit of %d", d, l.Max)
	errcode.Set(err, errcode.ValidationFailed)
	err.Extensions["maxDepth"] = l.Max
	return err
}

func selectionDepth(set ast.SelectionSet, frags ast.FragmentDefinitionList, seen map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		d := 0
		switch s := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			d = 1 + selectionDepth(s.SelectionSet, frags, seen)
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, frags, seen)
		case *ast.FragmentSpread:
			if f := frags.ForName(s.Name); f != nil && !seen[s.Name] {
				seen[s.Name] = true // cycles are refused by validation; this is belt and braces
				d = selectionDepth(f.SelectionSet, frags, seen)
				delete(seen, s.Name)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// subscriptionLimitError is the error of a WebSocket subscription over
// MaxSubscriptionsPerConnection (the transport counts them; SSE carries one
// subscription per request and needs no cap).
func subscriptionLimitError(max int) *gqlerror.Error {
	err := gqlerror.Errorf("at most %d subscriptions per connection", max)
	err.Extensions = map[string]any{"code": "RATE_LIMITED", "retryAfterSeconds": 1, "limit": max}
	return err
}
