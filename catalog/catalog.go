// Package catalog is the catalog domain: venues with sections and seats,
// artists, and events with their sale conditions and section prices.
// Creating an event creates its inventory (one row per seat and per GA unit)
// in the same transaction, ready for holds. Availability and the seat map are
// read from that inventory.
//
// The domain types are the store's rows (aliases), so that the catalog, its
// dataloaders and the other services share one shape without copying.
//
// Decisions:
//   - An event must start in the future when it is created (an event in the
//     past could never be sold); the sale may already be open.
//   - All prices of an event use one currency (a hold has one total), and
//     every section of the venue must have a price.
//   - Listings (ListEvents, EventsByArtist) show upcoming events only: those
//     starting at or after the service clock's now.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/store"
)

// Domain types: see the package comment.
type (
	// Venue is a place; Capacity sums its sections.
	Venue = store.Venue
	// Section is part of a venue, drawn inside its bounds (BoundsX/Y/W/H).
	Section = store.Section
	// Seat is one seat of a SEATED section; RowIndex 0 is the front row.
	Seat = store.Seat
	// Artist performs at events.
	Artist = store.Artist
	// Event is a catalog event with its sale conditions.
	Event = store.Event
	// Price is the price of one section for one event, in minor units.
	Price = store.Price
	// Availability counts an event's inventory by effective status.
	Availability = store.Availability
)

// SectionKind is SEATED or GENERAL_ADMISSION.
type SectionKind string

// Section kinds.
const (
	KindSeated           SectionKind = "SEATED"
	KindGeneralAdmission SectionKind = "GENERAL_ADMISSION"
)

// Seat and GA unit statuses of the inventory.
const (
	StatusAvailable = "AVAILABLE"
	StatusHeld      = "HELD"
	StatusSold      = "SOLD"
)

// Sale statuses (Event.saleStatus), as store.SaleStatus judges them.
const (
	SaleNotOnSaleYet = store.SaleNotOnSaleYet
	SaleOnSale       = store.SaleOnSale
	SaleSoldOut      = store.SaleSoldOut
	SaleEnded        = store.SaleEnded
)

// Rect is a box on the venue plan.
type Rect struct{ X, Y, Width, Height float64 }

// EventPage is one page of an event listing.
type EventPage struct {
	Events []Event
	// Cursors[i] is the cursor of Events[i].
	Cursors     []string
	HasNextPage bool
	TotalCount  int
}

// VenueInput creates a venue.
type VenueInput struct {
	// ID is optional: empty means a new UUIDv7 (set by the demo seeder for
	// deterministic ids).
	ID       string
	Name     string
	Address  string
	City     string
	Country  string
	Lat, Lon float64
	Sections []SectionInput
}

// SectionInput is one section of a new venue.
type SectionInput struct {
	Name string
	Kind SectionKind
	// Capacity of a GENERAL_ADMISSION section; ignored for SEATED.
	Capacity int
	// Rows of a SEATED section, front to back.
	Rows []RowInput
	// Layout is optional; see layoutVenue.
	Layout *Layout
}

// RowInput is one row of seats numbered 1..Seats.
type RowInput struct {
	Label string
	Seats int
}

// Layout places a section on the venue plan. Zero spacings mean the
// defaults; zero Width/Height of a GA area mean a size from its capacity.
type Layout struct {
	// X, Y: front-left corner (SEATED: the first seat of the front row).
	X, Y float64
	// Angle rotates the section around its corner, in degrees.
	Angle float64
	// Curve bends rows: their middle lies Curve units further from the stage.
	Curve       float64
	SeatSpacing float64
	RowSpacing  float64
	Width       float64
	Height      float64
}

// ArtistInput creates an artist.
type ArtistInput struct {
	// ID is optional, as in VenueInput.
	ID     string
	Name   string
	Bio    string
	Genres []string
}

// EventInput creates an event.
type EventInput struct {
	// ID is optional, as in VenueInput.
	ID                  string
	Name                string
	Description         string
	Category            string
	StartsAt            time.Time
	EndsAt              *time.Time
	VenueID             string
	ArtistIDs           []string
	SaleStartsAt        time.Time
	SaleEndsAt          *time.Time
	Prices              []PriceInput
	MaxTicketsPerUser   int
	HoldDurationSeconds int
	QueueRequired       bool
	RefundPolicy        string
	// RefundDeadline: requestRefund is allowed until then; nil: no
	// refunds on request.
	RefundDeadline *time.Time
}

// PriceInput is the price of one section.
type PriceInput struct {
	SectionID string
	Amount    int64
	Currency  string
}

