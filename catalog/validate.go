package catalog

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/ticketing/ticketing/apperr"
)

// Limits of catalog input.
const (
	maxNameLen        = 200
	maxTextLen        = 5000
	maxSections       = 200
	maxRowsPerSection = 200
	maxSeatsPerRow    = 500
	maxVenueCapacity  = 200_000
	maxGenres         = 20
	maxArtists        = 50
	maxTicketsLimit   = 100
	maxHoldSeconds    = 3600
)

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

func normalizeVenue(in VenueInput) VenueInput {
	in.Name, in.Address = strings.TrimSpace(in.Name), strings.TrimSpace(in.Address)
	in.City, in.Country = strings.TrimSpace(in.City), strings.TrimSpace(in.Country)
	secs := make([]SectionInput, len(in.Sections))
	for i, s := range in.Sections {
		s.Name = strings.TrimSpace(s.Name)
		rows := make([]RowInput, len(s.Rows))
		for j, r := range s.Rows {
			r.Label = strings.TrimSpace(r.Label)
			rows[j] = r
		}
		s.Rows = rows
		secs[i] = s
	}
	in.Sections = secs
	return in
}

func normalizeArtist(in ArtistInput) ArtistInput {
	in.Name, in.Bio = strings.TrimSpace(in.Name), strings.TrimSpace(in.Bio)
	genres := make([]string, len(in.Genres))
	for i, g := range in.Genres {
		genres[i] = strings.TrimSpace(g)
	}
	in.Genres = genres
	return in
}

func normalizeEvent(in EventInput) EventInput {
	in.Name, in.Description = strings.TrimSpace(in.Name), strings.TrimSpace(in.Description)
	in.Category = strings.ToLower(strings.TrimSpace(in.Category))
	in.RefundPolicy = strings.TrimSpace(in.RefundPolicy)
	in.VenueID = strings.TrimSpace(in.VenueID)
	return in
}

func checkText(field, v string, required bool, maxLen int) error {
	if required && v == "" {
		return apperr.Invalid(field, "must not be empty")
	}
	if len([]rune(v)) > maxLen {
		return apperr.Invalid(field, "at most %d characters", maxLen)
	}
	return nil
}

func finite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

func validateVenue(in VenueInput) error {
	if in.ID != "" && !validUUID(in.ID) {
		return apperr.Invalid("input.id", "not a UUID")
	}
	for _, c := range []struct {
		field, v string
	}{{"input.name", in.Name}, {"input.address", in.Address}, {"input.city", in.City}, {"input.country", in.Country}} {
		if err := checkText(c.field, c.v, true, maxNameLen); err != nil {
			return err
		}
	}
	if !finite(in.Lat) || in.Lat < -90 || in.Lat > 90 {
		return apperr.Invalid("input.location.lat", "must be between -90 and 90")
	}
	if !finite(in.Lon) || in.Lon < -180 || in.Lon > 180 {
		return apperr.Invalid("input.location.lon", "must be between -180 and 180")
	}
	if len(in.Sections) == 0 {
		return apperr.Invalid("input.sections", "a venue needs at least one section")
	}
	if len(in.Sections) > maxSections {
		return apperr.Invalid("input.sections", "at most %d sections", maxSections)
	}
	names := map[string]bool{}
	total := 0
	for i, s := range in.Sections {
		f := fmt.Sprintf("input.sections[%d]", i)
		if err := checkText(f+".name", s.Name, true, maxNameLen); err != nil {
			return err
		}
		if names[s.Name] {
			return apperr.Invalid(f+".name", "section name %q is used twice", s.Name)
		}
		names[s.Name] = true
		n, err := validateSection(f, s)
		if err != nil {
			return err
		}
		total += n
	}
	if total > maxVenueCapacity {
		return apperr.Invalid("input.sections", "total capacity %d exceeds %d", total, maxVenueCapacity)
	}
	return nil
}

// validateSection checks one section and returns its capacity.
func validateSection(f string, s SectionInput) (int, error) {
	if l := s.Layout; l != nil {
		switch {
		case !finite(l.X, l.Y, l.Angle, l.Curve, l.SeatSpacing, l.RowSpacing, l.Width, l.Height):
			return 0, apperr.Invalid(f+".layout", "numbers must be finite")
		case l.SeatSpacing < 0:
			return 0, apperr.Invalid(f+".layout.seatSpacing", "must be positive")
		case l.RowSpacing < 0:
			return 0, apperr.Invalid(f+".layout.rowSpacing", "must be positive")
		case l.Width < 0:
			return 0, apperr.Invalid(f+".layout.width", "must be positive")
		case l.Height < 0:
			return 0, apperr.Invalid(f+".layout.height", "must be positive")
		}
	}
	switch s.Kind {
	case KindGeneralAdmission:
		if len(s.Rows) > 0 {
			return 0, apperr.Invalid(f+".rows", "a GENERAL_ADMISSION section has no rows")
		}
		if s.Capacity <= 0 || s.Capacity > maxVenueCapacity {
			return 0, apperr.Invalid(f+".capacity", "must be between 1 and %d", maxVenueCapacity)
		}
		return s.Capacity, nil
	case KindSeated:
		if len(s.Rows) == 0 {
			return 0, apperr.Invalid(f+".rows", "a SEATED section needs at least one row")
		}
		if len(s.Rows) > maxRowsPerSection {
			return 0, apperr.Invalid(f+".rows", "at most %d rows", maxRowsPerSection)
		}
		labels := map[string]bool{}
		n := 0
		for j, r := range s.Rows {
			rf := fmt.Sprintf("%s.rows[%d]", f, j)
			if err := checkText(rf+".label", r.Label, true, 20); err != nil {
				return 0, err
			}
			if labels[r.Label] {
				return 0, apperr.Invalid(rf+".label", "row label %q is used twice", r.Label)
			}
			labels[r.Label] = true
			if r.Seats < 1 || r.Seats > maxSeatsPerRow {
				return 0, apperr.Invalid(rf+".seats", "must be between 1 and %d", maxSeatsPerRow)
			}
			n += r.Seats
		}
		return n, nil
	default:
		return 0, apperr.Invalid(f+".kind", "must be SEATED or GENERAL_ADMISSION")
	}
}

