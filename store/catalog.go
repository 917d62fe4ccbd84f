package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Venue is a row of venues; Capacity is the sum of its sections' capacities.
type Venue struct {
	ID       string  `db:"id"`
	Name     string  `db:"name"`
	Address  string  `db:"address"`
	City     string  `db:"city"`
	Country  string  `db:"country"`
	Lat      float64 `db:"lat"`
	Lon      float64 `db:"lon"`
	Capacity int     `db:"capacity"`
}

// Section is a row of sections with its drawing bounds.
type Section struct {
	ID       string  `db:"id"`
	VenueID  string  `db:"venue_id"`
	Position int     `db:"position"`
	Name     string  `db:"name"`
	Kind     string  `db:"kind"`
	Capacity int     `db:"capacity"`
	BoundsX  float64 `db:"bounds_x"`
	BoundsY  float64 `db:"bounds_y"`
	BoundsW  float64 `db:"bounds_w"`
	BoundsH  float64 `db:"bounds_h"`
}

// Seat is a row of seats.
type Seat struct {
	ID        string  `db:"id"`
	SectionID string  `db:"section_id"`
	RowLabel  string  `db:"row_label"`
	RowIndex  int     `db:"row_index"`
	Number    int     `db:"number"`
	X         float64 `db:"x"`
	Y         float64 `db:"y"`
}

// Artist is a row of artists.
type Artist struct {
	ID     string   `db:"id"`
	Name   string   `db:"name"`
	Bio    string   `db:"bio"`
	Genres []string `db:"genres"`
}

// EventArtist is an artist of an event, in billing order.
type EventArtist struct {
	EventID string `db:"event_id"`
	Artist
}

// Event is a row of events.
type Event struct {
	ID                  string     `db:"id"`
	VenueID             string     `db:"venue_id"`
	Name                string     `db:"name"`
	Description         string     `db:"description"`
	Category            string     `db:"category"`
	StartsAt            time.Time  `db:"starts_at"`
	EndsAt              *time.Time `db:"ends_at"`
	SaleStartsAt        time.Time  `db:"sale_starts_at"`
	SaleEndsAt          *time.Time `db:"sale_ends_at"`
	MaxTicketsPerUser   int        `db:"max_tickets_per_user"`
	HoldDurationSeconds int        `db:"hold_duration_seconds"`
	QueueRequired       bool       `db:"queue_required"`
	RefundPolicy        string     `db:"refund_policy"`
	RefundDeadline      *time.Time `db:"refund_deadline"`
	CancelledAt         *time.Time `db:"cancelled_at"`
	Version             int64      `db:"version"`
}

// Price is the price of one section for one event.
type Price struct {
	EventID   string `db:"event_id"`
	SectionID string `db:"section_id"`
	Amount    int64  `db:"amount"`
	Currency  string `db:"currency"`
}

// EventCursor is a position in the (starts_at, id) order of events.
type EventCursor struct {
	StartsAt time.Time
	ID       string
}

// EventFilter selects events for listings. Zero fields do not filter.
type EventFilter struct {
	// From: only events starting at or after it.
	From     time.Time
	Category string
	// City matches case- and accent-insensitively.
	City     string
	ArtistID string
}

// Availability counts an event's inventory by effective status.
type Availability struct {
	EventID   string `db:"event_id"`
	Available int    `db:"available"`
	Held      int    `db:"held"`
	Sold      int    `db:"sold"`
	Capacity  int    `db:"capacity"`
}

