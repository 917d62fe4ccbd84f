// Package paysim is the sandbox payment provider: a stand-in for a real card
// processor, run as its own process (`ticketing paysim`) with its own state
// in the Postgres schema "paysim". The ticketing API talks to it only over
// HTTP, as it would to a real processor; see ../../shared/api/README.md and
// README.md in this directory for the contract and its extensions.
//
// paysim is not part of the product: its SQL lives here (store.go), not in
// the product's store package, and its migrations are its own.
package paysim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configures a Server. Zero values take the defaults shown.
type Options struct {
	// WebhookSecret signs notifications (PAYMENTS_WEBHOOK_SECRET).
	WebhookSecret string
	// PublicBaseURL is the merchant's public address (PUBLIC_BASE_URL): the
	// checkout page sends browsers back under it.
	PublicBaseURL string
	// BaseURL is paysim's own public address, used in checkout_url. Empty
	// means the scheme and Host of the create request.
	BaseURL string
	// Log receives operational messages (default slog.Default()).
	Log *slog.Logger
	// HTTPClient delivers notifications (default: no redirects followed,
	// DeliveryTimeout per attempt).
	HTTPClient *http.Client
	// PollInterval is how often the worker looks for due work (200ms).
	PollInterval time.Duration
	// DeliveryTimeout bounds one delivery attempt (10s).
	DeliveryTimeout time.Duration
	// BackoffBase and BackoffMax shape the retry delay after a failed
	// attempt n: min(BackoffBase*2^(n-1), BackoffMax), of which a random
	// half is jitter (1s, 1h).
	BackoffBase, BackoffMax time.Duration
	// MaxAttempts and MaxAge stop retrying a delivery; the record is kept
	// (25 attempts, 72h).
	MaxAttempts int
	MaxAge      time.Duration
	// ReorderWindow is how long reorder_webhooks holds a notification back
	// unless reorder_window_ms says otherwise (3s).
	ReorderWindow time.Duration
	// CreateTimeoutMax bounds how long a create_timeout request hangs when
	// the client never gives up (2m).
	CreateTimeoutMax time.Duration
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.PollInterval, 200*time.Millisecond)
	def(&o.DeliveryTimeout, 10*time.Second)
	def(&o.BackoffBase, time.Second)
	def(&o.BackoffMax, time.Hour)
	def(&o.MaxAge, 72*time.Hour)
	def(&o.ReorderWindow, 3*time.Second)
	def(&o.CreateTimeoutMax, 2*time.Minute)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 25
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{
			Timeout:       o.DeliveryTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	o.PublicBaseURL = strings.TrimRight(o.PublicBaseURL, "/")
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
}

// Server is one paysim instance: the HTTP API (Handler) and the background
// worker (Run). Several instances may share one database.
type Server struct {
	pool    *pgxpool.Pool
	opt     Options
	log     *slog.Logger
	wake    chan struct{}
	metrics *metrics
	// flight: the payments whose notifications a delivery goroutine is
	// sending now (see deliverDue).
	flightMu sync.Mutex
	flight   map[string]bool
	sending  sync.WaitGroup
}

// New returns a server over a pool whose database has been migrated with
// Migrate.
func New(pool *pgxpool.Pool, opt Options) *Server {
	opt.defaults()
	s := &Server{pool: pool, opt: opt, log: opt.Log, wake: make(chan struct{}, 1), flight: map[string]bool{}}
	s.metrics = newMetrics(s)
	return s
}

// Handler serves the provider's HTTP API, the hosted checkout page, a
// page of recent payments for developers (GET /) and Prometheus metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handleIndex)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("POST /v1/payments", s.handleCreate)
	mux.HandleFunc("GET /v1/payments/{id}", s.handleGet)
	mux.HandleFunc("GET /v1/payments/{id}/events", s.handleEvents)
	mux.HandleFunc("POST /v1/payments/{id}/cancel", s.handleCancel)
	mux.HandleFunc("POST /v1/refunds", s.handleRefund)
	mux.HandleFunc("POST /v1/payments/{id}/dispute", s.handleDispute)
	mux.HandleFunc("GET /v1/faults", s.handleGetFaults)
	mux.HandleFunc("POST /v1/faults", s.handleSetFaults)
	mux.HandleFunc("DELETE /v1/faults", s.handleResetFaults)
	mux.HandleFunc("GET /checkout/{id}", s.handleCheckoutPage)
	mux.HandleFunc("POST /checkout/{id}", s.handleCheckoutSettle)
	return s.metrics.count(mux)
}

