package paysim

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Faults is the fault injection of a payment: the create body's "simulate"
// object, merged over the global faults of POST /v1/faults (a field set on
// the payment wins). Every field is optional; unknown fields are rejected.
type Faults struct {
	// DuplicateWebhooks delivers each notification N times (true means 2),
	// every copy with the same event id.
	DuplicateWebhooks *Count `json:"duplicate_webhooks,omitempty"`
	// ReorderWebhooks holds back a payment's first notification for
	// ReorderWindowMS, so that a later one (e.g. refund.succeeded) emitted
	// meanwhile is delivered first.
	ReorderWebhooks *bool `json:"reorder_webhooks,omitempty"`
	// ReorderWindowMS is how long ReorderWebhooks holds a notification back
	// (default Options.ReorderWindow).
	ReorderWindowMS *int64 `json:"reorder_window_ms,omitempty"`
	// WebhookDelayMS delays every delivery of the payment's notifications.
	WebhookDelayMS *int64 `json:"webhook_delay_ms,omitempty"`
	// DropWebhooks records the notifications but never delivers them: the
	// result is only learnable with GET /v1/payments/{id}.
	DropWebhooks *bool `json:"drop_webhooks,omitempty"`
	// CreateTimeout stores the payment but never answers the create request
	// that made it: the handler hangs until the client gives up, then drops
	// the connection. A retry with the same Idempotency-Key is answered.
	CreateTimeout *bool `json:"create_timeout,omitempty"`
	// Decline makes the card decline whatever the buyer chooses.
	Decline *bool `json:"decline,omitempty"`
	// AutoOutcome ("succeed" or "decline") settles the payment by itself
	// AutoSettleMS after creation, without a browser.
	AutoOutcome *string `json:"auto_outcome,omitempty"`
	// AutoSettleMS is the delay of AutoOutcome (default 0: at once).
	AutoSettleMS *int64 `json:"auto_settle_ms,omitempty"`
	// FailRate (0..1) is the probability that a successful outcome is
	// declined by the issuer anyway.
	FailRate *float64 `json:"fail_rate,omitempty"`
}

// Count is a number of deliveries; JSON true means 2 and false means 1.
type Count int

// UnmarshalJSON accepts a boolean or a number.
func (c *Count) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*c = 2
		return nil
	case "false":
		*c = 1
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duplicate_webhooks: want a boolean or a count")
	}
	*c = Count(n)
	return nil
}

// parseFaults decodes and validates a fault object; empty input is no fault.
func parseFaults(raw []byte) (Faults, error) {
	var f Faults
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return f, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, err
	}
	return f, f.validate()
}

func (f Faults) validate() error {
	switch {
	case f.DuplicateWebhooks != nil && (*f.DuplicateWebhooks < 1 || *f.DuplicateWebhooks > 100):
		return fmt.Errorf("duplicate_webhooks: want 1..100")
	case f.AutoOutcome != nil && *f.AutoOutcome != "succeed" && *f.AutoOutcome != "decline":
		return fmt.Errorf("auto_outcome: want succeed or decline")
	case f.FailRate != nil && (*f.FailRate < 0 || *f.FailRate > 1):
		return fmt.Errorf("fail_rate: want 0..1")
	case negative(f.WebhookDelayMS), negative(f.AutoSettleMS), negative(f.ReorderWindowMS):
		return fmt.Errorf("delays must not be negative")
	}
	return nil
}

func negative(p *int64) bool { return p != nil && *p < 0 }

// over returns f with every field set in p replacing f's.
func (f Faults) over(p Faults) Faults {
	pick(&f.DuplicateWebhooks, p.DuplicateWebhooks)
	pick(&f.ReorderWebhooks, p.ReorderWebhooks)
	pick(&f.ReorderWindowMS, p.ReorderWindowMS)
	pick(&f.WebhookDelayMS, p.WebhookDelayMS)
	pick(&f.DropWebhooks, p.DropWebhooks)
	pick(&f.CreateTimeout, p.CreateTimeout)
	pick(&f.Decline, p.Decline)
	pick(&f.AutoOutcome, p.AutoOutcome)
	pick(&f.AutoSettleMS, p.AutoSettleMS)
	pick(&f.FailRate, p.FailRate)
	return f
}

func pick[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