// Service is the catalog.
type Service struct {
	st    *store.Store
	reads *store.Reads
	stale lastGood
	now   func() time.Time
	live  LiveCounts // nil: availability is counted in Postgres
}

// New returns the catalog service over st; now is the application clock.
func New(st *store.Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{st: st, reads: store.NewReads(st, nil, nil, nil), stale: lastGood{now: now}, now: now}
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// CreateVenue creates a venue with its sections and seats (admin only).
func (s *Service) CreateVenue(ctx context.Context, in VenueInput) (Venue, error) {
	if _, err := auth.RequireAdmin(ctx); err != nil {
		return Venue{}, fmt.Errorf("create venue: %w", err)
	}
	in = normalizeVenue(in)
	if err := validateVenue(in); err != nil {
		return Venue{}, fmt.Errorf("create venue: %w", err)
	}
	if in.ID == "" {
		in.ID = newID()
	}
	v := Venue{ID: in.ID, Name: in.Name, Address: in.Address, City: in.City, Country: in.Country, Lat: in.Lat, Lon: in.Lon}
	secs, seats := layoutVenue(v.ID, in.Sections, newID)
	for _, sec := range secs {
		v.Capacity += sec.Capacity
	}
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.VenueCreate(ctx, v); err != nil {
			return err
		}
		if err := tx.SectionsCreate(ctx, secs); err != nil {
			return err
		}
		return tx.SeatsCreate(ctx, seats)
	})
	if err != nil {
		return Venue{}, fmt.Errorf("create venue: %w", err)
	}
	return v, nil
}

// CreateArtist creates an artist (admin only). Names are unique, ignoring case.
func (s *Service) CreateArtist(ctx context.Context, in ArtistInput) (Artist, error) {
	if _, err := auth.RequireAdmin(ctx); err != nil {
		return Artist{}, fmt.Errorf("create artist: %w", err)
	}
	in = normalizeArtist(in)
	if err := validateArtist(in); err != nil {
		return Artist{}, fmt.Errorf("create artist: %w", err)
	}
	if in.ID == "" {
		in.ID = newID()
	}
	a := Artist{ID: in.ID, Name: in.Name, Bio: in.Bio, Genres: in.Genres}
	if err := s.st.ArtistCreate(ctx, a); err != nil {
		var c *store.ConflictError
		if errors.As(err, &c) && c.Constraint == "artists_name" {
			return Artist{}, fmt.Errorf("create artist: %w", apperr.Invalid("input.name", "an artist named %q already exists", in.Name))
		}
		return Artist{}, fmt.Errorf("create artist: %w", err)
	}
	return a, nil
}

