package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// Stripe is the Provider backed by Stripe PaymentIntents (stripe-go v82),
// selected with PAYMENTS_PROVIDER=stripe. Configuration: STRIPE_SECRET_KEY
// (the API key) and PAYMENTS_WEBHOOK_SECRET (the endpoint's whsec_ signing
// secret); register PUBLIC_BASE_URL/webhooks/payments as the endpoint for
// payment_intent.succeeded, payment_intent.payment_failed,
// payment_intent.canceled and charge.refunded.
//
// Mapping: a payment is a PaymentIntent (Reference in metadata.reference),
// created with the attempt's idempotency key. Its CheckoutURL is the
// buyer's return page with the intent's client secret, for a Stripe
// Elements form (the web app has none yet: it pays through the sandbox). Statuses: succeeded -> succeeded (refunded when its
// latest charge is refunded), canceled -> cancelled, requires_payment_method
// after a failed attempt -> failed, anything else -> pending.
type Stripe struct {
	sc            *stripe.Client
	webhookSecret string
}

var _ Provider = (*Stripe)(nil)

// FailedMaySucceed implements FailureReopener: a declined PaymentIntent
// (requires_payment_method) can be confirmed again with another card.
func (s *Stripe) FailedMaySucceed() bool { return true }

// NewStripe returns the Stripe provider. backends may be nil (Stripe's API);
// tests pass stripe.NewBackendsWithConfig with their own URL.
func NewStripe(secretKey, webhookSecret string, backends *stripe.Backends) *Stripe {
	var opts []stripe.ClientOption
	if backends != nil {
		opts = append(opts, stripe.WithBackends(backends))
	}
	return &Stripe{sc: stripe.NewClient(secretKey, opts...), webhookSecret: webhookSecret}
}

// StripeBackends returns backends for the Stripe API at apiURL (a test
// server), without network retries or logging.
func StripeBackends(apiURL string, httpClient *http.Client) *stripe.Backends {
	return stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(apiURL),
		HTTPClient:        httpClient,
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
}

// NewProvider builds the provider named by PAYMENTS_PROVIDER: "sandbox"
// (paysim at baseURL) or "stripe" (stripeKey required).
func NewProvider(kind, baseURL, webhookSecret, stripeKey string) (Provider, error) {
	switch kind {
	case "", "sandbox":
		return NewSandbox(baseURL, webhookSecret, nil), nil
	case "stripe":
		if stripeKey == "" {
			return nil, errors.New("config: STRIPE_SECRET_KEY: required with PAYMENTS_PROVIDER=stripe")
		}
		return NewStripe(stripeKey, webhookSecret, nil), nil
	}
	return nil, fmt.Errorf("config: PAYMENTS_PROVIDER: want sandbox or stripe, got %q", kind)
}

func stripePayment(pi *stripe.PaymentIntent, returnURL string) ProviderPayment {
	p := ProviderPayment{
		ID:       pi.ID,
		Amount:   pi.Amount,
		Currency: strings.ToUpper(string(pi.Currency)),
		Created:  time.Unix(pi.Created, 0),
	}
	if pi.Metadata != nil {
		p.Reference = pi.Metadata["reference"]
	}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		p.Status = StatusSucceeded
		switch ch := pi.LatestCharge; {
		case ch == nil:
		case ch.Disputed:
			p.Status, p.FailureCode = StatusRefunded, FailureDisputed
		case ch.Refunded: // refunded in full
			p.Status = StatusRefunded
		case ch.AmountRefunded > 0:
			p.RefundedAmount = ch.AmountRefunded
		}
	case stripe.PaymentIntentStatusCanceled:
		p.Status = StatusCancelled
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		p.Status = StatusPending
		if pi.LastPaymentError != nil {
			p.Status = StatusFailed
			p.FailureCode = string(pi.LastPaymentError.Code)
		}
	default:
		p.Status = StatusPending
	}
	if returnURL != "" && pi.ClientSecret != "" {
		p.CheckoutURL = returnURL + "?payment_intent=" + url.QueryEscape(pi.ID) +
			"&payment_intent_client_secret=" + url.QueryEscape(pi.ClientSecret)
	}
	return p
}

