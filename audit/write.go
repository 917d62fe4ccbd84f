package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/ticketing/ticketing/payments"
	"github.com/ticketing/ticketing/store"
)

// WriteOptions choose what the detail shows.
type WriteOptions struct {
	// AnomaliesOnly leaves out the seats and payments: the summary and the
	// anomalies only.
	AnomaliesOnly bool
	// AllSeats lists the free seats and units too (by default they are
	// only counted: an arena has thousands).
	AllSeats bool
}

// Write prints the report for people: the outcome and the summary first,
// then the anomalies, then the seats held or sold and the payments.
func (r Report) Write(w io.Writer, o WriteOptions) {
	s := r.Summary()
	fmt.Fprintf(w, "event %s: %s\n", r.EventID, r.headline())
	fmt.Fprintf(w, "\nsummary:\n  seats and units: %d (%s)\n", len(r.Units), counts(s.Seats, []string{"AVAILABLE", "HELD", "SOLD"}))
	fmt.Fprintf(w, "  payments: %d (%s)\n", len(r.Payments), counts(s.Payments, []string{"SUCCEEDED", "PENDING", "UNKNOWN", "FAILED", "CANCELLED", "REFUND_PENDING", "REFUNDED"}))
	for _, m := range s.Money {
		c := m.Currency
		fmt.Fprintf(w, "  money %s: taken %s, refunded %s, refund pending %s, kept %s; outcome not known yet %s\n", c,
			decimal(m.Taken, c), decimal(m.Refunded, c), decimal(m.RefundPending, c), decimal(m.Kept, c), decimal(m.Pending, c))
	}
	switch {
	case !r.ProviderAsked:
		fmt.Fprintln(w, "  provider: not asked")
	default:
		fmt.Fprintf(w, "  provider: asked about %d payments, %d unanswered\n", r.asked(), len(r.Unchecked))
	}
	if len(r.Unchecked) > 0 {
		fmt.Fprintf(w, "\nnot checked (%d):\n", len(r.Unchecked))
		for _, u := range r.Unchecked {
			fmt.Fprintf(w, "  %s\n", u)
		}
	}
	fmt.Fprintf(w, "\nanomalies (%d):\n", len(r.Anomalies))
	for _, a := range r.Anomalies {
		fmt.Fprintf(w, "  %s: %s\n", a.Kind, a.Detail)
	}
	if o.AnomaliesOnly {
		return
	}
	shown := r.units(o.AllSeats)
	if o.AllSeats {
		fmt.Fprintf(w, "\nseats and units (%d):\n", len(shown))
	} else {
		fmt.Fprintf(w, "\nseats and units held or sold, or with an order (%d of %d; --all-seats lists the free ones too):\n", len(shown), len(r.Units))
	}
	for _, u := range shown {
		what := deref(u.SeatLabel, "")
		if u.UnitNo != nil {
			what = fmt.Sprintf("GA #%d", *u.UnitNo)
		}
		fmt.Fprintf(w, "  %-14s %-10s %-9s", u.SectionName, what, u.Status)
		if u.Status != "AVAILABLE" {
			fmt.Fprintf(w, " owner=%s hold=%s", deref(u.Owner, "-"), deref(u.HoldID, "-"))
		}
		if u.OrderID != nil {
			fmt.Fprintf(w, " order=%s(%s)", *u.OrderID, deref(u.OrderStatus, ""))
		}
		if u.PaymentID != nil {
			fmt.Fprintf(w, " payment=%s", *u.PaymentID)
		}
		if u.TicketID != nil {
			fmt.Fprintf(w, " ticket=%s(%s)", *u.TicketID, deref(u.TicketStatus, ""))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\npayments (%d):\n", len(r.Payments))
	for _, p := range r.Payments {
		provider := p.ProviderStatus
		if p.ProviderError != "" {
			provider = "unanswered"
		}
		fmt.Fprintf(w, "  %s order=%s(%s) owner=%s attempt=%d %s ours=%s provider=%s ref=%s last=%q\n",
			p.ID, p.OrderID, p.OrderStatus, p.Owner, p.Attempt, Amount(p.Amount, p.Currency), p.Status,
			orDash(provider), deref(p.ProviderRef, "-"), p.LastReason)
	}
}

// headline is the report's first line: its outcome in words.
func (r Report) headline() string {
	switch r.Outcome() {
	case Incomplete:
		return fmt.Sprintf("INCOMPLETE: %d not checked, %d anomalies among the rest", len(r.Unchecked), len(r.Anomalies))
	case Anomalous:
		return fmt.Sprintf("%d ANOMALIES", len(r.Anomalies))
	default:
		if !r.ProviderAsked {
			return "clean (the provider was not asked)"
		}
		return "clean"
	}
}

func (r Report) asked() int {
	n := 0
	for _, p := range r.Payments {
		if p.ProviderStatus != "" || p.ProviderError != "" {
			n++
		}
	}
	return n
}

// units are the units the detail lists: by default only those held, sold
// or with an order (a free seat says nothing but "free").
func (r Report) units(all bool) []store.AuditUnit {
	if all {
		return r.Units
	}
	var out []store.AuditUnit
	for _, u := range r.Units {
		if u.Status != "AVAILABLE" || u.OrderID != nil || u.TicketID != nil {
			out = append(out, u)
		}
	}
	return out
}

// WriteJSON writes the report as one JSON document: outcome, summary,
// unchecked, anomalies and (unless AnomaliesOnly) units and payments.
func (r Report) WriteJSON(w io.Writer, o WriteOptions) error {
	type unit struct {
		Section      string  `json:"section"`
		SectionID    string  `json:"sectionId"`
		SeatID       *string `json:"seatId,omitempty"`
		Seat         *string `json:"seat,omitempty"`
		Unit         *int    `json:"unit,omitempty"`
		Status       string  `json:"status"`
		Owner        *string `json:"owner,omitempty"`
		HoldID       *string `json:"holdId,omitempty"`
		ExpiresAt    *string `json:"expiresAt,omitempty"`
		OrderID      *string `json:"orderId,omitempty"`
		OrderStatus  *string `json:"orderStatus,omitempty"`
		PaymentID    *string `json:"paymentId,omitempty"`
		TicketID     *string `json:"ticketId,omitempty"`
		TicketStatus *string `json:"ticketStatus,omitempty"`
	}
	type payment struct {
		ID             string `json:"id"`
		OrderID        string `json:"orderId"`
		OrderStatus    string `json:"orderStatus"`
		Owner          string `json:"owner"`
		Attempt        int    `json:"attempt"`
		Status         string `json:"status"`
		Amount         int64  `json:"amount"`
		Currency       string `json:"currency"`
		ProviderRef    string `json:"providerRef,omitempty"`
		ProviderStatus string `json:"providerStatus,omitempty"`
		ProviderError  string `json:"providerError,omitempty"`
		LastReason     string `json:"lastReason,omitempty"`
		CreatedAt      string `json:"createdAt"`
		UpdatedAt      string `json:"updatedAt"`
	}
	doc := struct {
		EventID       string    `json:"eventId"`
		Outcome       Outcome   `json:"outcome"`
		ProviderAsked bool      `json:"providerAsked"`
		Summary       Summary   `json:"summary"`
		Unchecked     []string  `json:"unchecked"`
		Anomalies     []Anomaly `json:"anomalies"`
		Units         []unit    `json:"units,omitempty"`
		Payments      []payment `json:"payments,omitempty"`
	}{EventID: r.EventID, Outcome: r.Outcome(), ProviderAsked: r.ProviderAsked, Summary: r.Summary(),
		Unchecked: nonNil(r.Unchecked), Anomalies: nonNil(r.Anomalies)}
	if !o.AnomaliesOnly {
		doc.Units = []unit{}
		for _, u := range r.units(o.AllSeats) {
			var exp *string
			if u.ExpiresAt != nil {
				s := u.ExpiresAt.UTC().Format(time.RFC3339)
				exp = &s
			}
			doc.Units = append(doc.Units, unit{u.SectionName, u.SectionID, u.SeatID, u.SeatLabel, u.UnitNo, u.Status, u.Owner,
				u.HoldID, exp, u.OrderID, u.OrderStatus, u.PaymentID, u.TicketID, u.TicketStatus})
		}
		doc.Payments = []payment{}
		for _, p := range r.Payments {
			doc.Payments = append(doc.Payments, payment{p.ID, p.OrderID, p.OrderStatus, p.Owner, p.Attempt, p.Status, p.Amount,
				p.Currency, deref(p.ProviderRef, ""), p.ProviderStatus, p.ProviderError, p.LastReason,
				p.CreatedAt.UTC().Format(time.RFC3339), p.UpdatedAt.UTC().Format(time.RFC3339)})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// Amount formats minor units in the currency's ISO 4217 exponent: "450.00 EUR".
func Amount(minor int64, currency string) string {
	return decimal(minor, currency) + " " + currency
}

// decimal is minor units as a decimal number of major units: "450.00".
func decimal(minor int64, currency string) string {
	exp := payments.MinorUnits(currency)
	if exp == 0 {
		return fmt.Sprint(minor)
	}
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	unit := int64(1)
	for range exp {
		unit *= 10
	}
	return fmt.Sprintf("%s%d.%0*d", sign, minor/unit, exp, minor%unit)
}

// counts is "AVAILABLE 10, SOLD 2" in the given order, then any other key.
func counts(m map[string]int, order []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		seen[k] = true
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
