-- Provider payments that disagree with our attempt: a notification or an
-- answer of the provider whose amount or currency differ from the attempt's
-- it names (by the provider's id or by our reference). Such a payment never
-- confirms an order; it is settled from the provider's own state (voided
-- while pending, refunded if it took money) by a job, and reported by
-- `ticketing audit` (PAYMENT_MISMATCH) until resolved_at is set.
--   payment_id  the attempt it named (by id or reference), if any
--   resolution  voided | refunded | no_money (it failed or was cancelled)
-- +goose Up
CREATE TABLE payment_mismatches (
    provider            text   NOT NULL,
    provider_payment_id text   NOT NULL,
    payment_id          uuid REFERENCES payments (id),
    amount              bigint NOT NULL,
    currency            text   NOT NULL,
    provider_status     text   NOT NULL,
    reason              text   NOT NULL,
    resolution          text CHECK (resolution IN ('voided', 'refunded', 'no_money')),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    resolved_at         timestamptz,
    PRIMARY KEY (provider, provider_payment_id),
    CHECK ((resolution IS NULL) = (resolved_at IS NULL))
);
CREATE INDEX payment_mismatches_payment ON payment_mismatches (payment_id);
CREATE INDEX payment_mismatches_open ON payment_mismatches (created_at) WHERE resolved_at IS NULL;

-- +goose Down
DROP TABLE payment_mismatches;