// CreateEvent creates an event with its prices, artists and inventory, and
// records the change in the outbox, in one transaction (admin only).
func (s *Service) CreateEvent(ctx context.Context, in EventInput) (Event, error) {
	evs, err := s.CreateEvents(ctx, []EventInput{in})
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// CreateEvents creates events as CreateEvent does, all in one transaction
// with bulk inserts (the demo and benchmark seeders use it). An invalid
// input fails the whole batch; with more than one input the error names the
// failing event's index.
func (s *Service) CreateEvents(ctx context.Context, ins []EventInput) ([]Event, error) {
	return s.createEvents(ctx, ins, true)
}

// ImportEvents is CreateEvents for bulk loads (`seed --events`): the same
// validation, rows and inventory, but no outbox rows, so the relay does not
// replay a whole catalog; search indexes catch the events up by version
// (at start and periodically).
func (s *Service) ImportEvents(ctx context.Context, ins []EventInput) ([]Event, error) {
	return s.createEvents(ctx, ins, false)
}

func (s *Service) createEvents(ctx context.Context, ins []EventInput, announce bool) ([]Event, error) {
	if _, err := auth.RequireAdmin(ctx); err != nil {
		return nil, fmt.Errorf("create event: %w", err)
	}
	batchErr := func(i int, err error) error {
		if len(ins) == 1 {
			return fmt.Errorf("create event: %w", err)
		}
		return fmt.Errorf("create event %d (%s): %w", i, ins[i].Name, err)
	}
	ins = slices.Clone(ins)
	now := s.now()
	evs := make([]Event, len(ins))
	ids := make([]string, len(ins))
	versions := make([]int64, len(ins))
	var prices []Price
	var links []store.EventArtistLink
	venueIDs, artistIDs := map[string]bool{}, map[string]bool{}
	for i, in := range ins {
		in = normalizeEvent(in)
		if err := validateEvent(in, now); err != nil {
			return nil, batchErr(i, err)
		}
		if in.ID == "" {
			in.ID = newID()
		}
		ins[i] = in
		evs[i] = Event{
			ID: in.ID, VenueID: in.VenueID, Name: in.Name, Description: in.Description, Category: in.Category,
			StartsAt: in.StartsAt, EndsAt: in.EndsAt, SaleStartsAt: in.SaleStartsAt, SaleEndsAt: in.SaleEndsAt,
			MaxTicketsPerUser: in.MaxTicketsPerUser, HoldDurationSeconds: in.HoldDurationSeconds,
			QueueRequired: in.QueueRequired, RefundPolicy: in.RefundPolicy, RefundDeadline: in.RefundDeadline, Version: 1,
		}
		ids[i], versions[i] = in.ID, 1
		venueIDs[in.VenueID] = true
		for _, p := range in.Prices {
			prices = append(prices, Price{EventID: in.ID, SectionID: p.SectionID, Amount: p.Amount, Currency: p.Currency})
		}
		for j, a := range in.ArtistIDs {
			artistIDs[a] = true
			links = append(links, store.EventArtistLink{EventID: in.ID, ArtistID: a, Position: j + 1})
		}
	}
	err := s.st.InTx(ctx, func(tx *store.Store) error {
		refs, err := loadRefs(ctx, tx, keys(venueIDs), keys(artistIDs))
		if err != nil {
			return err
		}
		for i, in := range ins {
			if err := refs.check(in); err != nil {
				return batchErr(i, err)
			}
		}
		if err := tx.EventsCreate(ctx, evs); err != nil {
			return err
		}
		if err := tx.EventArtistLinksCreate(ctx, links); err != nil {
			return err
		}
		if err := tx.PricesCreate(ctx, prices); err != nil {
			return err
		}
		if _, err := tx.InventoryCreate(ctx, ids); err != nil {
			return err
		}
		if !announce {
			return nil
		}
		return tx.CatalogOutboxInsert(ctx, ids, versions)
	})
	if err != nil {
		var inv *apperr.InvalidInputError
		if errors.As(err, &inv) {
			return nil, err
		}
		return nil, fmt.Errorf("create event: %w", err)
	}
	return evs, nil
}

// eventRefs is what event validation needs from the database.
type eventRefs struct {
	venues   map[string]bool
	sections map[string][]Section
	artists  map[string]bool
}

func loadRefs(ctx context.Context, tx *store.Store, venueIDs, artistIDs []string) (eventRefs, error) {
	r := eventRefs{venues: map[string]bool{}, sections: map[string][]Section{}, artists: map[string]bool{}}
	venues, err := tx.VenuesByIDs(ctx, venueIDs)
	if err != nil {
		return r, err
	}
	for _, v := range venues {
		r.venues[v.ID] = true
	}
	secs, err := tx.SectionsByVenueIDs(ctx, venueIDs)
	if err != nil {
		return r, err
	}
	for _, sec := range secs {
		r.sections[sec.VenueID] = append(r.sections[sec.VenueID], sec)
	}
	if len(artistIDs) > 0 {
		artists, err := tx.ArtistsByIDs(ctx, artistIDs)
		if err != nil {
			return r, err
		}
		for _, a := range artists {
			r.artists[a.ID] = true
		}
	}
	return r, nil
}

// check validates the venue, the artists, and that the prices cover
// exactly the venue's sections.
func (r eventRefs) check(in EventInput) error {
	if !r.venues[in.VenueID] {
		return apperr.Invalid("input.venueId", "no venue %s", in.VenueID)
	}
	for i, id := range in.ArtistIDs {
		if !r.artists[id] {
			return apperr.Invalid(fmt.Sprintf("input.artistIds[%d]", i), "no artist %s", id)
		}
	}
	inVenue := map[string]bool{}
	for _, sec := range r.sections[in.VenueID] {
		inVenue[sec.ID] = true
	}
	priced := map[string]bool{}
	for i, p := range in.Prices {
		if !inVenue[p.SectionID] {
			return apperr.Invalid(fmt.Sprintf("input.prices[%d].sectionId", i), "section %s is not a section of the venue", p.SectionID)
		}
		priced[p.SectionID] = true
	}
	for _, sec := range r.sections[in.VenueID] {
		if !priced[sec.ID] {
			return apperr.Invalid("input.prices", "section %q has no price", sec.Name)
		}
	}
	return nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// GetEvent returns an event, or apperr.ErrNotFound.
func (s *Service) GetEvent(ctx context.Context, id string) (Event, error) {
	return getOne(ctx, id, "event", s.EventsByIDs)
}

// GetVenue returns a venue, or apperr.ErrNotFound.
func (s *Service) GetVenue(ctx context.Context, id string) (Venue, error) {
	return getOne(ctx, id, "venue", s.VenuesByIDs)
}

// GetArtist returns an artist, or apperr.ErrNotFound.
func (s *Service) GetArtist(ctx context.Context, id string) (Artist, error) {
	return getOne(ctx, id, "artist", s.ArtistsByIDs)
}

func getOne[T any](ctx context.Context, id, what string, batch func(context.Context, []string) (map[string]T, error)) (T, error) {
	m, err := batch(ctx, []string{id})
	if err != nil {
		var zero T
		return zero, fmt.Errorf("get %s: %w", what, err)
	}
	v, ok := m[id]
	if !ok {
		return v, fmt.Errorf("%s %s: %w", what, id, apperr.ErrNotFound)
	}
	return v, nil
}

// ListFilter selects a page of upcoming events.
type ListFilter struct {
	// First is the page size (default 20, at most 100).
	First int
	// After is the cursor of the last event of the previous page.
	After    string
	Category string
	City     string
}

// MaxPageSize bounds First of listings.
const MaxPageSize = 100

// ListEvents returns upcoming events, soonest first, optionally filtered by
// category and city.
func (s *Service) ListEvents(ctx context.Context, f ListFilter) (EventPage, error) {
	return s.page(ctx, store.EventFilter{From: s.now(), Category: f.Category, City: f.City}, f.First, f.After)
}

// EventsByArtist returns the upcoming events of an artist, soonest first.
func (s *Service) EventsByArtist(ctx context.Context, artistID string, first int, after string) (EventPage, error) {
	if !validUUID(artistID) {
		return EventPage{}, nil
	}
	return s.page(ctx, store.EventFilter{From: s.now(), ArtistID: artistID}, first, after)
}

func (s *Service) page(ctx context.Context, f store.EventFilter, first int, after string) (EventPage, error) {
	if first < 0 || first > MaxPageSize {
		return EventPage{}, apperr.Invalid("first", "must be between 0 and %d", MaxPageSize)
	}
	var cur *store.EventCursor
	if after != "" {
		c, err := decodeCursor(after)
		if err != nil {
			return EventPage{}, apperr.Invalid("after", "not a cursor of this listing")
		}
		cur = &c
	}
	// The last good page of the same listing answers while Postgres is
	// unreachable (StaleFor); From, the clock, is not part of the key.
	key := fmt.Sprintf("%s|%s|%s|%d|%s", f.Category, f.City, f.ArtistID, first, after)
	p, err := store.ReadCatalog(s.reads, func(st *store.Store) (EventPage, error) { return loadPage(ctx, st, f, cur, first) })
	if err != nil {
		if fallback(err) {
			if m, ok := staleMap[EventPage](&s.stale, "page", []string{key}); ok {
				return m[key], nil
			}
		}
		return EventPage{}, fmt.Errorf("list events: %w", err)
	}
	s.stale.put("page", key, p)
	return p, nil
}

func loadPage(ctx context.Context, st *store.Store, f store.EventFilter, cur *store.EventCursor, first int) (EventPage, error) {
	total, err := st.EventsCount(ctx, f)
	if err != nil {
		return EventPage{}, err
	}
	p := EventPage{TotalCount: total, Events: []Event{}, Cursors: []string{}}
	if first == 0 {
		return p, nil
	}
	evs, err := st.EventsList(ctx, f, cur, first+1)
	if err != nil {
		return EventPage{}, err
	}
	if len(evs) > first {
		evs, p.HasNextPage = evs[:first], true
	}
	p.Events = evs
	for _, e := range evs {
		p.Cursors = append(p.Cursors, encodeCursor(store.EventCursor{StartsAt: e.StartsAt, ID: e.ID}))
	}
	return p, nil
}

// Availability counts the event's inventory: a HELD row past its expiry
// counts as available.
func (s *Service) Availability(ctx context.Context, eventID string) (Availability, error) {
	m, err := s.AvailabilityByEventIDs(ctx, []string{eventID})
	if err != nil {
		return Availability{}, err
	}
	return m[eventID], nil
}

// SaleStatus judges where the sale of e stands now, given its availability.
func (s *Service) SaleStatus(e Event, a Availability) string {
	return store.SaleStatus(s.now(), e.SaleStartsAt, e.SaleEndsAt, e.CancelledAt, a.Capacity, a.Available)
}
