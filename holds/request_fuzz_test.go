package holds

import (
	"errors"
	"strings"
	"testing"

	"github.com/ticketing/ticketing/apperr"
)

// FuzzCreateRequest: whatever a client sends, validate either refuses it
// with BAD_USER_INPUT or accepts a hold of 1 to MaxQuantity units, each
// quantity in range (no overflow on the way to the SQL function's int32).
// The corpus is testdata/fuzz/FuzzCreateRequest; run with
// go test -fuzz FuzzCreateRequest ./holds/.
func FuzzCreateRequest(f *testing.F) {
	const ev = "0190a4b2-0000-7000-8000-000000000001"
	const sec = "0190a4b2-0000-7000-8000-000000000002"
	f.Add(ev, "k", "", 0, sec, 2, "", 0)
	f.Add(ev, "k", sec, 1<<62+1, sec, 1<<62+1, "0190a4b2-0000-7000-8000-000000000003", 1<<62+1)
	f.Add(ev, "a\x00b", "", 3, "", 0, "", 0)
	f.Add("x", "", "", -1, sec, -9223372036854775808, sec, 9223372036854775807)
	f.Fuzz(func(t *testing.T, eventID, key, seats string, best int, ga1 string, q1 int, ga2 string, q2 int) {
		req := CreateRequest{EventID: eventID, IdempotencyKey: key}
		if seats != "" {
			req.SeatIDs = strings.Split(seats, ",")
		}
		if best != 0 {
			req.BestAvailable = &BestAvailable{Quantity: best}
		}
		if ga1 != "" {
			req.GeneralAdmission = append(req.GeneralAdmission, GARequest{SectionID: ga1, Quantity: q1})
		}
		if ga2 != "" {
			req.GeneralAdmission = append(req.GeneralAdmission, GARequest{SectionID: ga2, Quantity: q2})
		}
		err := req.validate()
		if err != nil {
			var inv *apperr.InvalidInputError
			if !errors.As(err, &inv) || inv.Field == "" {
				t.Fatalf("refusal %v is not BAD_USER_INPUT naming a field", err)
			}
			return
		}
		n := req.quantity()
		if n < 1 || n > MaxQuantity {
			t.Fatalf("accepted a hold of %d units", n)
		}
		if b := req.BestAvailable; b != nil && (b.Quantity < 1 || b.Quantity > MaxQuantity) {
			t.Fatalf("accepted best-available quantity %d", b.Quantity)
		}
		for _, g := range req.GeneralAdmission {
			if g.Quantity < 1 || g.Quantity > MaxQuantity || int(int32(g.Quantity)) != g.Quantity {
				t.Fatalf("accepted GA quantity %d", g.Quantity)
			}
		}
		_ = req.hash()
	})
}
