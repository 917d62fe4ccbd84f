-- Inventory, holds, idempotency, orders, payments, tickets and the outbox.
-- +goose Up
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
    PRIMARY KEY (event_id, id),
    CHECK ((seat_id IS NULL) <> (unit_no IS NULL)),
    CHECK (
        (status = 'AVAILABLE' AND hold_id IS NULL AND owner IS NULL AND expires_at IS NULL AND order_id IS NULL)
     OR (status = 'HELD' AND hold_id IS NOT NULL AND owner IS NOT NULL AND expires_at IS NOT NULL AND order_id IS NULL)
     OR (status = 'SOLD' AND hold_id IS NOT NULL AND owner IS NOT NULL AND order_id IS NOT NULL)
    )
);
CREATE UNIQUE INDEX inventory_event_seat ON inventory (event_id, seat_id) WHERE seat_id IS NOT NULL;
CREATE UNIQUE INDEX inventory_event_unit ON inventory (event_id, section_id, unit_no) WHERE unit_no IS NOT NULL;
CREATE INDEX inventory_ga_pick ON inventory (event_id, section_id, status, id) WHERE unit_no IS NOT NULL;
CREATE INDEX inventory_hold ON inventory (hold_id) WHERE hold_id IS NOT NULL;
CREATE INDEX inventory_owner ON inventory (event_id, owner) WHERE owner IS NOT NULL;

CREATE TABLE holds (
    id           uuid PRIMARY KEY,
    event_id     uuid NOT NULL REFERENCES events (id),
    owner        text NOT NULL,
    -- ACTIVE past expires_at reads as EXPIRED; the sweeper writes it down later.
    status       text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'CANCELLED', 'EXPIRED', 'PURCHASED')),
    expires_at   timestamptz NOT NULL,
    total_amount bigint NOT NULL CHECK (total_amount >= 0),
    currency     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (expires_at > created_at)
);
CREATE INDEX holds_event_owner ON holds (event_id, owner);
CREATE INDEX holds_active_expiry ON holds (expires_at) WHERE status = 'ACTIVE';

-- The items of a hold with the prices captured when it was made. `period` is
-- when the item is the hold's: [created_at, expires_at) while active, cut at
-- cancellation or expiry, open-ended once sold. The exclusion constraint is a
-- second, schema-level guarantee that one inventory item never belongs to two
-- live holds (or a live hold and a sale) at once.
CREATE TABLE hold_items (
    hold_id      uuid   NOT NULL REFERENCES holds (id),
    event_id     uuid   NOT NULL,
    inventory_id bigint NOT NULL,
    section_id   uuid   NOT NULL REFERENCES sections (id),
    seat_id      uuid REFERENCES seats (id),
    price_amount bigint NOT NULL CHECK (price_amount >= 0),
    currency     text   NOT NULL,
    period       tstzrange NOT NULL,
    PRIMARY KEY (hold_id, inventory_id),
    FOREIGN KEY (event_id, inventory_id) REFERENCES inventory (event_id, id),
    EXCLUDE USING gist (event_id WITH =, inventory_id WITH =, period WITH &&)
);

-- Idempotency of writes per (user, operation, key): the row is inserted in the
-- same transaction as the effect, so a concurrent duplicate waits on it and
-- then reads the stored result; a retry with other arguments is refused.
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
    status       text NOT NULL CHECK (status IN ('AWAITING_PAYMENT', 'CONFIRMED', 'PAYMENT_FAILED', 'EXPIRED', 'CANCELLED')),
    total_amount bigint NOT NULL CHECK (total_amount >= 0),
    currency     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    confirmed_at timestamptz
);
CREATE INDEX orders_owner ON orders (owner, created_at DESC, id DESC);
CREATE INDEX orders_event ON orders (event_id);

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
    UNIQUE (order_id, attempt),
    UNIQUE (provider, provider_ref)
);
-- At most one open attempt per order, enforced by the database.
CREATE UNIQUE INDEX payments_one_open ON payments (order_id) WHERE status IN ('PENDING', 'UNKNOWN');
CREATE INDEX payments_unsettled ON payments (updated_at) WHERE status IN ('PENDING', 'UNKNOWN', 'REFUND_PENDING');

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

-- Provider notifications, deduplicated by the provider's notification id.
CREATE TABLE webhook_inbox (
    id           text PRIMARY KEY,
    provider     text  NOT NULL,
    type         text  NOT NULL,
    payload      jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz
);

CREATE TABLE tickets (
    id           uuid PRIMARY KEY,
    order_id     uuid   NOT NULL REFERENCES orders (id),
    event_id     uuid   NOT NULL,
    inventory_id bigint NOT NULL,
    section_id   uuid   NOT NULL REFERENCES sections (id),
    seat_id      uuid REFERENCES seats (id),
    code         text   NOT NULL UNIQUE,
    status       text   NOT NULL DEFAULT 'VALID' CHECK (status IN ('VALID', 'VOID')),
    issued_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (event_id, inventory_id) REFERENCES inventory (event_id, id)
);
-- A seat (or GA unit) of an event has at most one valid ticket: no double sale.
CREATE UNIQUE INDEX tickets_one_valid ON tickets (event_id, inventory_id) WHERE status = 'VALID';
CREATE INDEX tickets_order ON tickets (order_id);

-- Transactional outbox: written in the same transaction as the change it
-- describes, published to the seat map and the search projection by the relay.
CREATE TABLE outbox (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id   uuid,
    topic      text  NOT NULL,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE outbox, tickets, webhook_inbox, payment_events, payments;
ALTER TABLE inventory DROP CONSTRAINT IF EXISTS inventory_order_id_fkey;
DROP TABLE orders, idempotency_keys, hold_items, holds, inventory;
DROP SEQUENCE inventory_version_seq;
