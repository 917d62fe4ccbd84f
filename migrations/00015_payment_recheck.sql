-- When the reconciler last looked at a payment, and failed payments that can
-- still succeed.
--   checked_at   when the reconciler last asked the provider about a payment
--                (or re-enqueued its refund), whatever the answer; NULL:
--                never. updated_at stays the time of the last change. Each
--                pass takes the payments least recently looked at
--                (greatest(checked_at, updated_at)) first, so payments the
--                provider keeps reporting unchanged (buyers sitting on the
--                checkout page) cannot fill every pass and starve the others.
-- With Stripe, a PaymentIntent whose attempt was declined
-- (requires_payment_method, our FAILED) can be confirmed again by the buyer
-- with another card, and succeed. We learn of that from the webhook; the
-- reconciler also asks Stripe about recent FAILED payments, less and less
-- often (checked_at again), in case that notification is lost. The index
-- serves that scan.
-- +goose Up
ALTER TABLE payments ADD COLUMN checked_at timestamptz;
CREATE INDEX payments_failed ON payments (updated_at) WHERE status = 'FAILED';

-- +goose Down
DROP INDEX payments_failed;
ALTER TABLE payments DROP COLUMN checked_at;
