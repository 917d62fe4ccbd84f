-- Orders engine: indexes for the reconciler. (River's own tables are
-- created by rivermigrate in store.Migrate, after these migrations.)
-- +goose Up
CREATE INDEX orders_awaiting ON orders (created_at) WHERE status IN ('AWAITING_PAYMENT', 'PAYMENT_FAILED');
CREATE INDEX webhook_inbox_unprocessed ON webhook_inbox (received_at) WHERE processed_at IS NULL;
CREATE INDEX tickets_event ON tickets (event_id, inventory_id);

-- +goose Down
DROP INDEX tickets_event, webhook_inbox_unprocessed, orders_awaiting;