// notify wakes the worker after a commit that scheduled work.
func (s *Server) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// createRequest is the body of POST /v1/payments.
type createRequest struct {
	Amount     int64           `json:"amount"`
	Currency   string          `json:"currency"`
	Reference  string          `json:"reference"`
	WebhookURL string          `json:"webhook_url"`
	ReturnURL  string          `json:"return_url,omitempty"`
	Simulate   json.RawMessage `json:"simulate,omitempty"`
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// apiError is an error answer: {"error": {"code", "message", "param"}}.
type apiError struct {
	Status  int
	Code    string
	Message string
	Param   string
	Payment *payment
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func invalid(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_request", Param: param, Message: fmt.Sprintf(format, args...)}
}

var (
	errKeyReused = &apiError{Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused",
		Message: "this Idempotency-Key was used with a different request body"}
	errNotFound = &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "no such payment"}
)

func notPending(p payment, what string) *apiError {
	return &apiError{Status: http.StatusConflict, Code: "payment_not_pending", Payment: &p,
		Message: fmt.Sprintf("cannot %s a payment in status %s", what, p.Status)}
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		s.log.Error("paysim: request failed", "err", err)
		ae = &apiError{Status: http.StatusInternalServerError, Code: "internal_error", Message: "internal error"}
	}
	body := map[string]any{"error": map[string]string{"code": ae.Code, "message": ae.Message, "param": ae.Param}}
	if ae.Payment != nil {
		body["payment"] = ae.Payment.view()
	}
	writeJSON(w, ae.Status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeStrict reads a JSON body, rejecting unknown fields like a real API.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("", "invalid JSON body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("", "invalid JSON body: trailing data")
	}
	return nil
}

func idempotencyKey(r *http.Request) (string, error) {
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if key == "" {
		return "", &apiError{Status: http.StatusBadRequest, Code: "idempotency_key_missing",
			Message: "the Idempotency-Key header is required"}
	}
	if len(key) > 255 {
		return "", invalid("Idempotency-Key", "at most 255 characters")
	}
	return key, nil
}

func checkURL(param, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid(param, "want an absolute http(s) URL")
	}
	return nil
}

// validate normalises the request and returns its parsed faults and the
// fingerprint that idempotent replays must match.
func (req *createRequest) validate() (Faults, string, error) {
	req.Currency = strings.ToUpper(strings.TrimSpace(req.Currency))
	req.Reference = strings.TrimSpace(req.Reference)
	switch {
	case req.Amount <= 0:
		return Faults{}, "", invalid("amount", "must be a positive integer of minor units")
	case req.Amount > 99_999_999_999:
		return Faults{}, "", invalid("amount", "too large")
	case !currencyRE.MatchString(req.Currency):
		return Faults{}, "", invalid("currency", "want a three-letter ISO 4217 code")
	case req.Reference == "" || len(req.Reference) > 255:
		return Faults{}, "", invalid("reference", "required, at most 255 characters")
	}
	if err := checkURL("webhook_url", req.WebhookURL); err != nil {
		return Faults{}, "", err
	}
	if req.ReturnURL != "" {
		if err := checkURL("return_url", req.ReturnURL); err != nil {
			return Faults{}, "", err
		}
	}
	f, err := parseFaults(req.Simulate)
	if err != nil {
		return Faults{}, "", invalid("simulate", "%v", err)
	}
	norm, _ := json.Marshal(f)
	req.Simulate = norm
	canon, _ := json.Marshal(req)
	sum := sha256.Sum256(canon)
	return f, hex.EncodeToString(sum[:]), nil
}

func (s *Server) checkoutBase(r *http.Request) string {
	if s.opt.BaseURL != "" {
		return s.opt.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	key, err := idempotencyKey(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req createRequest
	if err := decodeStrict(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	faults, fp, err := req.validate()
	if err != nil {
		s.fail(w, err)
		return
	}
	p, eff, created, err := s.createPayment(r.Context(), key, fp, req, faults, s.checkoutBase(r))
	if err != nil {
		s.fail(w, err)
		return
	}
	if created && eff.AutoOutcome != nil {
		s.notify()
	}
	if created && val(eff.CreateTimeout) {
		// Stored and committed; the answer never comes. Hang until the
		// client gives up, then drop the connection without a response.
		s.log.Info("paysim: create_timeout: not answering", "payment", p.ID)
		t := time.NewTimer(s.opt.CreateTimeoutMax)
		defer t.Stop()
		select {
		case <-r.Context().Done():
		case <-t.C:
		}
		panic(http.ErrAbortHandler)
	}
	if !created {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, p.view())
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	p, err := s.getPayment(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p.view())
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	evs, err := s.listEvents(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": evs})
}

func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	p, err := s.cancelPayment(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.notify()
	writeJSON(w, http.StatusOK, p.view())
}

func (s *Server) handleRefund(w http.ResponseWriter, r *http.Request) {
	key, err := idempotencyKey(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req struct {
		PaymentID string `json:"payment_id"`
	}
	if err := decodeStrict(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if req.PaymentID == "" {
		s.fail(w, invalid("payment_id", "required"))
		return
	}
	p, created, err := s.refund(r.Context(), key, req.PaymentID)
	if err != nil {
		s.fail(w, err)
		return
	}
	if created {
		s.notify()
	} else {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, p.refundView())
}

// handleDispute simulates a chargeback the cardholder's bank opened on a
// succeeded payment: the money goes back to the cardholder, so the payment
// becomes refunded with failure_code "disputed" (+ payment.disputed).
// Repeating it answers the payment unchanged.
func (s *Server) handleDispute(w http.ResponseWriter, r *http.Request) {
	p, err := s.dispute(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.notify()
	writeJSON(w, http.StatusOK, p.view())
}

func (s *Server) handleGetFaults(w http.ResponseWriter, r *http.Request) {
	f, err := s.globalFaults(r.Context(), s.pool)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// handleSetFaults merges the given faults into the global ones (a field
// set to null is removed) and answers the result.
func (s *Server) handleSetFaults(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<10))
	if err != nil {
		s.fail(w, invalid("", "body: %v", err))
		return
	}
	if _, err := parseFaults(raw); err != nil {
		s.fail(w, invalid("", "%v", err))
		return
	}
	f, err := s.mergeGlobalFaults(r.Context(), raw)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

func (s *Server) handleResetFaults(w http.ResponseWriter, r *http.Request) {
	f, err := s.mergeGlobalFaults(r.Context(), nil)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}
