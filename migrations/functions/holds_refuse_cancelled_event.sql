-- A hold of a cancelled event (events.cancelled_at, set by cancelEvent) is
-- refused; hold_create then reports sale_not_open.
CREATE OR REPLACE FUNCTION holds_refuse_cancelled_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM events WHERE id = NEW.event_id AND cancelled_at IS NOT NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'sale_not_open';
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER holds_refuse_cancelled_event BEFORE INSERT ON holds
    FOR EACH ROW EXECUTE FUNCTION holds_refuse_cancelled_event();