// stripeErr maps a stripe-go error: definite 4xx answers become *APIError
// (ErrRejected, plus the specific sentinel), everything else (network,
// 5xx, 429) ErrUnknownOutcome for writes and ErrUnavailable for reads.
func stripeErr(err error, write bool) error {
	var se *stripe.Error
	// 409 idempotency_key_in_use: another request with this key is still
	// in progress at Stripe (a create that timed out on our side, say). It
	// is no refusal: that request may succeed, so the outcome is unknown.
	inUse := errors.As(err, &se) && (se.HTTPStatusCode == http.StatusConflict || se.Code == "idempotency_key_in_use")
	if !inUse && errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != 429 {
		e := &APIError{StatusCode: se.HTTPStatusCode, Code: string(se.Code), Message: se.Msg, Param: se.Param}
		switch {
		case se.Type == stripe.ErrorTypeIdempotency:
			e.kind = ErrIdempotencyKeyReused
		case se.Code == stripe.ErrorCodeResourceMissing:
			e.kind = ErrNotFound
		case se.Code == stripe.ErrorCodeChargeAlreadyRefunded:
			e.kind = ErrNotRefundable
		case se.Code == stripe.ErrorCodePaymentIntentUnexpectedState:
			e.kind = ErrNotPending
		}
		return e
	}
	if write {
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// CreatePayment implements Provider with a PaymentIntent created under the
// request's idempotency key (Stripe answers a repeat with the same intent).
func (s *Stripe) CreatePayment(ctx context.Context, r CreateRequest) (ProviderPayment, error) {
	if r.IdempotencyKey == "" {
		return ProviderPayment{}, &APIError{StatusCode: 400, Code: "idempotency_key_missing", Message: "missing idempotency key"}
	}
	params := &stripe.PaymentIntentCreateParams{
		Amount:                  stripe.Int64(r.Amount),
		Currency:                stripe.String(strings.ToLower(r.Currency)),
		Description:             stripe.String("ticketing " + r.Reference),
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{Enabled: stripe.Bool(true)},
	}
	params.AddMetadata("reference", r.Reference)
	params.SetIdempotencyKey(r.IdempotencyKey)
	pi, err := s.sc.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return ProviderPayment{}, stripeErr(err, true)
	}
	return stripePayment(pi, r.ReturnURL), nil
}

func (s *Stripe) get(ctx context.Context, id string) (ProviderPayment, error) {
	params := &stripe.PaymentIntentRetrieveParams{}
	params.AddExpand("latest_charge")
	pi, err := s.sc.V1PaymentIntents.Retrieve(ctx, id, params)
	if err != nil {
		return ProviderPayment{}, stripeErr(err, false)
	}
	return stripePayment(pi, ""), nil
}

// GetPayment implements Provider (the intent with its latest charge).
func (s *Stripe) GetPayment(ctx context.Context, id string) (ProviderPayment, error) {
	return s.get(ctx, id)
}

// CancelPayment implements Provider: cancels the intent; an intent that
// can no longer be cancelled is ErrNotPending with its current state.
func (s *Stripe) CancelPayment(ctx context.Context, id string) (ProviderPayment, error) {
	pi, err := s.sc.V1PaymentIntents.Cancel(ctx, id, &stripe.PaymentIntentCancelParams{})
	if err == nil {
		return stripePayment(pi, ""), nil
	}
	err = stripeErr(err, true)
	if errors.Is(err, ErrNotPending) {
		cur, gerr := s.get(ctx, id)
		if gerr == nil {
			return cur, err
		}
	}
	return ProviderPayment{}, err
}

// Refund implements Provider with a full refund of the intent under the
// idempotency key. An intent already refunded or not succeeded is
// ErrNotRefundable with its current state.
func (s *Stripe) Refund(ctx context.Context, paymentID, idempotencyKey string) (Refund, error) {
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(paymentID)}
	params.SetIdempotencyKey(idempotencyKey)
	re, err := s.sc.V1Refunds.Create(ctx, params)
	if err != nil {
		err = stripeErr(err, true)
		var api *APIError
		if errors.As(err, &api) && (api.kind == ErrNotPending || api.kind == ErrNotRefundable || api.kind == nil) {
			api.kind = ErrNotRefundable
			cur, gerr := s.get(ctx, paymentID)
			if gerr == nil {
				return Refund{PaymentID: paymentID, Payment: cur}, api
			}
		}
		return Refund{}, err
	}
	out := Refund{ID: re.ID, PaymentID: paymentID, Status: string(re.Status), Amount: re.Amount,
		Currency: strings.ToUpper(string(re.Currency)), Created: time.Unix(re.Created, 0)}
	if re.Status != stripe.RefundStatusSucceeded && re.Status != stripe.RefundStatusPending {
		return out, &APIError{StatusCode: 409, Code: "refund_" + string(re.Status), Message: "refund not accepted", kind: ErrNotRefundable}
	}
	if re.Status == stripe.RefundStatusPending {
		// Not confirmed yet: report an unknown outcome so the caller
		// retries with the same key until Stripe says succeeded.
		return out, fmt.Errorf("%w: refund %s pending at stripe", ErrUnknownOutcome, re.ID)
	}
	out.Payment, _ = s.get(ctx, paymentID)
	return out, nil
}

