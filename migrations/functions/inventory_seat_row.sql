-- An inventory row of a seat carries the seat's row_index (seat_row, 00022),
-- so that hold_create's best-available search reads the unsold seats of a
-- row from one index (inventory_open_seats) without reading the sold ones.
-- Seats never move between rows, so it is copied once, on insert, whoever
-- inserts the row (store.CreateEvent, fixtures, benches).
CREATE OR REPLACE FUNCTION inventory_seat_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seat_id IS NOT NULL THEN
        SELECT row_index INTO NEW.seat_row FROM seats WHERE id = NEW.seat_id;
    ELSE
        NEW.seat_row := NULL;
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER inventory_seat_row BEFORE INSERT ON inventory
    FOR EACH ROW EXECUTE FUNCTION inventory_seat_row();
