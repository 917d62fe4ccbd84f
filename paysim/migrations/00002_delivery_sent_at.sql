-- +goose Up

-- When the last attempt of a delivery was sent (its POST started): what a
-- provider's "sent at" is. With the event's created_at and delivered_at it
-- splits a notification's time into the provider's own queue, the
-- receiver's handling and the answer's way back.
ALTER TABLE paysim.deliveries ADD COLUMN sent_at timestamptz;

-- +goose Down
ALTER TABLE paysim.deliveries DROP COLUMN sent_at;