const (
	venueCols = `v.id, v.name, v.address, v.city, v.country, v.lat, v.lon,
	COALESCE((SELECT sum(s.capacity) FROM sections s WHERE s.venue_id = v.id), 0)::int AS capacity`
	sectionCols = `id, venue_id, position, name, kind, capacity, bounds_x, bounds_y, bounds_w, bounds_h`
	seatCols    = `id, section_id, row_label, row_index, number, x, y`
	artistCols  = `a.id, a.name, a.bio, a.genres`
	eventCols   = `e.id, e.venue_id, e.name, e.description, e.category, e.starts_at, e.ends_at,
	e.sale_starts_at, e.sale_ends_at, e.max_tickets_per_user, e.hold_duration_seconds,
	e.queue_required, e.refund_policy, e.refund_deadline, e.cancelled_at, e.version`

	sqlVenueInsert = `INSERT INTO venues (id, name, address, city, country, lat, lon)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	sqlVenuesByIDs        = `SELECT ` + venueCols + ` FROM venues v WHERE v.id = ANY($1::uuid[])`
	sqlSectionsByVenueIDs = `SELECT ` + sectionCols + ` FROM sections WHERE venue_id = ANY($1::uuid[]) ORDER BY venue_id, position`
	sqlSectionsByIDs      = `SELECT ` + sectionCols + ` FROM sections WHERE id = ANY($1::uuid[])`
	sqlSeatsBySectionIDs  = `SELECT ` + seatCols + ` FROM seats WHERE section_id = ANY($1::uuid[]) ORDER BY section_id, row_index, number`
	sqlSeatsByIDs         = `SELECT ` + seatCols + ` FROM seats WHERE id = ANY($1::uuid[])`

	sqlArtistInsert      = `INSERT INTO artists (id, name, bio, genres) VALUES ($1, $2, $3, $4)`
	sqlArtistsByIDs      = `SELECT ` + artistCols + ` FROM artists a WHERE a.id = ANY($1::uuid[])`
	sqlArtistsByEventIDs = `SELECT ea.event_id, ` + artistCols + `
FROM event_artists ea JOIN artists a ON a.id = ea.artist_id
WHERE ea.event_id = ANY($1::uuid[]) ORDER BY ea.event_id, ea.position`

	sqlEventInsert = `INSERT INTO events (id, venue_id, name, description, category, starts_at, ends_at,
	sale_starts_at, sale_ends_at, max_tickets_per_user, hold_duration_seconds, queue_required, refund_policy, version,
	refund_deadline)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	sqlEventArtistsInsert = `INSERT INTO event_artists (event_id, artist_id, position)
SELECT $1, t.artist_id, t.ord FROM unnest($2::uuid[]) WITH ORDINALITY AS t(artist_id, ord)`
	sqlEventsByIDs      = `SELECT ` + eventCols + ` FROM events e WHERE e.id = ANY($1::uuid[])`
	sqlPricesByEventIDs = `SELECT p.event_id, p.section_id, p.amount, p.currency
FROM event_prices p JOIN sections s ON s.id = p.section_id
WHERE p.event_id = ANY($1::uuid[]) ORDER BY p.event_id, s.position`

	// eventFilterWhere: $1 from, $2 category, $3 city, $4 artist id.
	eventFilterWhere = `
WHERE e.starts_at >= $1
  AND ($2::text = '' OR lower(e.category) = lower($2))
  AND ($3::text = '' OR lower(unaccent(v.city)) = lower(unaccent($3)))
  AND ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM event_artists ea WHERE ea.event_id = e.id AND ea.artist_id = $4))`
	sqlEventsList = `SELECT ` + eventCols + ` FROM events e JOIN venues v ON v.id = e.venue_id` + eventFilterWhere + `
  AND ($5::timestamptz IS NULL OR (e.starts_at, e.id) > ($5, $6::uuid))
ORDER BY e.starts_at, e.id LIMIT $7`
	sqlWarmEventIDs = `SELECT id::text FROM events
WHERE starts_at >= $1 AND cancelled_at IS NULL
ORDER BY event_sale_open(sale_starts_at, sale_ends_at) DESC, starts_at, id
LIMIT $2`
	sqlEventsCount = `SELECT count(*) FROM events e JOIN venues v ON v.id = e.venue_id` + eventFilterWhere

	// Inventory of new events: one row per seat, capacity rows per GA section.
	sqlInventoryInsertSeats = `INSERT INTO inventory (event_id, section_id, seat_id)
SELECT e.id, st.section_id, st.id
FROM events e JOIN sections s ON s.venue_id = e.venue_id JOIN seats st ON st.section_id = s.id
WHERE e.id = ANY($1::uuid[]) AND s.kind = 'SEATED'
ORDER BY e.id, s.position, st.row_index, st.number`
	sqlInventoryInsertGA = `INSERT INTO inventory (event_id, section_id, unit_no)
SELECT e.id, s.id, g.n
FROM events e JOIN sections s ON s.venue_id = e.venue_id, generate_series(1, s.capacity) AS g(n)
WHERE e.id = ANY($1::uuid[]) AND s.kind = 'GENERAL_ADMISSION'
ORDER BY e.id, s.position, g.n`

	// A HELD row whose expires_at has passed is available (database clock):
	// inventory_holdable and inventory_status, migrations/functions.
	sqlInventoryAvailability = `SELECT event_id,
	count(*) FILTER (WHERE inventory_holdable(status, expires_at))::int AS available,
	count(*) FILTER (WHERE inventory_status(status, expires_at) = 'HELD')::int AS held,
	count(*) FILTER (WHERE status = 'SOLD')::int AS sold,
	count(*)::int AS capacity
FROM inventory WHERE event_id = ANY($1::uuid[]) GROUP BY event_id`

	sqlCatalogOutboxInsert = `INSERT INTO outbox (event_id, topic, payload)
SELECT t.event_id, 'catalog', jsonb_build_object('eventId', t.event_id, 'version', t.version)
FROM unnest($1::uuid[], $2::bigint[]) AS t(event_id, version)`
)

