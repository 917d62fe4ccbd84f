-- The picks of hold_create (migrations/functions/hold_create.sql) no longer
-- grow with what a sale has already taken (issue #17, measured in the
-- 20,000-buyer sale: hold_create averaged 28 ms, against ~1 ms for an
-- explicit seat; bench/RESULTS.md, 2026-12-03).
--
-- General admission: a GA pick read inventory_ga_pick's AVAILABLE entries
-- in id order, walking over the entries of every unit taken since the last
-- vacuum, then every HELD unit looking for expired ones. It now starts at
-- a random unit and finds expired holds by their expiry (inventory_ga_expiry):
-- ga_until is a GA unit's expires_at while it is HELD (NULL for seats, so a
-- seat's hold stays a HOT update, as with ga_status; the index's predicate
-- names unit_no alone for the same reason; it leads with (event_id,
-- ga_until), not the section, so that the planner never takes it for the
-- lookups by (event_id, section_id, unit_no) of inventory_event_unit: on a
-- new event's table without statistics it did, reading every unit).
--
-- Best available: hold_create takes the caller's hint of the row where
-- seats were last found (p_best_from) and says where it found them
-- (o_best_row); its signature changes, so the old one is dropped here and
-- the new one created by the functions file.
-- +goose Up
DROP FUNCTION IF EXISTS hold_create(text, text, bytea, uuid, uuid, uuid[], int, uuid, boolean, int, uuid[], int[], boolean);
ALTER TABLE inventory ADD COLUMN ga_until timestamptz
    GENERATED ALWAYS AS (CASE WHEN unit_no IS NOT NULL AND status = 'HELD' THEN expires_at END) STORED;
CREATE INDEX inventory_ga_expiry ON inventory (event_id, ga_until) WHERE unit_no IS NOT NULL;

-- +goose Down
DROP FUNCTION IF EXISTS hold_create(text, text, bytea, uuid, uuid, uuid[], int, uuid, boolean, int, uuid[], int[], boolean, int);
DROP INDEX inventory_ga_expiry;
ALTER TABLE inventory DROP COLUMN ga_until;
