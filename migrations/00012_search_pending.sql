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
-- +goose Up
CREATE SEQUENCE search_pending_seq;
CREATE TABLE search_pending (
    event_id      uuid PRIMARY KEY,
    seq           bigint NOT NULL DEFAULT nextval('search_pending_seq'),
    claimed_until timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE search_pending;
DROP SEQUENCE search_pending_seq;
