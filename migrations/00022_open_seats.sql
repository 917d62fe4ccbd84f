-- Best-available holds no longer read the sold seats (issue #17, measured in
-- the 20,000-buyer sale: late in the sale a best-available hold read every
-- seat row of the nearly full sections to find a handful of free seats,
-- 25-42 ms, 36 ms to refuse with best_unavailable, against 3.9 ms for a GA
-- hold; bench/RESULTS.md, 2026-12-03 evening).
--
-- seat_row is a seat's row_index, copied into its inventory row when the row
-- is inserted (the trigger inventory_seat_row, functions/) and never
-- changed; NULL for GA units. open_row is seat_row while the seat is not
-- SOLD, and the index inventory_open_seats holds only those: hold_create's
-- search walks the rows that still have unsold seats and, in each, reads
-- only those seats. A hold (AVAILABLE -> HELD) and its release do not change
-- open_row, so they stay HOT updates (as with ga_status and ga_until); a
-- sale (HELD -> SOLD) and a refund of a sold seat do, once per seat.
-- +goose Up
ALTER TABLE inventory ADD COLUMN seat_row int;
UPDATE inventory i SET seat_row = s.row_index FROM seats s WHERE s.id = i.seat_id;
ALTER TABLE inventory ADD COLUMN open_row int
    GENERATED ALWAYS AS (CASE WHEN status <> 'SOLD' THEN seat_row END) STORED;
CREATE INDEX inventory_open_seats ON inventory (event_id, open_row, section_id) WHERE open_row IS NOT NULL;

-- +goose Down
DROP TRIGGER IF EXISTS inventory_seat_row ON inventory;
DROP FUNCTION IF EXISTS inventory_seat_row();
DROP INDEX inventory_open_seats;
ALTER TABLE inventory DROP COLUMN open_row;
ALTER TABLE inventory DROP COLUMN seat_row;
