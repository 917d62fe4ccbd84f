package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Sandbox is the Provider backed by the sandbox provider (`ticketing
// paysim`) over HTTP.
type Sandbox struct {
	base   string
	secret string
	hc     *http.Client
}

var _ Provider = (*Sandbox)(nil)

// DefaultTimeout bounds each request of a Sandbox made without an HTTP client.
const DefaultTimeout = 10 * time.Second

// NewSandbox returns the client of the paysim at baseURL (PAYMENTS_BASE_URL)
// verifying notifications with webhookSecret (PAYMENTS_WEBHOOK_SECRET). A nil
// httpClient means one with DefaultTimeout; a context deadline also applies.
func NewSandbox(baseURL, webhookSecret string, httpClient *http.Client) *Sandbox {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultTimeout}
	}
	return &Sandbox{base: strings.TrimRight(baseURL, "/"), secret: webhookSecret, hc: httpClient}
}

// wirePayment is paysim's payment object.
type wirePayment struct {
	ProviderPayment
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

func (w wirePayment) payment() ProviderPayment {
	p := w.ProviderPayment
	p.Created, p.Updated = time.Unix(w.Created, 0), time.Unix(w.Updated, 0)
	return p
}

// errorBody is paysim's error answer; Payment is set when the error concerns
// an existing payment (its current state).
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Param   string `json:"param"`
	} `json:"error"`
	Payment *wirePayment `json:"payment"`
}

// call sends one request. On a 2xx it decodes into out; on a definite error
// it returns an *APIError and the payment named in the answer, if any.
func (s *Sandbox) call(ctx context.Context, method, path, key string, in, out any) (replayed bool, cur *ProviderPayment, err error) {
	transient := ErrUnavailable
	if method != http.MethodGet {
		transient = ErrUnknownOutcome
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return false, nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, body)
	if err != nil {
		return false, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return false, nil, fmt.Errorf("%w: %s %s: %w", transient, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, nil, fmt.Errorf("%w: %s %s: reading answer: %w", transient, method, path, err)
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if err := json.Unmarshal(raw, out); err != nil {
			return false, nil, fmt.Errorf("%w: %s %s: malformed answer: %v", transient, method, path, err)
		}
		return resp.Header.Get("Idempotent-Replayed") == "true", nil, nil
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout:
		return false, nil, fmt.Errorf("%w: %s %s: HTTP %d", transient, method, path, code)
	}
	var eb errorBody
	_ = json.Unmarshal(raw, &eb)
	ae := &APIError{StatusCode: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message, Param: eb.Error.Param}
	switch {
	case ae.Code == "idempotency_key_reused" || resp.StatusCode == http.StatusUnprocessableEntity:
		ae.kind = ErrIdempotencyKeyReused
	case resp.StatusCode == http.StatusNotFound:
		ae.kind = ErrNotFound
	case ae.Code == "payment_not_pending":
		ae.kind = ErrNotPending
	case ae.Code == "payment_not_refundable":
		ae.kind = ErrNotRefundable
	}
	if eb.Payment != nil {
		p := eb.Payment.payment()
		cur = &p
	}
	return false, cur, ae
}

// CreatePayment implements Provider.
func (s *Sandbox) CreatePayment(ctx context.Context, r CreateRequest) (ProviderPayment, error) {
	if r.IdempotencyKey == "" {
		return ProviderPayment{}, errors.New("payments: CreatePayment: IdempotencyKey is required")
	}
	in := map[string]any{"amount": r.Amount, "currency": r.Currency, "reference": r.Reference,
		"webhook_url": r.WebhookURL}
	if r.ReturnURL != "" {
		in["return_url"] = r.ReturnURL
	}
	if len(r.Simulate) > 0 {
		in["simulate"] = r.Simulate
	}
	var w wirePayment
	replayed, _, err := s.call(ctx, http.MethodPost, "/v1/payments", r.IdempotencyKey, in, &w)
	if err != nil {
		return ProviderPayment{}, fmt.Errorf("create payment: %w", err)
	}
	p := w.payment()
	p.Replayed = replayed
	return p, nil
}

// GetPayment implements Provider.
func (s *Sandbox) GetPayment(ctx context.Context, id string) (ProviderPayment, error) {
	var w wirePayment
	if _, _, err := s.call(ctx, http.MethodGet, "/v1/payments/"+url.PathEscape(id), "", nil, &w); err != nil {
		return ProviderPayment{}, fmt.Errorf("get payment %s: %w", id, err)
	}
	return w.payment(), nil
}

// CancelPayment implements Provider.
func (s *Sandbox) CancelPayment(ctx context.Context, id string) (ProviderPayment, error) {
	var w wirePayment
	_, cur, err := s.call(ctx, http.MethodPost, "/v1/payments/"+url.PathEscape(id)+"/cancel", "", struct{}{}, &w)
	if err != nil {
		var p ProviderPayment
		if cur != nil {
			p = *cur
		}
		return p, fmt.Errorf("cancel payment %s: %w", id, err)
	}
	return w.payment(), nil
}

// Refund implements Provider.
func (s *Sandbox) Refund(ctx context.Context, paymentID, idempotencyKey string) (Refund, error) {
	if idempotencyKey == "" {
		return Refund{}, errors.New("payments: Refund: idempotency key is required")
	}
	var w struct {
		ID        string      `json:"id"`
		PaymentID string      `json:"payment_id"`
		Status    string      `json:"status"`
		Amount    int64       `json:"amount"`
		Currency  string      `json:"currency"`
		Created   int64       `json:"created"`
		Payment   wirePayment `json:"payment"`
	}
	replayed, cur, err := s.call(ctx, http.MethodPost, "/v1/refunds", idempotencyKey,
		map[string]string{"payment_id": paymentID}, &w)
	if err != nil {
		r := Refund{PaymentID: paymentID}
		if cur != nil {
			r.Payment = *cur
		}
		return r, fmt.Errorf("refund payment %s: %w", paymentID, err)
	}
	return Refund{ID: w.ID, PaymentID: w.PaymentID, Status: w.Status, Amount: w.Amount, Currency: w.Currency,
		Created: time.Unix(w.Created, 0), Payment: w.Payment.payment(), Replayed: replayed}, nil
}

// VerifyWebhook implements Provider: it checks the Paysim-Signature header
// with SignatureTolerance before decoding the body.
func (s *Sandbox) VerifyWebhook(header http.Header, body []byte, now time.Time) (Notification, error) {
	if err := VerifySignature(s.secret, header.Get(SignatureHeader), body, now, SignatureTolerance); err != nil {
		return Notification{}, err
	}
	return parseNotification(body)
}
