-- After the sale: refunds, cancellation and entry at the door.
--   events.refund_deadline  a buyer may requestRefund a CONFIRMED order
--                           until then; NULL: no refunds on request.
--   events.cancelled_at     set once by cancelEvent (with its reason);
--                           the sale is closed from then on: a hold of a
--                           cancelled event is refused by the trigger below
--                           (hold_create then reports sale_not_open).
--   orders REFUNDED         was CONFIRMED, refunded in full; refunded_at.
--   tickets USED            admitted once at the door (used_at); a USED
--                           ticket still holds its seat, so the one-valid
--                           index covers VALID and USED.
-- +goose Up
ALTER TABLE events ADD COLUMN refund_deadline timestamptz,
                   ADD COLUMN cancelled_at timestamptz,
                   ADD COLUMN cancel_reason text;

ALTER TABLE orders DROP CONSTRAINT orders_status_check,
    ADD CONSTRAINT orders_status_check
        CHECK (status IN ('AWAITING_PAYMENT', 'CONFIRMED', 'PAYMENT_FAILED', 'EXPIRED', 'CANCELLED', 'REFUNDED')),
    ADD COLUMN refunded_at timestamptz;

ALTER TABLE tickets DROP CONSTRAINT tickets_status_check,
    ADD CONSTRAINT tickets_status_check CHECK (status IN ('VALID', 'USED', 'VOID')),
    ADD COLUMN used_at timestamptz;
DROP INDEX tickets_one_valid;
CREATE UNIQUE INDEX tickets_one_valid ON tickets (event_id, inventory_id) WHERE status IN ('VALID', 'USED');

-- +goose StatementBegin
CREATE FUNCTION holds_refuse_cancelled_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM events WHERE id = NEW.event_id AND cancelled_at IS NOT NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'sale_not_open';
    END IF;
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER holds_refuse_cancelled_event BEFORE INSERT ON holds
    FOR EACH ROW EXECUTE FUNCTION holds_refuse_cancelled_event();

-- +goose Down
DROP TRIGGER holds_refuse_cancelled_event ON holds;
DROP FUNCTION holds_refuse_cancelled_event();
DROP INDEX tickets_one_valid;
CREATE UNIQUE INDEX tickets_one_valid ON tickets (event_id, inventory_id) WHERE status = 'VALID';
ALTER TABLE tickets DROP COLUMN used_at, DROP CONSTRAINT tickets_status_check,
    ADD CONSTRAINT tickets_status_check CHECK (status IN ('VALID', 'VOID'));
ALTER TABLE orders DROP COLUMN refunded_at, DROP CONSTRAINT orders_status_check,
    ADD CONSTRAINT orders_status_check
        CHECK (status IN ('AWAITING_PAYMENT', 'CONFIRMED', 'PAYMENT_FAILED', 'EXPIRED', 'CANCELLED'));
ALTER TABLE events DROP COLUMN cancel_reason, DROP COLUMN cancelled_at, DROP COLUMN refund_deadline;
