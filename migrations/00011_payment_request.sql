-- The provider request an attempt was created with. A repeated create of the
-- attempt (same provider idempotency key) must be byte-identical, or the
-- provider answers 422 idempotency_key_reused; the webhook and return URLs
-- used to be rebuilt from the PUBLIC_BASE_URL of whichever instance retried,
-- so two instances with different base URLs sent different bodies. amount and
-- currency are already columns of the row (never updated); these are the
-- rest of the body. NULL on rows created before this migration (the engine
-- then rebuilds the request as it used to).
-- +goose Up
ALTER TABLE payments
    ADD COLUMN request_reference   text,
    ADD COLUMN request_webhook_url text,
    ADD COLUMN request_return_url  text,
    -- the sandbox's "simulate" object as sent (JSON text), NULL if none
    ADD COLUMN request_simulate    text;

-- +goose Down
ALTER TABLE payments
    DROP COLUMN request_simulate,
    DROP COLUMN request_return_url,
    DROP COLUMN request_webhook_url,
    DROP COLUMN request_reference;