// VenueCreate inserts a venue (its sections are inserted by SectionsCreate).
func (s *Store) VenueCreate(ctx context.Context, v Venue) error {
	_, err := s.db.Exec(ctx, sqlVenueInsert, v.ID, v.Name, v.Address, v.City, v.Country, v.Lat, v.Lon)
	return wrap("venue create", err)
}

// SectionsCreate inserts sections with COPY.
func (s *Store) SectionsCreate(ctx context.Context, secs []Section) error {
	_, err := s.db.CopyFrom(ctx, pgx.Identifier{"sections"},
		[]string{"id", "venue_id", "position", "name", "kind", "capacity", "bounds_x", "bounds_y", "bounds_w", "bounds_h"},
		pgx.CopyFromSlice(len(secs), func(i int) ([]any, error) {
			c := secs[i]
			return []any{c.ID, c.VenueID, c.Position, c.Name, c.Kind, c.Capacity, c.BoundsX, c.BoundsY, c.BoundsW, c.BoundsH}, nil
		}))
	return wrap("sections create", err)
}

// SeatsCreate inserts seats with COPY.
func (s *Store) SeatsCreate(ctx context.Context, seats []Seat) error {
	_, err := s.db.CopyFrom(ctx, pgx.Identifier{"seats"},
		[]string{"id", "section_id", "row_label", "row_index", "number", "x", "y"},
		pgx.CopyFromSlice(len(seats), func(i int) ([]any, error) {
			c := seats[i]
			return []any{c.ID, c.SectionID, c.RowLabel, c.RowIndex, c.Number, c.X, c.Y}, nil
		}))
	return wrap("seats create", err)
}

// VenuesByIDs returns the venues that exist among ids, in no particular order.
func (s *Store) VenuesByIDs(ctx context.Context, ids []string) ([]Venue, error) {
	return catalogRows[Venue](ctx, s, "venues by ids", sqlVenuesByIDs, ids)
}

// SectionsByVenueIDs returns the sections of the venues, by venue then position.
func (s *Store) SectionsByVenueIDs(ctx context.Context, venueIDs []string) ([]Section, error) {
	return catalogRows[Section](ctx, s, "sections by venue ids", sqlSectionsByVenueIDs, venueIDs)
}

// SectionsByIDs returns the sections that exist among ids.
func (s *Store) SectionsByIDs(ctx context.Context, ids []string) ([]Section, error) {
	return catalogRows[Section](ctx, s, "sections by ids", sqlSectionsByIDs, ids)
}

