-- Failed payments that can still succeed. With Stripe, a PaymentIntent
-- whose attempt was declined (requires_payment_method, our FAILED) can be
-- confirmed again by the buyer with another card, and succeed. We learn of
-- that from the webhook; the reconciler also asks Stripe about recent FAILED
-- payments, less and less often, in case that notification is lost.
--   checked_at   when the reconciler last asked the provider about a FAILED
--                payment (NULL: never); it does not touch updated_at, which
--                stays the time of the failure.
-- The index serves the reconciler's scan of recent FAILED payments.
-- +goose Up
ALTER TABLE payments ADD COLUMN checked_at timestamptz;
CREATE INDEX payments_failed ON payments (updated_at) WHERE status = 'FAILED';

-- +goose Down
DROP INDEX payments_failed;
ALTER TABLE payments DROP COLUMN checked_at;
