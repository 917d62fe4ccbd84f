-- Catalog layout: where each section is drawn on the venue plan (its
-- bounding box, in venue units; the stage is at y = 0 and rows grow in +y).
-- Also an index for the upcoming-events listing filtered by category.
-- +goose Up
ALTER TABLE sections
    ADD COLUMN bounds_x double precision NOT NULL DEFAULT 0,
    ADD COLUMN bounds_y double precision NOT NULL DEFAULT 0,
    ADD COLUMN bounds_w double precision NOT NULL DEFAULT 0,
    ADD COLUMN bounds_h double precision NOT NULL DEFAULT 0;

CREATE INDEX events_category_starts_at ON events (lower(category), starts_at, id);

-- +goose Down
DROP INDEX events_category_starts_at;
ALTER TABLE sections DROP COLUMN bounds_x, DROP COLUMN bounds_y, DROP COLUMN bounds_w, DROP COLUMN bounds_h;