// SeatsBySectionIDs returns the seats of the sections, by section, row, number.
func (s *Store) SeatsBySectionIDs(ctx context.Context, sectionIDs []string) ([]Seat, error) {
	return catalogRows[Seat](ctx, s, "seats by section ids", sqlSeatsBySectionIDs, sectionIDs)
}

// SeatsByIDs returns the seats that exist among ids.
func (s *Store) SeatsByIDs(ctx context.Context, ids []string) ([]Seat, error) {
	return catalogRows[Seat](ctx, s, "seats by ids", sqlSeatsByIDs, ids)
}

// ArtistCreate inserts an artist; a duplicate name (case-insensitive) is a
// *ConflictError on "artists_name".
func (s *Store) ArtistCreate(ctx context.Context, a Artist) error {
	genres := a.Genres
	if genres == nil {
		genres = []string{}
	}
	_, err := s.db.Exec(ctx, sqlArtistInsert, a.ID, a.Name, a.Bio, genres)
	return wrap("artist create", err)
}

// ArtistsByIDs returns the artists that exist among ids.
func (s *Store) ArtistsByIDs(ctx context.Context, ids []string) ([]Artist, error) {
	return catalogRows[Artist](ctx, s, "artists by ids", sqlArtistsByIDs, ids)
}

// ArtistsByEventIDs returns the artists of the events, by event then billing order.
func (s *Store) ArtistsByEventIDs(ctx context.Context, eventIDs []string) ([]EventArtist, error) {
	return catalogRows[EventArtist](ctx, s, "artists by event ids", sqlArtistsByEventIDs, eventIDs)
}

// EventCreate inserts an event row.
func (s *Store) EventCreate(ctx context.Context, e Event) error {
	_, err := s.db.Exec(ctx, sqlEventInsert, e.ID, e.VenueID, e.Name, e.Description, e.Category,
		e.StartsAt, e.EndsAt, e.SaleStartsAt, e.SaleEndsAt, e.MaxTicketsPerUser,
		e.HoldDurationSeconds, e.QueueRequired, e.RefundPolicy, e.Version, e.RefundDeadline)
	return wrap("event create", err)
}

// EventsCreate inserts many event rows with COPY (bulk generation).
func (s *Store) EventsCreate(ctx context.Context, evs []Event) error {
	_, err := s.db.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"id", "venue_id", "name", "description", "category", "starts_at", "ends_at",
			"sale_starts_at", "sale_ends_at", "max_tickets_per_user", "hold_duration_seconds",
			"queue_required", "refund_policy", "version", "refund_deadline"},
		pgx.CopyFromSlice(len(evs), func(i int) ([]any, error) {
			e := evs[i]
			return []any{e.ID, e.VenueID, e.Name, e.Description, e.Category, e.StartsAt, e.EndsAt,
				e.SaleStartsAt, e.SaleEndsAt, e.MaxTicketsPerUser, e.HoldDurationSeconds,
				e.QueueRequired, e.RefundPolicy, e.Version, e.RefundDeadline}, nil
		}))
	return wrap("events create", err)
}

// EventArtistsCreate links artists to an event in billing order.
func (s *Store) EventArtistsCreate(ctx context.Context, eventID string, artistIDs []string) error {
	if len(artistIDs) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, sqlEventArtistsInsert, eventID, artistIDs)
	return wrap("event artists create", err)
}

// EventArtistLinksCreate links many (event, artist, position) with COPY.
func (s *Store) EventArtistLinksCreate(ctx context.Context, links []EventArtistLink) error {
	_, err := s.db.CopyFrom(ctx, pgx.Identifier{"event_artists"},
		[]string{"event_id", "artist_id", "position"},
		pgx.CopyFromSlice(len(links), func(i int) ([]any, error) {
			l := links[i]
			return []any{l.EventID, l.ArtistID, l.Position}, nil
		}))
	return wrap("event artists create", err)
}

