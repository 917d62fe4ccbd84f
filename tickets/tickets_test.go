package tickets_test

import (
	"errors"
	"testing"

	"github.com/ticketing/ticketing/tickets"
)

func TestSignVerify(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	c := tickets.Claims{TicketID: "t1", EventID: "e1", Item: tickets.GAItem("s1", 3)}
	code := tickets.Sign(key, c)
	got, err := tickets.Verify(code, key)
	if err != nil || got != c {
		t.Fatalf("verify: %v %+v", err, got)
	}
	if _, err := tickets.Verify(code, []byte("another key another key another")); !errors.Is(err, tickets.ErrInvalidCode) {
		t.Fatalf("wrong key accepted: %v", err)
	}
	forged := tickets.Sign(key, tickets.Claims{TicketID: "t1", EventID: "e1", Item: tickets.SeatItem("x")})
	bad := forged[:len(forged)-2] + "AA"
	if _, err := tickets.Verify(bad, key); !errors.Is(err, tickets.ErrInvalidCode) {
		t.Fatalf("tampered accepted: %v", err)
	}
	for _, s := range []string{"", "T1.", "T1.x", "X1.a.b"} {
		if _, err := tickets.Verify(s, key); !errors.Is(err, tickets.ErrInvalidCode) {
			t.Fatalf("%q accepted", s)
		}
	}
}
