package holds

import (
	"crypto/sha256"
	"encoding/json"
	"slices"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/apperr"
)

// MaxQuantity bounds the number of units one request may ask for (the
// event's maxTicketsPerUser is the real limit).
const MaxQuantity = 100

// CreateRequest asks for a hold of explicit seats, the best available seats
// and general-admission units of one event, in any mix.
type CreateRequest struct {
	EventID          string
	SeatIDs          []string
	BestAvailable    *BestAvailable
	GeneralAdmission []GARequest
	// IdempotencyKey is required: a retry with the same key and arguments
	// returns the first result.
	IdempotencyKey string
	// AdmissionToken is the virtual-queue admission, required when the
	// event has queue_required.
	AdmissionToken string
}

// BestAvailable lets the server pick Quantity seats: the best run of
// adjacent seats in one row when Adjacent, else the best seats anywhere.
type BestAvailable struct {
	Quantity  int
	SectionID string // optional
	Adjacent  bool
}

// NewBestAvailable is the request's bestAvailable as a client gives it:
// adjacent is true unless the client says false (the contract's default).
func NewBestAvailable(quantity int, sectionID string, adjacent *bool) *BestAvailable {
	return &BestAvailable{Quantity: quantity, SectionID: sectionID, Adjacent: adjacent == nil || *adjacent}
}

// GARequest is a quantity of general-admission units of a section.
type GARequest struct {
	SectionID string
	Quantity  int
}

// quantity is the number of units the request holds.
func (r CreateRequest) quantity() int {
	n := len(r.SeatIDs)
	if r.BestAvailable != nil {
		n += r.BestAvailable.Quantity
	}
	for _, g := range r.GeneralAdmission {
		n += g.Quantity
	}
	return n
}

func validUUID(s string) bool { _, err := uuid.Parse(s); return err == nil }

// validate checks the shape of the request (BAD_USER_INPUT naming the field).
func (r CreateRequest) validate() error {
	if !validUUID(r.EventID) {
		return apperr.Invalid("input.eventId", "not a valid id")
	}
	if err := apperr.CheckIdempotencyKey("input.idempotencyKey", r.IdempotencyKey); err != nil {
		return err
	}
	if len(r.SeatIDs) > MaxQuantity || len(r.GeneralAdmission) > MaxQuantity {
		return apperr.Invalid("input", "at most %d units per hold", MaxQuantity)
	}
	if len(r.SeatIDs) == 0 && r.BestAvailable == nil && len(r.GeneralAdmission) == 0 {
		return apperr.Invalid("input.seatIds", "give seatIds, bestAvailable or generalAdmission")
	}
	seen := map[string]bool{}
	for _, s := range r.SeatIDs {
		if !validUUID(s) {
			return apperr.Invalid("input.seatIds", "%q is not a valid id", s)
		}
		if seen[s] {
			return apperr.Invalid("input.seatIds", "seat %s is listed twice", s)
		}
		seen[s] = true
	}
	if b := r.BestAvailable; b != nil {
		if b.Quantity < 1 || b.Quantity > MaxQuantity {
			return apperr.Invalid("input.bestAvailable.quantity", "must be 1 to %d", MaxQuantity)
		}
		if b.SectionID != "" && !validUUID(b.SectionID) {
			return apperr.Invalid("input.bestAvailable.sectionId", "not a valid id")
		}
	}
	sections := map[string]bool{}
	for _, g := range r.GeneralAdmission {
		if !validUUID(g.SectionID) {
			return apperr.Invalid("input.generalAdmission.sectionId", "not a valid id")
		}
		if sections[g.SectionID] {
			return apperr.Invalid("input.generalAdmission.sectionId", "section %s is listed twice", g.SectionID)
		}
		sections[g.SectionID] = true
		// Each quantity is bounded before any sum (no overflow, nor a
		// truncation to the int32 of the SQL function).
		if g.Quantity < 1 || g.Quantity > MaxQuantity {
			return apperr.Invalid("input.generalAdmission.quantity", "must be 1 to %d", MaxQuantity)
		}
	}
	if r.quantity() > MaxQuantity {
		return apperr.Invalid("input", "at most %d units per hold", MaxQuantity)
	}
	return nil
}

// hash is the sha256 of the canonical arguments: the event, the sorted seat
// ids, best-available and the GA quantities sorted by section. The key and
// the admission token are not arguments (a retry may carry a fresh token).
func (r CreateRequest) hash() []byte {
	seats := slices.Clone(r.SeatIDs)
	slices.Sort(seats)
	ga := slices.Clone(r.GeneralAdmission)
	slices.SortFunc(ga, func(a, b GARequest) int {
		if a.SectionID < b.SectionID {
			return -1
		}
		if a.SectionID > b.SectionID {
			return 1
		}
		return 0
	})
	b, _ := json.Marshal(struct {
		E string
		S []string
		B *BestAvailable
		G []GARequest
	}{r.EventID, seats, r.BestAvailable, ga})
	sum := sha256.Sum256(b)
	return sum[:]
}
