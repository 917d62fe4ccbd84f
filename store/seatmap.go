package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SeatMapSeat is the state of one seat of an event. A HELD seat whose hold
// has expired by the database clock reads as AVAILABLE.
type SeatMapSeat struct {
	SeatID    string `db:"seat_id"`
	SectionID string `db:"section_id"`
	Status    string `db:"status"`
	Version   int64  `db:"version"`
}

// SeatMapGA is the state of one general-admission section of an event:
// units available now, and the sum of its units' versions (which grows
// with every visible commit; ga_availability), and its units held, sold
// and in all, counted as InventoryAvailability counts an event's.
type SeatMapGA struct {
	SectionID string `db:"section_id"`
	Available int    `db:"available"`
	Version   int64  `db:"version"`
	Held      int    `db:"held"`
	Sold      int    `db:"sold"`
	Capacity  int    `db:"capacity"`
}

const (
	sqlSeatMapSeats = `
SELECT seat_id::text AS seat_id, section_id::text AS section_id,
       inventory_status(status, expires_at) AS status,
       version
FROM inventory
WHERE event_id = $1 AND seat_id IS NOT NULL
ORDER BY id`

	// $2 NULL means every GA section of the event. The count and its
	// version are ga_availability's (migrations/functions).
	sqlSeatMapGA = `
SELECT section_id::text AS section_id, available, version, held, sold, capacity
FROM ga_availability
WHERE event_id = $1 AND ($2::uuid[] IS NULL OR section_id = ANY($2::uuid[]))
ORDER BY section_id`

	sqlSeatMapEventExists = `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`
)

// SeatMapSeats returns every seat of an event with its status and version.
func (s *Store) SeatMapSeats(ctx context.Context, eventID string) ([]SeatMapSeat, error) {
	rows, err := s.db.Query(ctx, sqlSeatMapSeats, eventID)
	if err != nil {
		return nil, wrap("seat map seats", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[SeatMapSeat])
	return out, wrap("seat map seats", err)
}

// SeatMapGA counts the available units of the event's GA sections (all of
// them when sectionIDs is nil), read now from committed state.
func (s *Store) SeatMapGA(ctx context.Context, eventID string, sectionIDs []string) ([]SeatMapGA, error) {
	rows, err := s.db.Query(ctx, sqlSeatMapGA, eventID, sectionIDs)
	if err != nil {
		return nil, wrap("seat map ga", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[SeatMapGA])
	return out, wrap("seat map ga", err)
}

// SeatMapEventExists reports whether the event exists.
func (s *Store) SeatMapEventExists(ctx context.Context, eventID string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, sqlSeatMapEventExists, eventID).Scan(&ok)
	return ok, wrap("seat map event", err)
}

// SeatMap returns SeatMapSeats and SeatMapGA (every GA section) of an
// event in one round trip.
func (s *Store) SeatMap(ctx context.Context, eventID string) ([]SeatMapSeat, []SeatMapGA, error) {
	b := &pgx.Batch{}
	var seats []SeatMapSeat
	var ga []SeatMapGA
	b.Queue(sqlSeatMapSeats, eventID).Query(func(rows pgx.Rows) error {
		var err error
		seats, err = pgx.CollectRows(rows, pgx.RowToStructByName[SeatMapSeat])
		return err
	})
	b.Queue(sqlSeatMapGA, eventID, []string(nil)).Query(func(rows pgx.Rows) error {
		var err error
		ga, err = pgx.CollectRows(rows, pgx.RowToStructByName[SeatMapGA])
		return err
	})
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, wrap("seat map", err)
	}
	return seats, ga, nil
}
