-- Fewer writes per hold (issue #3's throughput). Measured with pgbench on
-- the bench database (bench/holds), each change A/B against the previous
-- function:
--
-- 1. Foreign keys of the rows a hold inserts are dropped where they point at
--    the hottest rows of a sale: holds.event_id -> events and
--    hold_items.{section_id, seat_id, (event_id, inventory_id)}. Each such
--    check takes a KEY SHARE lock on the referenced row, which writes that
--    row (a WAL record per seat row) and, as soon as two holds of one event
--    or section run at once, turns it into a MultiXact: every concurrent
--    buyer of a hot event was rewriting the same events and sections rows.
--    The items are copied, in the same transaction, from the inventory rows
--    the hold has just taken, and those rows keep their own foreign keys to
--    events, sections and seats, so nothing is lost; hold_items keeps its key
--    to holds (its own fresh row) and its exclusion constraint, and the
--    inventory row (one per seat, one hold_id) still makes a double hold
--    impossible. (+30% holds/s for one-seat holds at 32 pgbench clients.)
-- 2. Explicit seats are taken by one conditional UPDATE per seat in id order
--    instead of SELECT ... FOR UPDATE followed by one UPDATE: the row is
--    locked and written once instead of locked (a WAL record) and then
--    written. The order (inventory id) is the one every multi-row locker of
--    inventory uses (release, sale), so deadlock freedom is unchanged.
--
-- 3. The createHold idempotency key lives on the hold row (holds.
--    idempotency_key, request_hash, unique per owner) instead of a separate
--    idempotency_keys row: one heap tuple and one index entry fewer per
--    hold. The unused holds_event_owner index goes too (the hold limit counts
--    inventory rows). A duplicate request still waits for the first: the key
--    is looked up after the per-(user, event) advisory lock.
--
-- The function keeps its signature and its outcomes, so the Go side is
-- unchanged.
-- +goose Up
ALTER TABLE holds DROP CONSTRAINT holds_event_id_fkey;
ALTER TABLE hold_items DROP CONSTRAINT hold_items_section_id_fkey,
                       DROP CONSTRAINT hold_items_seat_id_fkey,
                       DROP CONSTRAINT hold_items_event_id_inventory_id_fkey;

ALTER TABLE holds ADD COLUMN idempotency_key text CHECK (idempotency_key <> ''),
                  ADD COLUMN request_hash bytea;
UPDATE holds h SET idempotency_key = k.key, request_hash = k.request_hash
FROM idempotency_keys k
WHERE k.operation = 'createHold' AND k.resource_id = h.id AND k.owner = h.owner;
DELETE FROM idempotency_keys WHERE operation = 'createHold';
CREATE UNIQUE INDEX holds_owner_key ON holds (owner, idempotency_key);
DROP INDEX holds_event_owner;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hold_create(
    p_owner text, p_key text, p_hash bytea, p_hold uuid, p_event uuid,
    p_seats uuid[], p_best_qty int, p_best_section uuid, p_best_adjacent boolean, p_best_retries int,
    p_ga_sections uuid[], p_ga_qty int[], p_admitted boolean,
    OUT o_outcome text, OUT o_resource uuid, OUT o_expires_at timestamptz, OUT o_created_at timestamptz,
    OUT o_total bigint, OUT o_currency text, OUT o_seats uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    ev       record;
    v_prev   record;
    v_qty    int := coalesce(cardinality(p_seats), 0) + coalesce(p_best_qty, 0);
    v_q      int;
    v_count  int;
    v_ids    bigint[];
    v_id     bigint;
    v_run    bigint[];
    v_got    bigint[];
    v_best   bigint[];
    v_excl   bigint[] := '{}';
    v_n      int;
    v_items  int;
    v_priced int;
    v_curr   int;
BEGIN
    FOREACH v_q IN ARRAY coalesce(p_ga_qty, '{}') LOOP
        v_qty := v_qty + v_q;
    END LOOP;
    -- 1. One user's holds of one event run one at a time (the limit below
    -- is then exact, and a concurrent duplicate of this request waits here
    -- for this transaction).
    PERFORM pg_advisory_xact_lock(hashtextextended(p_event::text || ':' || p_owner, 0));

    -- 2. The idempotency key, kept on the hold itself: a new statement after
    -- the lock, so it sees a duplicate that committed while we waited. Two
    -- requests with one key for different events do not share the lock;
    -- the second fails on holds_owner_key and the caller runs it again
    -- (it then reads 'reused').
    SELECT h.id, h.request_hash INTO v_prev FROM holds h
    WHERE h.owner = p_owner AND h.idempotency_key = p_key;
    IF FOUND THEN
        o_outcome := CASE WHEN v_prev.request_hash = p_hash THEN 'replay' ELSE 'reused' END;
        o_resource := v_prev.id;
        RETURN;
    END IF;

    -- 3. The event's conditions by the database clock.
    SELECT e.max_tickets_per_user AS max_tickets, e.queue_required,
           e.sale_starts_at <= now() AND (e.sale_ends_at IS NULL OR now() < e.sale_ends_at) AS sale_open,
           now() + make_interval(secs => e.hold_duration_seconds) AS expires_at
    INTO ev
    FROM events e
    WHERE e.id = p_event;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'event_not_found';
    END IF;
    IF NOT ev.sale_open THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'sale_not_open';
    END IF;
    IF ev.queue_required AND NOT p_admitted THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'queue_admission_required';
    END IF;
    -- It sees every hold committed by the user's earlier transactions.
    SELECT count(*) INTO v_count FROM inventory
    WHERE event_id = p_event AND owner = p_owner
      AND (status = 'SOLD' OR (status = 'HELD' AND expires_at > now()));
    IF v_count + v_qty > ev.max_tickets THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'hold_limit', DETAIL = ev.max_tickets::text;
    END IF;

    -- 4. Explicit seats, all holdable or none: each row is taken by its own
    -- conditional UPDATE, one at a time in id order (the order every
    -- multi-row locker of inventory uses: no deadlock whatever order the
    -- client listed them in). The UPDATE locks and writes the row at once;
    -- a refusal rolls back the rows taken before it.
    IF coalesce(cardinality(p_seats), 0) > 0 THEN
        SELECT coalesce(array_agg(i.id ORDER BY i.id), '{}') INTO v_ids
        FROM inventory i WHERE i.event_id = p_event AND i.seat_id = ANY (p_seats);
        IF cardinality(v_ids) < cardinality(ARRAY(SELECT DISTINCT s FROM unnest(p_seats) s)) THEN
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'unknown_seats',
                DETAIL = array_to_string(ARRAY(SELECT s FROM unnest(p_seats) WITH ORDINALITY t(s, n)
                                               WHERE NOT EXISTS (SELECT 1 FROM inventory i
                                                                 WHERE i.event_id = p_event AND i.seat_id = s)
                                               ORDER BY n), ',');
        END IF;
        FOREACH v_id IN ARRAY v_ids LOOP
            UPDATE inventory
            SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
                version = nextval('inventory_version_seq'), updated_at = now()
            WHERE event_id = p_event AND id = v_id
              AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()));
            IF NOT FOUND THEN
                -- Every requested seat not holdable now (this one included,
                -- whatever it reads after the wait), ours excepted.
                RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'seats_unavailable',
                    DETAIL = array_to_string(ARRAY(
                        SELECT s FROM unnest(p_seats) WITH ORDINALITY t(s, n)
                        JOIN inventory i ON i.event_id = p_event AND i.seat_id = s
                        WHERE i.id = v_id
                           OR (i.hold_id IS DISTINCT FROM p_hold
                               AND NOT (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now())))
                        ORDER BY n), ',');
            END IF;
        END LOOP;
    END IF;

    -- 5. Best available: candidates locked with SKIP LOCKED, so concurrent
    -- buyers pick different seats instead of queueing; a run partly taken
    -- meanwhile is excluded and the pick retried.
    IF coalesce(p_best_qty, 0) > 0 THEN
        IF p_best_adjacent THEN
            FOR k IN 1 .. p_best_retries LOOP
                -- The best run of p_best_qty consecutive holdable seats in one
                -- row: lowest row_index, then nearest the row's centre.
                WITH free AS (
                    SELECT i.id, s.section_id, s.row_index, s.row_label, s.number,
                           s.number - row_number() OVER (PARTITION BY s.section_id, s.row_index, s.row_label ORDER BY s.number) AS grp
                    FROM inventory i JOIN seats s ON s.id = i.seat_id
                    WHERE i.event_id = p_event AND i.seat_id IS NOT NULL
                      AND (p_best_section IS NULL OR i.section_id = p_best_section)
                      AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
                      AND NOT (i.id = ANY (v_excl))
                ), runs AS (
                    SELECT section_id, row_index, row_label, number AS first,
                           lead(number, p_best_qty - 1) OVER (PARTITION BY section_id, row_index, row_label, grp ORDER BY number) AS last
                    FROM free
                ), best AS (
                    SELECT r.* FROM runs r
                    CROSS JOIN LATERAL (
                        SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
                        WHERE section_id = r.section_id AND row_index = r.row_index AND row_label = r.row_label) c
                    WHERE r.last IS NOT NULL
                    ORDER BY r.row_index, abs((r.first + r.last) / 2.0 - c.center), r.section_id, r.first
                    LIMIT 1
                )
                SELECT array_agg(f.id ORDER BY f.id) INTO v_run
                FROM free f JOIN best b
                  ON f.section_id = b.section_id AND f.row_index = b.row_index AND f.row_label = b.row_label
                 AND f.number BETWEEN b.first AND b.last;
                EXIT WHEN v_run IS NULL;
                SELECT coalesce(array_agg(l.id), '{}') INTO v_got
                FROM (SELECT id FROM inventory
                      WHERE event_id = p_event AND id = ANY (v_run)
                        AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()))
                      ORDER BY id FOR UPDATE SKIP LOCKED) l;
                IF cardinality(v_got) = cardinality(v_run) THEN
                    v_best := v_run;
                    EXIT;
                END IF;
                v_excl := v_excl || ARRAY(SELECT x FROM unnest(v_run) x WHERE x <> ALL (v_got));
            END LOOP;
        ELSE
            -- The best holdable seats anywhere: front rows, then central.
            SELECT array_agg(b.id) INTO v_best FROM (
                SELECT i.id FROM inventory i JOIN seats s ON s.id = i.seat_id
                CROSS JOIN LATERAL (
                    SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
                    WHERE section_id = s.section_id AND row_index = s.row_index AND row_label = s.row_label) c
                WHERE i.event_id = p_event AND i.seat_id IS NOT NULL
                  AND (p_best_section IS NULL OR i.section_id = p_best_section)
                  AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
                ORDER BY s.row_index, abs(s.number - c.center), i.id
                LIMIT p_best_qty
                FOR UPDATE OF i SKIP LOCKED) b;
            IF coalesce(cardinality(v_best), 0) < p_best_qty THEN
                v_best := NULL;
            END IF;
        END IF;
        IF v_best IS NOT NULL THEN
            UPDATE inventory
            SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
                version = nextval('inventory_version_seq'), updated_at = now()
            WHERE event_id = p_event AND id = ANY (v_best)
              AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()));
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
        IF v_best IS NULL OR v_n < cardinality(v_best) THEN -- the latter cannot happen: the rows are locked
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'best_unavailable',
                DETAIL = coalesce(p_best_section::text, '');
        END IF;
    END IF;

    -- 6. General admission: unit rows picked FOR UPDATE SKIP LOCKED
    -- (AVAILABLE first, in index order), so buyers of a hot floor take
    -- different units instead of queueing on one row. The CTE is
    -- materialised: an IN (subquery LIMIT) may be re-scanned and take more.
    FOR k IN 1 .. coalesce(cardinality(p_ga_sections), 0) LOOP
        WITH picked AS MATERIALIZED (
            SELECT id FROM inventory
            WHERE event_id = p_event AND section_id = p_ga_sections[k] AND unit_no IS NOT NULL
              AND status IN ('AVAILABLE', 'HELD')
              AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()))
            ORDER BY status, id
            LIMIT p_ga_qty[k]
            FOR UPDATE SKIP LOCKED
        )
        UPDATE inventory i
        SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
            version = nextval('inventory_version_seq'), updated_at = now()
        FROM picked
        WHERE i.event_id = p_event AND i.id = picked.id;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n < p_ga_qty[k] THEN
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'ga_unavailable', DETAIL = p_ga_sections[k]::text;
        END IF;
    END LOOP;

    -- 7. The hold, its items with the prices captured now, and the outbox
    -- message, from the rows this transaction HELD. Item periods start at
    -- clock_timestamp(), after the commit of any cancellation this
    -- transaction waited for, so a cancelled item's cut period never
    -- overlaps the new one.
    -- One statement; a shortfall found afterwards rolls it back with the rest.
    WITH u AS (
        SELECT i.id, i.section_id, i.seat_id, i.version, p.amount, p.currency
        FROM inventory i LEFT JOIN event_prices p ON p.event_id = i.event_id AND p.section_id = i.section_id
        WHERE i.event_id = p_event AND i.hold_id = p_hold AND i.status = 'HELD'
    ), s AS (
        SELECT count(*) AS n, count(amount) AS priced, count(DISTINCT currency) AS currencies,
               coalesce(sum(amount), 0) AS total, coalesce(min(currency), 'XXX') AS currency,
               coalesce(array_agg(seat_id) FILTER (WHERE seat_id IS NOT NULL), '{}') AS seats,
               coalesce(jsonb_agg(jsonb_build_object('seatId', seat_id, 'sectionId', section_id,
                                                     'status', 'HELD', 'version', version))
                        FILTER (WHERE seat_id IS NOT NULL), '[]') AS seats_json
        FROM u
    ), ga AS ( -- GA sections changed, with their highest new version
        SELECT coalesce(jsonb_agg(jsonb_build_object('sectionId', section_id, 'version', version)), '[]') AS j
        FROM (SELECT section_id, max(version) AS version FROM u WHERE seat_id IS NULL GROUP BY section_id) g
    ), h AS (
        INSERT INTO holds (id, event_id, owner, status, expires_at, total_amount, currency, idempotency_key, request_hash)
        SELECT p_hold, p_event, p_owner, 'ACTIVE', ev.expires_at, s.total, s.currency, p_key, p_hash FROM s
        RETURNING created_at
    ), hi AS (
        INSERT INTO hold_items (hold_id, event_id, inventory_id, section_id, seat_id, price_amount, currency, period)
        SELECT p_hold, p_event, id, section_id, seat_id, amount, currency,
               tstzrange(least(clock_timestamp(), ev.expires_at), ev.expires_at)
        FROM u WHERE amount IS NOT NULL
    ), o AS (
        INSERT INTO outbox (event_id, topic, payload)
        SELECT p_event, 'inventory', jsonb_build_object('eventId', p_event, 'kind', 'hold', 'holdId', p_hold,
                                                        'seats', s.seats_json, 'ga', ga.j)
        FROM s, ga
    )
    SELECT s.n, s.priced, s.currencies, s.total, s.currency, s.seats, h.created_at
    INTO v_items, v_priced, v_curr, o_total, o_currency, o_seats, o_created_at
    FROM s, h;
    IF v_priced < v_items OR v_curr > 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'unpriced';
    END IF;
    o_outcome := 'created';
    o_resource := p_hold;
    o_expires_at := ev.expires_at;