// VerifyWebhook implements Provider with stripe-go's webhook package: the
// Stripe-Signature header is checked (constant time) before the event is
// decoded, with a 5-minute tolerance measured against now.
func (s *Stripe) VerifyWebhook(header http.Header, body []byte, now time.Time) (Notification, error) {
	sig := header.Get("Stripe-Signature")
	ev, err := webhook.ConstructEventWithOptions(body, sig, s.webhookSecret,
		webhook.ConstructEventOptions{IgnoreTolerance: true, IgnoreAPIVersionMismatch: true})
	if err != nil {
		if errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrNoValidSignature) || errors.Is(err, webhook.ErrInvalidHeader) {
			return Notification{}, fmt.Errorf("%w: %v", ErrInvalidSignature, err)
		}
		return Notification{}, fmt.Errorf("%w: %v", ErrBadNotification, err)
	}
	if ts, ok := stripeTimestamp(sig); !ok || now.Sub(ts).Abs() > SignatureTolerance {
		return Notification{}, fmt.Errorf("%w: timestamp outside the %s tolerance", ErrInvalidSignature, SignatureTolerance)
	}
	if ev.Data == nil {
		return Notification{}, fmt.Errorf("%w: no data", ErrBadNotification)
	}
	n := Notification{ID: ev.ID, Created: time.Unix(ev.Created, 0)}
	switch ev.Type {
	case "payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled":
		var pi stripe.PaymentIntent
		if err := json.Unmarshal(ev.Data.Raw, &pi); err != nil || pi.ID == "" {
			return Notification{}, fmt.Errorf("%w: payment intent: %v", ErrBadNotification, err)
		}
		n.Payment = stripePayment(&pi, "")
		n.Type = map[stripe.EventType]string{
			"payment_intent.succeeded":      EventPaymentSucceeded,
			"payment_intent.payment_failed": EventPaymentFailed,
			"payment_intent.canceled":       EventPaymentCancelled,
		}[ev.Type]
	case "charge.refunded":
		var ch stripe.Charge
		if err := json.Unmarshal(ev.Data.Raw, &ch); err != nil || ch.PaymentIntent == nil {
			return Notification{}, fmt.Errorf("%w: charge: %v", ErrBadNotification, err)
		}
		// amount_refunded is honoured: only a refund of the whole charge
		// is a refund of the payment; a partial one leaves it succeeded.
		n.Type = EventRefundSucceeded
		n.Payment = ProviderPayment{ID: ch.PaymentIntent.ID, Status: StatusRefunded, Amount: ch.Amount,
			Currency: strings.ToUpper(string(ch.Currency)), RefundedAmount: ch.AmountRefunded}
		if !ch.Refunded || ch.AmountRefunded < ch.Amount {
			n.Type = EventRefundPartial
			n.Payment.Status = StatusSucceeded
		}
		if ch.Metadata != nil {
			n.Payment.Reference = ch.Metadata["reference"]
		}
	case "charge.dispute.created":
		var d stripe.Dispute
		if err := json.Unmarshal(ev.Data.Raw, &d); err != nil || d.PaymentIntent == nil {
			return Notification{}, fmt.Errorf("%w: dispute: %v", ErrBadNotification, err)
		}
		n.Type = EventPaymentDisputed
		n.Payment = ProviderPayment{ID: d.PaymentIntent.ID, Status: StatusRefunded, FailureCode: FailureDisputed,
			Amount: d.Amount, Currency: strings.ToUpper(string(d.Currency))}
	default:
		n.Type = string(ev.Type) // not ours to act on: recorded and ignored
		n.Payment = ProviderPayment{ID: "unhandled"}
	}
	return n, nil
}

func stripeTimestamp(header string) (time.Time, bool) {
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			sec, err := strconv.ParseInt(v, 10, 64)
			return time.Unix(sec, 0), err == nil
		}
	}
	return time.Time{}, false
}
