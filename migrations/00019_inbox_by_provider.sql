-- Provider notifications are deduplicated per provider: two providers may
-- use the same event id.
-- +goose Up
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_pkey, ADD PRIMARY KEY (provider, id);

-- +goose Down
ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_pkey, ADD PRIMARY KEY (id);
