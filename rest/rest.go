// Package rest is the REST interface of the API contract
// (../shared/api/README.md), beside GraphQL and on the same domain services:
// every handler reads the caller (auth.Require), converts the request, calls
// one domain method and converts the result. Errors go through
// apperr.Describe to {"error": {"code", "message", ...extensions}} with the
// contract's HTTP status.
//
// Routes is the one list of endpoints: Mount registers it and the tests
// compare it with the OpenAPI document served at /api/openapi.json.
//
// Catalog reads carry a strong ETag (a hash of the body) and a short public
// Cache-Control, and honour If-None-Match; everything user-specific and
// every error is Cache-Control: no-store.
package rest

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/seatmap"
)

// Cache lifetimes of the catalog reads (the search projection and the seat
// map may lag by seconds anyway).
const (
	searchCacheControl = "public, max-age=10"
	eventCacheControl  = "public, max-age=2"
)

// Services are the domain services the endpoints call. Search may be nil
// (GET /api/events answers SERVICE_UNAVAILABLE); Queue may be nil (the
// queue endpoints do too).
type Services struct {
	Catalog *catalog.Service
	Holds   *holds.Service
	Orders  *orders.Service
	Queue   *queue.Service
	Search  *search.Service
	SeatMap *seatmap.Service
	Log     *slog.Logger
}

// API serves the REST endpoints.
type API struct{ s Services }

// New returns the API over s.
func New(s Services) *API {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	return &API{s: s}
}

// Route is one REST endpoint: its method and path (ServeMux and OpenAPI
// syntax alike, e.g. /api/holds/{holdId}).
type Route struct {
	Method string
	Path   string
	// External routes are served by another package and mounted elsewhere
	// (the seat-map stream: seatmap.Service, app.mountSeatMap); they are
	// listed here so the OpenAPI document is checked against them too.
	External bool
	handler  http.HandlerFunc
}

// Routes is the list of REST endpoints.
func (a *API) Routes() []Route {
	return []Route{
		{Method: "GET", Path: "/api/openapi.json", handler: a.openAPI},
		{Method: "GET", Path: "/api/ticket-keys", handler: a.ticketKeys},
		{Method: "GET", Path: "/api/events", handler: a.searchEvents},
		{Method: "GET", Path: "/api/events/{eventId}", handler: a.getEvent},
		{Method: "GET", Path: "/api/events/{eventId}/seatmap/stream", External: true},
		{Method: "POST", Path: "/api/events/{eventId}/queue", handler: a.joinQueue},
		{Method: "GET", Path: "/api/events/{eventId}/queue", handler: a.queueTicket},
		{Method: "POST", Path: "/api/holds", handler: a.createHold},
		{Method: "GET", Path: "/api/holds/{holdId}", handler: a.getHold},
		{Method: "DELETE", Path: "/api/holds/{holdId}", handler: a.cancelHold},
		{Method: "POST", Path: "/api/orders", handler: a.createOrder},
		{Method: "GET", Path: "/api/orders/{orderId}", handler: a.getOrder},
		{Method: "POST", Path: "/api/orders/{orderId}/payments", handler: a.retryPayment},
	}
}

// Mount registers the routes (except the External ones) on mux.
func (a *API) Mount(mux *http.ServeMux) {
	for _, r := range a.Routes() {
		if !r.External {
			mux.HandleFunc(r.Method+" "+r.Path, r.handler)
		}
	}
}

//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3.1 document of the REST interface.
func OpenAPI() []byte { return openAPIDoc }

func (a *API) openAPI(w http.ResponseWriter, r *http.Request) {
	serveBytes(w, r, http.StatusOK, openAPIDoc, "public, max-age=300", true)
}

// reply writes v as JSON. Cacheable replies (catalog reads) get cacheControl,
// a strong ETag and If-None-Match handling; the others are no-store.
func (a *API) reply(w http.ResponseWriter, r *http.Request, status int, v any, cacheControl string) {
	b, err := json.Marshal(v)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	b = append(b, '\n')
	if cacheControl == "" {
		serveBytes(w, r, status, b, "no-store", false)
		return
	}
	serveBytes(w, r, status, b, cacheControl, true)
}

func serveBytes(w http.ResponseWriter, r *http.Request, status int, b []byte, cacheControl string, etag bool) {
	h := w.Header()
	h.Set("Cache-Control", cacheControl)
	if etag {
		sum := sha256.Sum256(b)
		tag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", tag)
		if noneMatch(r.Header.Get("If-None-Match"), tag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// noneMatch reports whether an If-None-Match header matches tag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func noneMatch(header, tag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}

// fail writes err in the contract's REST error shape (apperr.WriteHTTP).
// Unknown errors are logged and shown as INTERNAL.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	if _, known := apperr.Describe(err); !known {
		level := slog.LevelError
		if apperr.Abandoned(r.Context(), err) {
			level = slog.LevelDebug // the client went away mid-request
		}
		a.s.Log.Log(r.Context(), level, "rest: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	apperr.WriteHTTP(w, r, err)
}

// decode reads a JSON body into v: unknown fields, trailing data, a wrong
// type or malformed JSON are BAD_USER_INPUT naming the field ("input.x", as
// the domain names its input fields) or "body".
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return apperr.Invalid("body", "a single JSON object is expected")
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return apperr.Invalid("body", "a JSON object is required")
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return apperr.Invalid("input."+typeErr.Field, "must be of JSON type %s", typeErr.Type.String())
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		if name == "idempotencyKey" {
			return apperr.Invalid("input.idempotencyKey", "unknown field: the key goes in the Idempotency-Key header")
		}
		return apperr.Invalid("input."+name, "unknown field %q", name)
	default:
		return apperr.Invalid("body", "malformed JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
}

// idempotencyKey returns the Idempotency-Key header, required on writes;
// the services check it (apperr.CheckIdempotencyKey), headerField names
// the header in their errors.
func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	if k == "" {
		return "", apperr.Invalid("Idempotency-Key", "the Idempotency-Key header is required")
	}
	return k, nil
}

// headerField renames the domain's validation errors of the idempotency key
// to the header that carries it over REST.
func headerField(err error) error {
	var inv *apperr.InvalidInputError
	if errors.As(err, &inv) && (inv.Field == "input.idempotencyKey" || inv.Field == "idempotencyKey") {
		return apperr.Invalid("Idempotency-Key", "%s", inv.Message)
	}
	return err
}
