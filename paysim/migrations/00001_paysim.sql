-- +goose Up

-- One row per payment. Amounts are integer minor units.
CREATE TABLE paysim.payments (
    id             text PRIMARY KEY,
    status         text NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled', 'refunded')),
    amount         bigint NOT NULL CHECK (amount > 0),
    currency       text NOT NULL,
    reference      text NOT NULL,
    webhook_url    text NOT NULL,
    return_url     text NOT NULL DEFAULT '',
    checkout_url   text NOT NULL,
    -- per-payment fault injection, as given in the create body ("simulate")
    simulate       jsonb NOT NULL DEFAULT '{}',
    failure_code   text NOT NULL DEFAULT '',
    refund_id      text,
    -- when set, the payment settles by itself with auto_outcome at this time
    settle_at      timestamptz,
    auto_outcome   text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX payments_settle_due ON paysim.payments (settle_at) WHERE status = 'pending' AND settle_at IS NOT NULL;

-- Idempotency keys, scoped by operation ("create_payment", "refund"). Only
-- successful requests are recorded; keys expire after 24 hours.
CREATE TABLE paysim.idempotency_keys (
    operation    text NOT NULL,
    key          text NOT NULL,
    fingerprint  text NOT NULL,
    payment_id   text REFERENCES paysim.payments (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation, key)
);

-- Notifications (events): the exact JSON body that is sent.
CREATE TABLE paysim.events (
    id          text PRIMARY KEY,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    payment_id  text NOT NULL REFERENCES paysim.payments (id),
    type        text NOT NULL,
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX events_payment ON paysim.events (payment_id, seq);

-- The delivery outbox: one row per copy of an event to send (more than one
-- with duplicate_webhooks; none with drop_webhooks). Rows are kept after
-- delivery or giving up, as a record.
CREATE TABLE paysim.deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id         text NOT NULL REFERENCES paysim.events (id),
    url              text NOT NULL,
    attempts         int NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_status      int,
    last_error       text NOT NULL DEFAULT '',
    delivered_at     timestamptz,
    gave_up_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX deliveries_due ON paysim.deliveries (next_attempt_at, id)
    WHERE delivered_at IS NULL AND gave_up_at IS NULL;

-- Global fault injection (POST/GET/DELETE /v1/faults): one row, shared by
-- every paysim instance on the database.
CREATE TABLE paysim.faults (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    value   jsonb NOT NULL DEFAULT '{}'
);
INSERT INTO paysim.faults (id, value) VALUES (true, '{}');

-- +goose Down
DROP TABLE paysim.faults;
DROP TABLE paysim.deliveries;
DROP TABLE paysim.events;
DROP TABLE paysim.idempotency_keys;
DROP TABLE paysim.payments;
