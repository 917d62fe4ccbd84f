-- Baseline: the schema as migrations 00001-00020 left it, squashed into one
-- file (issue #19). It keeps the highest squashed version, 20, so a
-- development database already at version 20 sees nothing to apply and a
-- fresh one gets the same schema (store/migrate_test.go compares the two).
-- No database outside development was at an intermediate version. The
-- history (and the measurements behind each change) is in git: 00001-00020
-- before this commit.
--
-- Functions, and the triggers that call them, are not here: each lives in
-- migrations/functions/*.sql, applied with CREATE OR REPLACE after every
-- numbered migration (store.Migrate). Numbered migrations after this one
-- change tables, never function bodies.
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
    -- Where the section is drawn on the venue plan (its bounding box, in
    -- venue units; the stage is at y = 0 and rows grow in +y).
    bounds_x  double precision NOT NULL DEFAULT 0,
    bounds_y  double precision NOT NULL DEFAULT 0,
    bounds_w  double precision NOT NULL DEFAULT 0,
    bounds_h  double precision NOT NULL DEFAULT 0,
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
    updated_at            timestamptz NOT NULL DEFAULT now(),
    -- A buyer may requestRefund a CONFIRMED order until then; NULL: no
    -- refunds on request.
    refund_deadline       timestamptz,
    -- Set once by cancelEvent (with its reason): the sale is closed from then
    -- on (the holds_refuse_cancelled_event trigger, functions/).
    cancelled_at          timestamptz,
    cancel_reason         text
);
CREATE INDEX events_starts_at ON events (starts_at, id);
CREATE INDEX events_category_starts_at ON events (lower(category), starts_at, id);
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


CREATE EXTENSION IF NOT EXISTS btree_gist;

-- Seat-map versions come from one sequence: a version therefore only grows
-- per (event, seat) and per general-admission section, and no hot counter
-- row serialises buyers of a popular GA floor.
CREATE SEQUENCE inventory_version_seq;

-- One row per (event, seat) and per (event, GA section, unit). The row is the
-- single place where "who has this seat" is decided: a conditional UPDATE of
-- it is the hold, and its identity (one hold_id column) makes two active holds
-- of one seat impossible. A HELD row whose expires_at has passed (by the
-- database clock) is available again: no cron decides that.
--
-- A hold's UPDATE of a seat's row is a HOT update (no new index entry): no
-- index covers hold_id, owner or status; their readers reach the rows through
-- the hold's items. inventory_ga_pick is keyed on ga_status (status for GA
-- units, NULL for seats), so only a GA unit's status change touches an index.
-- fillfactor 80 leaves room in each page for the new versions.
CREATE TABLE inventory (
    id         bigint GENERATED ALWAYS AS IDENTITY,
    event_id   uuid NOT NULL REFERENCES events (id),
    section_id uuid NOT NULL REFERENCES sections (id),
    seat_id    uuid REFERENCES seats (id),
    unit_no    int CHECK (unit_no > 0),
    status     text NOT NULL DEFAULT 'AVAILABLE' CHECK (status IN ('AVAILABLE', 'HELD', 'SOLD')),
    hold_id    uuid,
    owner      text,
    expires_at timestamptz,
    order_id   uuid,
    version    bigint NOT NULL DEFAULT nextval('inventory_version_seq'),
    updated_at timestamptz NOT NULL DEFAULT now(),
    ga_status  text GENERATED ALWAYS AS (CASE WHEN unit_no IS NOT NULL THEN status END) STORED,
    PRIMARY KEY (event_id, id),
    CHECK ((seat_id IS NULL) <> (unit_no IS NULL)),
    CHECK (
        (status = 'AVAILABLE' AND hold_id IS NULL AND owner IS NULL AND expires_at IS NULL AND order_id IS NULL)
     OR (status = 'HELD' AND hold_id IS NOT NULL AND owner IS NOT NULL AND expires_at IS NOT NULL AND order_id IS NULL)
     OR (status = 'SOLD' AND hold_id IS NOT NULL AND owner IS NOT NULL AND order_id IS NOT NULL)
    )
) WITH (fillfactor = 80);
CREATE UNIQUE INDEX inventory_event_seat ON inventory (event_id, seat_id) WHERE seat_id IS NOT NULL;
CREATE UNIQUE INDEX inventory_event_unit ON inventory (event_id, section_id, unit_no) WHERE unit_no IS NOT NULL;
CREATE INDEX inventory_ga_pick ON inventory (event_id, section_id, ga_status, id) WHERE unit_no IS NOT NULL;

-- holds.event_id has no foreign key (nor do hold_items' section, seat and
-- inventory columns): each check would KEY SHARE lock the hottest rows of a
-- sale (the event, its sections). The items are copied, in the same
-- transaction, from the inventory rows the hold has just taken, and those
-- rows keep their own keys. The createHold idempotency key lives on the hold
-- row (unique per owner).
CREATE TABLE holds (
    id              uuid PRIMARY KEY,
    event_id        uuid NOT NULL,
    owner           text NOT NULL,
    -- ACTIVE past expires_at reads as EXPIRED; the sweeper writes it down later.
    status          text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'CANCELLED', 'EXPIRED', 'PURCHASED')),
    expires_at      timestamptz NOT NULL,
    total_amount    bigint NOT NULL CHECK (total_amount >= 0),
    currency        text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    idempotency_key text CHECK (idempotency_key <> ''),
    request_hash    bytea,
    CHECK (expires_at > created_at)
);
CREATE INDEX holds_active_expiry ON holds (expires_at) WHERE status = 'ACTIVE';
CREATE UNIQUE INDEX holds_owner_key ON holds (owner, idempotency_key);

-- The items of a hold with the prices captured when it was made. `period` is
-- when the item is the hold's: [created_at, expires_at) while active, cut at
-- cancellation or expiry, open-ended once sold. The exclusion constraint is a
-- second, schema-level guarantee that one inventory item never belongs to two
-- live holds (or a live hold and a sale) at once.
CREATE TABLE hold_items (
    hold_id      uuid   NOT NULL REFERENCES holds (id),
    event_id     uuid   NOT NULL,
    inventory_id bigint NOT NULL,
    section_id   uuid   NOT NULL,
    seat_id      uuid,
    price_amount bigint NOT NULL CHECK (price_amount >= 0),
    currency     text   NOT NULL,
    period       tstzrange NOT NULL,
    PRIMARY KEY (hold_id, inventory_id),
    EXCLUDE USING gist (event_id WITH =, inventory_id WITH =, period WITH &&)
);

-- Idempotency of writes per (user, operation, key): the row is inserted in the
-- same transaction as the effect, so a concurrent duplicate waits on it and
-- then reads the stored result; a retry with other arguments is refused.
-- (createHold keeps its key on the hold row instead.)
CREATE TABLE idempotency_keys (
    owner        text  NOT NULL,
    operation    text  NOT NULL,
    key          text  NOT NULL CHECK (key <> ''),
    request_hash bytea NOT NULL,
    resource_id  uuid  NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, operation, key)
);

CREATE TABLE orders (
    id           uuid PRIMARY KEY,
    -- One order per hold, whatever the idempotency key.
    hold_id      uuid NOT NULL UNIQUE REFERENCES holds (id),
    event_id     uuid NOT NULL REFERENCES events (id),
    owner        text NOT NULL,
    -- REFUNDED: was CONFIRMED, refunded in full (refunded_at).
    status       text NOT NULL CHECK (status IN ('AWAITING_PAYMENT', 'CONFIRMED', 'PAYMENT_FAILED', 'EXPIRED', 'CANCELLED', 'REFUNDED')),
    total_amount bigint NOT NULL CHECK (total_amount >= 0),
    currency     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    confirmed_at timestamptz,
    refunded_at  timestamptz
);
CREATE INDEX orders_owner ON orders (owner, created_at DESC, id DESC);
CREATE INDEX orders_event ON orders (event_id);
-- The reconciler's scan.
CREATE INDEX orders_awaiting ON orders (created_at) WHERE status IN ('AWAITING_PAYMENT', 'PAYMENT_FAILED');

ALTER TABLE inventory ADD FOREIGN KEY (order_id) REFERENCES orders (id);

CREATE TABLE payments (
    id              uuid PRIMARY KEY,
    order_id        uuid NOT NULL REFERENCES orders (id),
    attempt         int  NOT NULL CHECK (attempt > 0),
    status          text NOT NULL CHECK (status IN ('PENDING', 'UNKNOWN', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'REFUND_PENDING', 'REFUNDED')),
    amount          bigint NOT NULL CHECK (amount >= 0),
    currency        text NOT NULL,
    provider        text NOT NULL,
    provider_ref    text,
    -- The provider idempotency key of this attempt: a retried create reuses it.
    idempotency_key text NOT NULL UNIQUE,
    checkout_url    text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- The provider request the attempt was created with (a repeated create
    -- must be byte-identical, whichever instance retries it); amount and
    -- currency are the columns above. NULL on rows created before 00011 (the
    -- engine then rebuilds the request).
    request_reference   text,
    request_webhook_url text,
    request_return_url  text,
    -- the sandbox's "simulate" object as sent (JSON text), NULL if none
    request_simulate    text,
    -- When the reconciler last asked the provider about the payment (or
    -- re-enqueued its refund), whatever the answer; NULL: never. Each pass
    -- takes the least recently looked at (greatest(checked_at, updated_at))
    -- first, so unchanged payments cannot starve the others.
    checked_at      timestamptz,
    -- A reversal the provider reported on its own, and how much for a
    -- partial refund (an audit anomaly, PARTIAL_REFUND).
    reversal        text CHECK (reversal IN ('refund', 'dispute', 'partial_refund')),
    refunded_amount bigint CHECK (refunded_amount >= 0),
    UNIQUE (order_id, attempt),
    UNIQUE (provider, provider_ref)
);
-- At most one open attempt per order, enforced by the database.
CREATE UNIQUE INDEX payments_one_open ON payments (order_id) WHERE status IN ('PENDING', 'UNKNOWN');
CREATE INDEX payments_unsettled ON payments (updated_at) WHERE status IN ('PENDING', 'UNKNOWN', 'REFUND_PENDING');
-- A declined attempt (FAILED) can still succeed at the provider (another
-- card): the reconciler asks about recent ones, less and less often.
CREATE INDEX payments_failed ON payments (updated_at) WHERE status = 'FAILED';

-- Every state change of a payment, with why: the money story of an order.
CREATE TABLE payment_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payment_id  uuid NOT NULL REFERENCES payments (id),
    from_status text,
    to_status   text NOT NULL,
    reason      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_events_payment ON payment_events (payment_id, id);

-- Provider notifications, deduplicated per provider by the provider's
-- notification id (two providers may use the same id).
CREATE TABLE webhook_inbox (
    id           text NOT NULL,
    provider     text  NOT NULL,
    type         text  NOT NULL,
    payload      jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz,
    PRIMARY KEY (provider, id)
);
CREATE INDEX webhook_inbox_unprocessed ON webhook_inbox (received_at) WHERE processed_at IS NULL;

-- USED: admitted once at the door (used_at); a USED ticket still holds its
-- seat, so the one-valid index covers VALID and USED.
CREATE TABLE tickets (
    id           uuid PRIMARY KEY,
    order_id     uuid   NOT NULL REFERENCES orders (id),
    event_id     uuid   NOT NULL,
    inventory_id bigint NOT NULL,
    section_id   uuid   NOT NULL REFERENCES sections (id),
    seat_id      uuid REFERENCES seats (id),
    code         text   NOT NULL UNIQUE,
    status       text   NOT NULL DEFAULT 'VALID' CHECK (status IN ('VALID', 'USED', 'VOID')),
    issued_at    timestamptz NOT NULL DEFAULT now(),
    used_at      timestamptz,
    FOREIGN KEY (event_id, inventory_id) REFERENCES inventory (event_id, id)
);
-- A seat (or GA unit) of an event has at most one valid ticket: no double sale.
CREATE UNIQUE INDEX tickets_one_valid ON tickets (event_id, inventory_id) WHERE status IN ('VALID', 'USED');
CREATE INDEX tickets_order ON tickets (order_id);
CREATE INDEX tickets_event ON tickets (event_id, inventory_id);

-- Transactional outbox: written in the same transaction as the change it
-- describes, published to the seat map and the search projection by the
-- relay. The relay is woken after commit by the application
-- (outbox.Notifier), not by a trigger: Postgres serialises the commits of
-- every transaction that issued NOTIFY.
CREATE TABLE outbox (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id   uuid,
    topic      text  NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Events whose search document must be rebuilt. The outbox relay used to
-- index the search projection inside its batch transaction, so a slow index
-- (50-500 ms per batch under load) delayed every later batch of the
-- partition, and with it the live seat map. The relay now only upserts the
-- batch's event ids here, in the same transaction that deletes the outbox
-- rows (one statement per batch), and a separate indexer claims them, reloads
-- the events from Postgres, indexes them and deletes the rows it indexed.
--   seq           changes on every upsert: the indexer deletes a row only if
--                 it is still the version it claimed, so a change that
--                 arrives while an event is being indexed is not lost;
--   claimed_until a lease: another indexer skips a claimed row until it
--                 expires (a crashed indexer's claim simply runs out);
--   created_at    when the event first became pending (kept by upserts).
CREATE SEQUENCE search_pending_seq;
CREATE TABLE search_pending (
    event_id      uuid PRIMARY KEY,
    seq           bigint NOT NULL DEFAULT nextval('search_pending_seq'),
    claimed_until timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);


-- Provider payments that disagree with our attempt: a notification or an
-- answer of the provider whose amount or currency differ from the attempt's
-- it names (by the provider's id or by our reference). Such a payment never
-- confirms an order; it is settled from the provider's own state (voided
-- while pending, refunded if it took money) by a job, and reported by
-- `ticketing audit` (PAYMENT_MISMATCH) until resolved_at is set.
--   payment_id  the attempt it named (by id or reference), if any
--   resolution  voided | refunded | no_money (it failed or was cancelled)
CREATE TABLE payment_mismatches (
    provider            text   NOT NULL,
    provider_payment_id text   NOT NULL,
    payment_id          uuid REFERENCES payments (id),
    amount              bigint NOT NULL,
    currency            text   NOT NULL,
    provider_status     text   NOT NULL,
    reason              text   NOT NULL,
    resolution          text CHECK (resolution IN ('voided', 'refunded', 'no_money')),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    resolved_at         timestamptz,
    PRIMARY KEY (provider, provider_payment_id),
    CHECK ((resolution IS NULL) = (resolved_at IS NULL))
);
CREATE INDEX payment_mismatches_payment ON payment_mismatches (payment_id);
CREATE INDEX payment_mismatches_open ON payment_mismatches (created_at) WHERE resolved_at IS NULL;


-- +goose Down
DROP FUNCTION IF EXISTS hold_create, holds_refuse_cancelled_event CASCADE;
DROP TABLE payment_mismatches, search_pending, outbox, tickets, webhook_inbox, payment_events, payments;
ALTER TABLE inventory DROP CONSTRAINT IF EXISTS inventory_order_id_fkey;
DROP TABLE orders, idempotency_keys, hold_items, holds, inventory;
DROP SEQUENCE inventory_version_seq, search_pending_seq;
DROP TABLE event_prices, event_artists, events, artists, seats, sections, venues;