// EventArtistLink is one row of event_artists.
type EventArtistLink struct {
	EventID  string
	ArtistID string
	Position int
}

// PricesCreate inserts section prices with COPY.
func (s *Store) PricesCreate(ctx context.Context, prices []Price) error {
	_, err := s.db.CopyFrom(ctx, pgx.Identifier{"event_prices"},
		[]string{"event_id", "section_id", "amount", "currency"},
		pgx.CopyFromSlice(len(prices), func(i int) ([]any, error) {
			p := prices[i]
			return []any{p.EventID, p.SectionID, p.Amount, p.Currency}, nil
		}))
	return wrap("prices create", err)
}

// EventsByIDs returns the events that exist among ids.
func (s *Store) EventsByIDs(ctx context.Context, ids []string) ([]Event, error) {
	return catalogRows[Event](ctx, s, "events by ids", sqlEventsByIDs, ids)
}

// PricesByEventIDs returns the prices of the events, by event then section position.
func (s *Store) PricesByEventIDs(ctx context.Context, eventIDs []string) ([]Price, error) {
	return catalogRows[Price](ctx, s, "prices by event ids", sqlPricesByEventIDs, eventIDs)
}

func filterArgs(f EventFilter) []any {
	var artist any
	if f.ArtistID != "" {
		artist = f.ArtistID
	}
	return []any{f.From, f.Category, f.City, artist}
}

// EventsList returns up to limit events matching f after the cursor (nil:
// from the start), in (starts_at, id) order.
func (s *Store) EventsList(ctx context.Context, f EventFilter, after *EventCursor, limit int) ([]Event, error) {
	var at, id any
	if after != nil {
		at, id = after.StartsAt, after.ID
	}
	args := append(filterArgs(f), at, id, limit)
	return catalogRows[Event](ctx, s, "events list", sqlEventsList, args...)
}

// WarmEventIDs is the events an instance loads before it takes traffic
// (app.Warm): those not cancelled and not yet started at now, the ones on
// sale first (event_sale_open, as hold_create judges it), then soonest
// first; at most limit.
func (s *Store) WarmEventIDs(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.db.Query(ctx, sqlWarmEventIDs, now, limit)
	if err != nil {
		return nil, wrap("warm event ids", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, wrap("warm event ids", err)
}

// EventsCount counts the events matching f.
func (s *Store) EventsCount(ctx context.Context, f EventFilter) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, sqlEventsCount, filterArgs(f)...).Scan(&n)
	return n, wrap("events count", err)
}

// InventoryCreate creates the inventory of the events from their venues'
// seats and GA capacities, all in SQL. It returns the number of rows created.
func (s *Store) InventoryCreate(ctx context.Context, eventIDs []string) (int64, error) {
	t1, err := s.db.Exec(ctx, sqlInventoryInsertSeats, eventIDs)
	if err != nil {
		return 0, wrap("inventory create seats", err)
	}
	t2, err := s.db.Exec(ctx, sqlInventoryInsertGA, eventIDs)
	if err != nil {
		return 0, wrap("inventory create ga", err)
	}
	return t1.RowsAffected() + t2.RowsAffected(), nil
}

// InventoryAvailability counts the inventory of the events; events without
// inventory are absent.
func (s *Store) InventoryAvailability(ctx context.Context, eventIDs []string) ([]Availability, error) {
	return catalogRows[Availability](ctx, s, "inventory availability", sqlInventoryAvailability, eventIDs)
}

// CatalogOutboxInsert records catalog changes of events (topic "catalog",
// payload {"eventId", "version"}) for the search projection.
func (s *Store) CatalogOutboxInsert(ctx context.Context, eventIDs []string, versions []int64) error {
	s.markOutbox()
	_, err := s.db.Exec(ctx, sqlCatalogOutboxInsert, eventIDs, versions)
	return wrap("catalog outbox insert", err)
}

// catalogRows runs a query and scans every row into T by column name.
func catalogRows[T any](ctx context.Context, s *Store, op, sql string, args ...any) ([]T, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	return out, wrap(op, err)
}
