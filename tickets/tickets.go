// Package tickets signs and verifies ticket entry codes. A code carries the
// ticket id, the event and the seat (or GA unit) it admits to, and an
// HMAC-SHA256 over them with TICKET_SIGNING_KEY, so a gate can verify it
// offline with the key alone.
//
// Format: "T1." + base64url(ticketID "|" eventID "|" item) + "." + base64url(mac),
// where item is "seat:<seatID>" or "ga:<sectionID>:<unitNo>".
package tickets

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Claims is what a code admits to.
type Claims struct {
	TicketID string
	EventID  string
	// Item is "seat:<seatID>" or "ga:<sectionID>:<unitNo>".
	Item string
}

// SeatItem names a seat.
func SeatItem(seatID string) string { return "seat:" + seatID }

// GAItem names a general-admission unit.
func GAItem(sectionID string, unit int) string { return fmt.Sprintf("ga:%s:%d", sectionID, unit) }

// ErrInvalidCode reports a malformed, tampered or wrongly signed code.
var ErrInvalidCode = errors.New("tickets: invalid code")

const prefix = "T1."

var b64 = base64.RawURLEncoding

func mac(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(prefix))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Sign returns the entry code of c signed with key.
func Sign(key []byte, c Claims) string {
	payload := c.TicketID + "|" + c.EventID + "|" + c.Item
	return prefix + b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(mac(key, payload))
}

// Verify checks code against key (in constant time) and returns its claims.
// Errors wrap ErrInvalidCode.
func Verify(code string, key []byte) (Claims, error) {
	rest, ok := strings.CutPrefix(code, prefix)
	if !ok {
		return Claims{}, fmt.Errorf("%w: unknown format", ErrInvalidCode)
	}
	p, s, ok := strings.Cut(rest, ".")
	if !ok {
		return Claims{}, fmt.Errorf("%w: malformed", ErrInvalidCode)
	}
	payload, err1 := b64.DecodeString(p)
	sig, err2 := b64.DecodeString(s)
	if err1 != nil || err2 != nil {
		return Claims{}, fmt.Errorf("%w: malformed", ErrInvalidCode)
	}
	if !hmac.Equal(sig, mac(key, string(payload))) {
		return Claims{}, fmt.Errorf("%w: bad signature", ErrInvalidCode)
	}
	parts := strings.SplitN(string(payload), "|", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Claims{}, fmt.Errorf("%w: malformed claims", ErrInvalidCode)
	}
	return Claims{TicketID: parts[0], EventID: parts[1], Item: parts[2]}, nil
}
