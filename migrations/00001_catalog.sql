-- Catalog: venues, sections, seats, artists, events, prices.
-- +goose Up
CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE TABLE venues (
    id         uuid PRIMARY KEY,
    name       text NOT NULL CHECK (name <> ''),
    address    text NOT NULL,
    city       text NOT NULL CHECK (city <> ''),
    country    text NOT NULL CHECK (country <> ''),
    lat        double precision NOT NULL CHECK (lat BETWEEN -90 AND 90),
    lon        double precision NOT NULL CHECK (lon BETWEEN -180 AND 180),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sections (
    id        uuid PRIMARY KEY,
    venue_id  uuid NOT NULL REFERENCES venues (id),
    position  int  NOT NULL,
    name      text NOT NULL CHECK (name <> ''),
    kind      text NOT NULL CHECK (kind IN ('SEATED', 'GENERAL_ADMISSION')),
    capacity  int  NOT NULL CHECK (capacity > 0),
    UNIQUE (venue_id, name),
    UNIQUE (venue_id, position)
);

-- row_index orders rows front (0, nearest the stage) to back.
CREATE TABLE seats (
    id         uuid PRIMARY KEY,
    section_id uuid NOT NULL REFERENCES sections (id),
    row_label  text NOT NULL,
    row_index  int  NOT NULL CHECK (row_index >= 0),
    number     int  NOT NULL CHECK (number > 0),
    x          double precision NOT NULL,
    y          double precision NOT NULL,
    UNIQUE (section_id, row_label, number)
);
CREATE INDEX seats_section_order ON seats (section_id, row_index, number);

CREATE TABLE artists (
    id         uuid PRIMARY KEY,
    name       text   NOT NULL CHECK (name <> ''),
    bio        text   NOT NULL DEFAULT '',
    genres     text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX artists_name ON artists (lower(name));

CREATE TABLE events (
    id                    uuid PRIMARY KEY,
    venue_id              uuid NOT NULL REFERENCES venues (id),
    name                  text NOT NULL CHECK (name <> ''),
    description           text NOT NULL DEFAULT '',
    category              text NOT NULL CHECK (category <> ''),
    starts_at             timestamptz NOT NULL,
    ends_at               timestamptz CHECK (ends_at IS NULL OR ends_at > starts_at),
    sale_starts_at        timestamptz NOT NULL,
    sale_ends_at          timestamptz CHECK (sale_ends_at IS NULL OR sale_ends_at > sale_starts_at),
    max_tickets_per_user  int  NOT NULL CHECK (max_tickets_per_user > 0),
    hold_duration_seconds int  NOT NULL CHECK (hold_duration_seconds BETWEEN 1 AND 3600),
    queue_required        bool NOT NULL DEFAULT false,
    refund_policy         text NOT NULL DEFAULT '',
    -- Grows with every catalog change; search documents are versioned by it.
    version               bigint NOT NULL DEFAULT 1,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_starts_at ON events (starts_at, id);
CREATE INDEX events_venue ON events (venue_id);

CREATE TABLE event_artists (
    event_id  uuid NOT NULL REFERENCES events (id),
    artist_id uuid NOT NULL REFERENCES artists (id),
    position  int  NOT NULL,
    PRIMARY KEY (event_id, artist_id)
);
CREATE INDEX event_artists_artist ON event_artists (artist_id);

CREATE TABLE event_prices (
    event_id   uuid   NOT NULL REFERENCES events (id),
    section_id uuid   NOT NULL REFERENCES sections (id),
    amount     bigint NOT NULL CHECK (amount >= 0),
    currency   text   NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    PRIMARY KEY (event_id, section_id)
);

-- +goose Down
DROP TABLE event_prices, event_artists, events, artists, seats, sections, venues;
