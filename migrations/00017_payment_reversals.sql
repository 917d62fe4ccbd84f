-- Reversals the provider reports on its own (a refund made at its dashboard,
-- a chargeback, a partial refund): what kind, and how much for a partial
-- one. A full refund or dispute of a confirming payment also refunds its
-- order (orders.refundOrder); a partial one leaves the order as it is and
-- is an audit anomaly (PARTIAL_REFUND) for a person to decide.
-- +goose Up
ALTER TABLE payments ADD COLUMN reversal text CHECK (reversal IN ('refund', 'dispute', 'partial_refund')),
                     ADD COLUMN refunded_amount bigint CHECK (refunded_amount >= 0);

-- +goose Down
ALTER TABLE payments DROP COLUMN refunded_amount, DROP COLUMN reversal;