func validateArtist(in ArtistInput) error {
	if in.ID != "" && !validUUID(in.ID) {
		return apperr.Invalid("input.id", "not a UUID")
	}
	if err := checkText("input.name", in.Name, true, maxNameLen); err != nil {
		return err
	}
	if err := checkText("input.bio", in.Bio, false, maxTextLen); err != nil {
		return err
	}
	if len(in.Genres) > maxGenres {
		return apperr.Invalid("input.genres", "at most %d genres", maxGenres)
	}
	for i, g := range in.Genres {
		if err := checkText(fmt.Sprintf("input.genres[%d]", i), g, true, 50); err != nil {
			return err
		}
	}
	return nil
}

// validateEvent checks what needs no database; checkEventRefs does the rest.
func validateEvent(in EventInput, now time.Time) error {
	if in.ID != "" && !validUUID(in.ID) {
		return apperr.Invalid("input.id", "not a UUID")
	}
	if err := checkText("input.name", in.Name, true, maxNameLen); err != nil {
		return err
	}
	if err := checkText("input.description", in.Description, false, maxTextLen); err != nil {
		return err
	}
	if err := checkText("input.category", in.Category, true, 50); err != nil {
		return err
	}
	if in.StartsAt.IsZero() || !in.StartsAt.After(now) {
		return apperr.Invalid("input.startsAt", "must be in the future")
	}
	if in.EndsAt != nil && !in.EndsAt.After(in.StartsAt) {
		return apperr.Invalid("input.endsAt", "must be after startsAt")
	}
	if !validUUID(in.VenueID) {
		return apperr.Invalid("input.venueId", "not a venue id")
	}
	if len(in.ArtistIDs) > maxArtists {
		return apperr.Invalid("input.artistIds", "at most %d artists", maxArtists)
	}
	seen := map[string]bool{}
	for i, id := range in.ArtistIDs {
		f := fmt.Sprintf("input.artistIds[%d]", i)
		if !validUUID(id) {
			return apperr.Invalid(f, "not an artist id")
		}
		if seen[id] {
			return apperr.Invalid(f, "artist listed twice")
		}
		seen[id] = true
	}
	if in.SaleStartsAt.IsZero() {
		return apperr.Invalid("input.saleStartsAt", "required")
	}
	if !in.SaleStartsAt.Before(in.StartsAt) {
		return apperr.Invalid("input.saleStartsAt", "must be before startsAt")
	}
	if in.SaleEndsAt != nil && !in.SaleEndsAt.After(in.SaleStartsAt) {
		return apperr.Invalid("input.saleEndsAt", "must be after saleStartsAt")
	}
	if len(in.Prices) == 0 {
		return apperr.Invalid("input.prices", "every section needs a price")
	}
	sections := map[string]bool{}
	for i, p := range in.Prices {
		f := fmt.Sprintf("input.prices[%d]", i)
		if !validUUID(p.SectionID) {
			return apperr.Invalid(f+".sectionId", "not a section id")
		}
		if sections[p.SectionID] {
			return apperr.Invalid(f+".sectionId", "section priced twice")
		}
		sections[p.SectionID] = true
		if p.Amount < 0 {
			return apperr.Invalid(f+".amount", "must not be negative")
		}
		if !currencyRE.MatchString(p.Currency) {
			return apperr.Invalid(f+".currency", "must be an ISO 4217 code such as EUR")
		}
		if p.Currency != in.Prices[0].Currency {
			return apperr.Invalid(f+".currency", "all prices of an event use one currency (%s)", in.Prices[0].Currency)
		}
	}
	if in.MaxTicketsPerUser < 1 || in.MaxTicketsPerUser > maxTicketsLimit {
		return apperr.Invalid("input.maxTicketsPerUser", "must be between 1 and %d", maxTicketsLimit)
	}
	if in.HoldDurationSeconds < 1 || in.HoldDurationSeconds > maxHoldSeconds {
		return apperr.Invalid("input.holdDurationSeconds", "must be between 1 and %d", maxHoldSeconds)
	}
	return checkText("input.refundPolicy", in.RefundPolicy, false, maxTextLen)
}