END
$$;
-- +goose StatementEnd

-- +goose Down
INSERT INTO idempotency_keys (owner, operation, key, request_hash, resource_id, created_at)
SELECT owner, 'createHold', idempotency_key, request_hash, id, created_at FROM holds
WHERE idempotency_key IS NOT NULL;
DROP INDEX holds_owner_key;
ALTER TABLE holds DROP COLUMN idempotency_key, DROP COLUMN request_hash;
CREATE INDEX holds_event_owner ON holds (event_id, owner);
ALTER TABLE holds ADD CONSTRAINT holds_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id);
ALTER TABLE hold_items ADD CONSTRAINT hold_items_section_id_fkey FOREIGN KEY (section_id) REFERENCES sections (id),
                       ADD CONSTRAINT hold_items_seat_id_fkey FOREIGN KEY (seat_id) REFERENCES seats (id),
                       ADD CONSTRAINT hold_items_event_id_inventory_id_fkey FOREIGN KEY (event_id, inventory_id) REFERENCES inventory (event_id, id);
-- The function as in 00010.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION hold_create(
    p_owner text, p_key text, p_hash bytea, p_hold uuid, p_event uuid,
    p_seats uuid[], p_best_qty int, p_best_section uuid, p_best_adjacent boolean, p_best_retries int,
    p_ga_sections uuid[], p_ga_qty int[], p_admitted boolean,
    OUT o_outcome text, OUT o_resource uuid, OUT o_expires_at timestamptz, OUT o_created_at timestamptz,
    OUT o_total bigint, OUT o_currency text, OUT o_seats uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    ev       record;
    v_prev   record;
    v_qty    int := coalesce(cardinality(p_seats), 0) + coalesce(p_best_qty, 0);
    v_q      int;
    v_count  int;
    v_known  uuid[];
    v_taken  uuid[];
    v_run    bigint[];
    v_got    bigint[];
    v_best   bigint[];
    v_excl   bigint[] := '{}';
    v_n      int;
    v_items  int;
    v_priced int;
    v_curr   int;
BEGIN
    FOREACH v_q IN ARRAY coalesce(p_ga_qty, '{}') LOOP
        v_qty := v_qty + v_q;
    END LOOP;
    -- 1. The idempotency key, first: a concurrent duplicate waits here for
    -- this transaction and then reads its result.
    INSERT INTO idempotency_keys (owner, operation, key, request_hash, resource_id)
    VALUES (p_owner, 'createHold', p_key, p_hash, p_hold)
    ON CONFLICT (owner, operation, key) DO NOTHING;
    IF NOT FOUND THEN
        SELECT k.request_hash, k.resource_id INTO v_prev FROM idempotency_keys k
        WHERE k.owner = p_owner AND k.operation = 'createHold' AND k.key = p_key;
        o_outcome := CASE WHEN v_prev.request_hash = p_hash THEN 'replay' ELSE 'reused' END;
        o_resource := v_prev.resource_id;
        RETURN;
    END IF;

    -- 2. One user's holds of one event run one at a time (the limit below
    -- is then exact), the event's conditions by the database clock.
    SELECT e.max_tickets_per_user AS max_tickets, e.queue_required,
           e.sale_starts_at <= now() AND (e.sale_ends_at IS NULL OR now() < e.sale_ends_at) AS sale_open,
           now() + make_interval(secs => e.hold_duration_seconds) AS expires_at
    INTO ev
    FROM (SELECT pg_advisory_xact_lock(hashtextextended(p_event::text || ':' || p_owner, 0))) l, events e
    WHERE e.id = p_event;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'event_not_found';
    END IF;
    IF NOT ev.sale_open THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'sale_not_open';
    END IF;
    IF ev.queue_required AND NOT p_admitted THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'queue_admission_required';
    END IF;
    -- A new statement after the lock: it sees every hold committed by the
    -- user's earlier transactions.
    SELECT count(*) INTO v_count FROM inventory
    WHERE event_id = p_event AND owner = p_owner
      AND (status = 'SOLD' OR (status = 'HELD' AND expires_at > now()));
    IF v_count + v_qty > ev.max_tickets THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'hold_limit', DETAIL = ev.max_tickets::text;
    END IF;

    -- 3. Explicit seats: locked in id order (no deadlock whatever order the
    -- client listed them in), all holdable or none.
    IF coalesce(cardinality(p_seats), 0) > 0 THEN
        SELECT coalesce(array_agg(l.seat_id), '{}'), coalesce(array_agg(l.seat_id) FILTER (WHERE NOT l.ok), '{}')
        INTO v_known, v_taken
        FROM (SELECT i.seat_id, (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now())) AS ok
              FROM inventory i WHERE i.event_id = p_event AND i.seat_id = ANY (p_seats)
              ORDER BY i.id FOR UPDATE) l;
        IF cardinality(v_known) < cardinality(p_seats) THEN
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'unknown_seats',
                DETAIL = array_to_string(ARRAY(SELECT s FROM unnest(p_seats) WITH ORDINALITY t(s, n)
                                               WHERE s <> ALL (v_known) ORDER BY n), ',');
        END IF;
        IF cardinality(v_taken) > 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'seats_unavailable',
                DETAIL = array_to_string(ARRAY(SELECT s FROM unnest(p_seats) WITH ORDINALITY t(s, n)
                                               WHERE s = ANY (v_taken) ORDER BY n), ',');
        END IF;
        UPDATE inventory
        SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
            version = nextval('inventory_version_seq'), updated_at = now()
        WHERE event_id = p_event AND seat_id = ANY (p_seats)
          AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()));
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n < cardinality(p_seats) THEN -- cannot happen: the rows are locked and holdable
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'seats_unavailable';
        END IF;
    END IF;

    -- 4. Best available: candidates locked with SKIP LOCKED, so concurrent
    -- buyers pick different seats instead of queueing; a run partly taken
    -- meanwhile is excluded and the pick retried.
    IF coalesce(p_best_qty, 0) > 0 THEN
        IF p_best_adjacent THEN
            FOR k IN 1 .. p_best_retries LOOP
                -- The best run of p_best_qty consecutive holdable seats in one
                -- row: lowest row_index, then nearest the row's centre.
                WITH free AS (
                    SELECT i.id, s.section_id, s.row_index, s.row_label, s.number,
                           s.number - row_number() OVER (PARTITION BY s.section_id, s.row_index, s.row_label ORDER BY s.number) AS grp
                    FROM inventory i JOIN seats s ON s.id = i.seat_id
                    WHERE i.event_id = p_event AND i.seat_id IS NOT NULL
                      AND (p_best_section IS NULL OR i.section_id = p_best_section)
                      AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
                      AND NOT (i.id = ANY (v_excl))
                ), runs AS (
                    SELECT section_id, row_index, row_label, number AS first,
                           lead(number, p_best_qty - 1) OVER (PARTITION BY section_id, row_index, row_label, grp ORDER BY number) AS last
                    FROM free
                ), best AS (
                    SELECT r.* FROM runs r
                    CROSS JOIN LATERAL (
                        SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
                        WHERE section_id = r.section_id AND row_index = r.row_index AND row_label = r.row_label) c
                    WHERE r.last IS NOT NULL
                    ORDER BY r.row_index, abs((r.first + r.last) / 2.0 - c.center), r.section_id, r.first
                    LIMIT 1
                )
                SELECT array_agg(f.id ORDER BY f.id) INTO v_run
                FROM free f JOIN best b
                  ON f.section_id = b.section_id AND f.row_index = b.row_index AND f.row_label = b.row_label
                 AND f.number BETWEEN b.first AND b.last;
                EXIT WHEN v_run IS NULL;
                SELECT coalesce(array_agg(l.id), '{}') INTO v_got
                FROM (SELECT id FROM inventory
                      WHERE event_id = p_event AND id = ANY (v_run)
                        AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()))
                      ORDER BY id FOR UPDATE SKIP LOCKED) l;
                IF cardinality(v_got) = cardinality(v_run) THEN
                    v_best := v_run;
                    EXIT;
                END IF;
                v_excl := v_excl || ARRAY(SELECT x FROM unnest(v_run) x WHERE x <> ALL (v_got));
            END LOOP;
        ELSE
            -- The best holdable seats anywhere: front rows, then central.
            SELECT array_agg(b.id) INTO v_best FROM (
                SELECT i.id FROM inventory i JOIN seats s ON s.id = i.seat_id
                CROSS JOIN LATERAL (
                    SELECT (min(number) + max(number)) / 2.0 AS center FROM seats
                    WHERE section_id = s.section_id AND row_index = s.row_index AND row_label = s.row_label) c
                WHERE i.event_id = p_event AND i.seat_id IS NOT NULL
                  AND (p_best_section IS NULL OR i.section_id = p_best_section)
                  AND (i.status = 'AVAILABLE' OR (i.status = 'HELD' AND i.expires_at <= now()))
                ORDER BY s.row_index, abs(s.number - c.center), i.id
                LIMIT p_best_qty
                FOR UPDATE OF i SKIP LOCKED) b;
            IF coalesce(cardinality(v_best), 0) < p_best_qty THEN
                v_best := NULL;
            END IF;
        END IF;
        IF v_best IS NOT NULL THEN
            UPDATE inventory
            SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
                version = nextval('inventory_version_seq'), updated_at = now()
            WHERE event_id = p_event AND id = ANY (v_best)
              AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()));
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
        IF v_best IS NULL OR v_n < cardinality(v_best) THEN -- the latter cannot happen: the rows are locked
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'best_unavailable',
                DETAIL = coalesce(p_best_section::text, '');
        END IF;
    END IF;

    -- 5. General admission: unit rows picked FOR UPDATE SKIP LOCKED
    -- (AVAILABLE first, in index order), so buyers of a hot floor take
    -- different units instead of queueing on one row. The CTE is
    -- materialised: an IN (subquery LIMIT) may be re-scanned and take more.
    FOR k IN 1 .. coalesce(cardinality(p_ga_sections), 0) LOOP
        WITH picked AS MATERIALIZED (
            SELECT id FROM inventory
            WHERE event_id = p_event AND section_id = p_ga_sections[k] AND unit_no IS NOT NULL
              AND status IN ('AVAILABLE', 'HELD')
              AND (status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now()))
            ORDER BY status, id
            LIMIT p_ga_qty[k]
            FOR UPDATE SKIP LOCKED
        )
        UPDATE inventory i
        SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
            version = nextval('inventory_version_seq'), updated_at = now()
        FROM picked
        WHERE i.event_id = p_event AND i.id = picked.id;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n < p_ga_qty[k] THEN
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'ga_unavailable', DETAIL = p_ga_sections[k]::text;
        END IF;
    END LOOP;

    -- 6. The hold, its items with the prices captured now, and the outbox
    -- message, from the rows this transaction HELD. Item periods start at
    -- clock_timestamp(), after the commit of any cancellation this
    -- transaction waited for, so a cancelled item's cut period never
    -- overlaps the new one.
    -- One statement; a shortfall found afterwards rolls it back with the rest.
    WITH u AS (
        SELECT i.id, i.section_id, i.seat_id, i.version, p.amount, p.currency
        FROM inventory i LEFT JOIN event_prices p ON p.event_id = i.event_id AND p.section_id = i.section_id
        WHERE i.event_id = p_event AND i.hold_id = p_hold AND i.status = 'HELD'
    ), s AS (
        SELECT count(*) AS n, count(amount) AS priced, count(DISTINCT currency) AS currencies,
               coalesce(sum(amount), 0) AS total, coalesce(min(currency), 'XXX') AS currency,
               coalesce(array_agg(seat_id) FILTER (WHERE seat_id IS NOT NULL), '{}') AS seats,
               coalesce(jsonb_agg(jsonb_build_object('seatId', seat_id, 'sectionId', section_id,
                                                     'status', 'HELD', 'version', version))
                        FILTER (WHERE seat_id IS NOT NULL), '[]') AS seats_json
        FROM u
    ), ga AS ( -- GA sections changed, with their highest new version
        SELECT coalesce(jsonb_agg(jsonb_build_object('sectionId', section_id, 'version', version)), '[]') AS j
        FROM (SELECT section_id, max(version) AS version FROM u WHERE seat_id IS NULL GROUP BY section_id) g
    ), h AS (
        INSERT INTO holds (id, event_id, owner, status, expires_at, total_amount, currency)
        SELECT p_hold, p_event, p_owner, 'ACTIVE', ev.expires_at, s.total, s.currency FROM s
        RETURNING created_at
    ), hi AS (
        INSERT INTO hold_items (hold_id, event_id, inventory_id, section_id, seat_id, price_amount, currency, period)
        SELECT p_hold, p_event, id, section_id, seat_id, amount, currency,
               tstzrange(least(clock_timestamp(), ev.expires_at), ev.expires_at)
        FROM u WHERE amount IS NOT NULL
    ), o AS (
        INSERT INTO outbox (event_id, topic, payload)
        SELECT p_event, 'inventory', jsonb_build_object('eventId', p_event, 'kind', 'hold', 'holdId', p_hold,
                                                        'seats', s.seats_json, 'ga', ga.j)
        FROM s, ga
    )
    SELECT s.n, s.priced, s.currencies, s.total, s.currency, s.seats, h.created_at
    INTO v_items, v_priced, v_curr, o_total, o_currency, o_seats, o_created_at
    FROM s, h;
    IF v_priced < v_items OR v_curr > 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'unpriced';
    END IF;
    o_outcome := 'created';
    o_resource := p_hold;
    o_expires_at := ev.expires_at;
END
$$;
-- +goose StatementEnd
