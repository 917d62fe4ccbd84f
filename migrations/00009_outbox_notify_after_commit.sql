-- The NOTIFY that wakes the outbox relay moves out of the business
-- transactions: Postgres serialises the commits of every transaction that
-- issued NOTIFY, which capped holds and orders at one commit at a time.
-- The application now sends it after commit (outbox.Notifier).
-- +goose Up
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox', '');
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
