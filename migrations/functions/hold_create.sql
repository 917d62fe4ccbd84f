-- hold_create: the hold decision, createHold in one round trip (holds.Service
-- calls it; applied by store.Migrate with CREATE OR REPLACE after the
-- numbered migrations, so this file is the only body).
--
-- It runs, in one statement sent outside an explicit transaction (its
-- implicit transaction commits when it returns), the numbered steps below:
--   1. the per-(user, event) advisory lock;
--   2. the idempotency key, the event and the user's ticket count in one
--      statement (a generic plan);
--   3. the refusals of the event: event_not_found, sale_not_open,
--      queue_admission_required, hold_limit (DETAIL: the limit);
--   4. explicit seats: one conditional UPDATE per seat in inventory id order
--      (the order every multi-row locker of inventory uses): unknown_seats,
--      seats_unavailable (DETAIL: the seat ids);
--   5. best available: picked by hold_pick_best (below), one row_index at
--      a time, front to back (from the caller's hint p_best_from, then the
--      rows before it), among the rows' unsold seats, SKIP LOCKED, retried
--      p_best_retries times: best_unavailable;
--   6. general admission: units picked by inventory_ga_pick, SKIP LOCKED,
--      from a random unit on, then expired holds: ga_unavailable (DETAIL:
--      the section id);
--   7. the hold, its items (prices captured) and the outbox message:
--      unpriced.
-- "Holdable" is inventory_holdable (inventory_holdable.sql), judged by now().
--
-- A refusal raises SQLSTATE TKH00 with the reason as the message (named in
-- Go as store.Refusal*; store's TestRefusalsAreTheSQLs checks the lists
-- agree) and the ids concerned (or the limit) in DETAIL, so
-- everything the call wrote, including the idempotency key, is rolled back.
-- An idempotent replay returns outcome 'replay' (or 'reused' when the
-- arguments differ) and the first hold's id, without writing.
--
-- Performance notes (measured with bench/holds): no foreign key from the
-- rows a hold inserts to the hottest rows of a sale; the inventory UPDATE is
-- a HOT update (see the inventory table in 00020_baseline.sql); a one-seat
-- hold finds its inventory id by a scalar lookup whose plan is cached.
-- The centre of a row of seats (its lowest and highest numbers, whatever
-- their inventory), which best-available seats are nearest to: two probes
-- of seats' (section_id, row_label, number) index.
CREATE OR REPLACE FUNCTION row_centre(p_section uuid, p_row int, p_label text) RETURNS numeric
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT ((SELECT number FROM seats WHERE section_id = p_section AND row_label = p_label AND row_index = p_row
             ORDER BY number LIMIT 1)
          + (SELECT number FROM seats WHERE section_id = p_section AND row_label = p_label AND row_index = p_row
             ORDER BY number DESC LIMIT 1)) / 2.0
$$;

-- The first row_index after p_after with an unsold seat of the event (in
-- any section), or NULL: one probe of inventory_open_seats.
CREATE OR REPLACE FUNCTION next_open_row(p_event uuid, p_after int) RETURNS int
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT open_row FROM inventory
    WHERE event_id = p_event AND open_row > p_after
    ORDER BY open_row LIMIT 1
$$;

-- The row a best-available search reads after p_prev (NULL: its first),
-- among the rows with unsold seats, in the search's order: from the hint
-- p_from to the back, then from the front to the hint (without a hint,
-- front to back; row_index is never negative); NULL when none is left.
CREATE OR REPLACE FUNCTION next_best_row(p_event uuid, p_from int, p_prev int) RETURNS int
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    n int;
BEGIN
    IF p_prev IS NULL OR p_prev >= coalesce(p_from, 0) THEN -- from the hint to the back
        n := next_open_row(p_event, coalesce(p_prev, coalesce(p_from, 0) - 1));
        IF n IS NOT NULL OR p_from IS NULL THEN
            RETURN n;
        END IF;
        p_prev := -1; -- then from the front
    END IF;
    n := next_open_row(p_event, p_prev);
    RETURN CASE WHEN n < p_from THEN n END;
END
$$;

CREATE OR REPLACE FUNCTION hold_create(
    p_owner text, p_key text, p_hash bytea, p_hold uuid, p_event uuid,
    p_seats uuid[], p_best_qty int, p_best_section uuid, p_best_adjacent boolean, p_best_retries int,
    p_ga_sections uuid[], p_ga_qty int[], p_admitted boolean, p_best_from int,
    OUT o_outcome text, OUT o_resource uuid, OUT o_expires_at timestamptz, OUT o_created_at timestamptz,
    OUT o_total bigint, OUT o_currency text, OUT o_seats uuid[], OUT o_best_row int)
LANGUAGE plpgsql AS $$
DECLARE
    ev       record;
    v_qty    int := coalesce(cardinality(p_seats), 0) + coalesce(p_best_qty, 0);
    v_q      int;
    v_ids    bigint[];
    v_id     bigint;
    v_best   bigint[];
    v_all    bigint[] := '{}';
    v_asked  bigint;
    v_ga     bigint[];
    v_pick   bigint[];
    v_start  bigint;
    v_row    int;
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

    -- 2. One statement after the lock (so it sees a duplicate, and every
    -- hold of this user, committed while we waited) reads everything the
    -- decision needs: the idempotency key (kept on the hold itself), the
    -- event's conditions by the database clock, the user's held and sold
    -- tickets of the event. (A plan of its own, generic: it takes no
    -- array, so it is not planned again at every call.)
    -- Two requests with one key for different events do not share the
    -- lock; the second fails on holds_owner_key and the caller runs it
    -- again (it then reads 'reused').
    -- The user's tickets are found through their holds (holds_owner_key,
    -- then the items' keys): every inventory row HELD or SOLD with a
    -- hold_id was written by hold_create together with that hold (same
    -- owner, same event) and an item of it; inventory keeps no index on
    -- owner or hold_id (00014: they made every hold a non-HOT update).
    SELECT prev.id AS prev_id, prev.request_hash AS prev_hash, e.id IS NOT NULL AS event_found,
           e.max_tickets_per_user AS max_tickets, e.queue_required,
           event_sale_open(e.sale_starts_at, e.sale_ends_at) AS sale_open,
           now() + make_interval(secs => e.hold_duration_seconds) AS expires_at,
           (SELECT count(*)
            FROM holds h
            JOIN hold_items hi ON hi.hold_id = h.id
            JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
            WHERE h.owner = p_owner AND h.event_id = p_event
              AND i.hold_id = h.id AND i.owner = p_owner
              AND NOT inventory_holdable(i.status, i.expires_at)) AS taken
    INTO ev
    FROM (SELECT) one
    LEFT JOIN holds prev ON prev.owner = p_owner AND prev.idempotency_key = p_key
    LEFT JOIN events e ON e.id = p_event;
    IF ev.prev_id IS NOT NULL THEN
        o_outcome := CASE WHEN ev.prev_hash = p_hash THEN 'replay' ELSE 'reused' END;
        o_resource := ev.prev_id;
        RETURN;
    END IF;

    -- 3. The event's conditions and the user's limit.
    IF NOT ev.event_found THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'event_not_found';
    END IF;
    IF NOT ev.sale_open THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'sale_not_open';
    END IF;
    IF ev.queue_required AND NOT p_admitted THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'queue_admission_required';
    END IF;
    IF ev.taken + v_qty > ev.max_tickets THEN
        RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'hold_limit', DETAIL = ev.max_tickets::text;
    END IF;

    -- 4. Explicit seats, all holdable or none: each row is taken by its own
    -- conditional UPDATE, one at a time in id order (the order every
    -- multi-row locker of inventory uses: no deadlock whatever order the
    -- client listed them in). The UPDATE locks and writes the row at once;
    -- a refusal rolls back the rows taken before it.
    IF coalesce(cardinality(p_seats), 0) > 0 THEN
        -- The seats' inventory ids, in id order. One seat (the common case)
        -- by a scalar lookup whose plan is cached; several by ANY, which
        -- is planned for each call's array.
        IF cardinality(p_seats) = 1 THEN
            SELECT coalesce(array_agg(i.id), '{}'), 1 INTO v_ids, v_asked
            FROM inventory i WHERE i.event_id = p_event AND i.seat_id = p_seats[1];
        ELSE
            SELECT coalesce(array_agg(i.id ORDER BY i.id), '{}'), (SELECT count(DISTINCT s) FROM unnest(p_seats) s)
            INTO v_ids, v_asked
            FROM inventory i WHERE i.event_id = p_event AND i.seat_id = ANY (p_seats);
        END IF;
        IF cardinality(v_ids) < v_asked THEN
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
              AND inventory_holdable(status, expires_at);
            IF NOT FOUND THEN
                -- Every requested seat not holdable now (this one included,
                -- whatever it reads after the wait), ours excepted.
                RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'seats_unavailable',
                    DETAIL = array_to_string(ARRAY(
                        SELECT s FROM unnest(p_seats) WITH ORDINALITY t(s, n)
                        JOIN inventory i ON i.event_id = p_event AND i.seat_id = s
                        WHERE i.id = v_id
                           OR (i.hold_id IS DISTINCT FROM p_hold
                               AND NOT inventory_holdable(i.status, i.expires_at))
                        ORDER BY n), ',');
            END IF;
        END LOOP;
        v_all := v_ids;
    END IF;

    -- 5. Best available: the seats picked and locked by hold_pick_best
    -- (below), then taken.
    IF coalesce(p_best_qty, 0) > 0 THEN
        SELECT b.o_ids, b.o_row INTO v_best, o_best_row
        FROM hold_pick_best(p_event, p_best_qty, p_best_section, p_best_adjacent, p_best_retries, p_best_from) b;
        IF v_best IS NOT NULL THEN
            UPDATE inventory
            SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
                version = nextval('inventory_version_seq'), updated_at = now()
            WHERE event_id = p_event AND id = ANY (v_best)
              AND inventory_holdable(status, expires_at);
            GET DIAGNOSTICS v_n = ROW_COUNT;
            v_all := v_all || v_best;
        END IF;
        IF v_best IS NULL OR v_n < cardinality(v_best) THEN -- the latter cannot happen: the rows are locked
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'best_unavailable',
                DETAIL = coalesce(p_best_section::text, '');
        END IF;
    END IF;

    -- 6. General admission: unit rows picked FOR UPDATE SKIP LOCKED, so
    -- buyers of a hot floor take different units instead of queueing on one
    -- row: AVAILABLE units from a random unit of the section on, then those
    -- before it, then units whose hold has expired, earliest first. Each
    -- pass is a range of an index (inventory_ga_pick: ga_status, id;
    -- inventory_ga_expiry: ga_until), so a
    -- pick reads about as many entries as it takes whatever the floor's
    -- capacity and whatever was taken before (00021: it read the AVAILABLE
    -- entries from the first, over every unit taken since the last vacuum,
    -- then every HELD unit). Units are alike: which ones a buyer gets does
    -- not matter, only that they are holdable (checked again on the
    -- locked row).
    FOR k IN 1 .. coalesce(cardinality(p_ga_sections), 0) LOOP
        SELECT unit_no INTO v_row FROM inventory
        WHERE event_id = p_event AND section_id = p_ga_sections[k] AND unit_no IS NOT NULL
        ORDER BY unit_no DESC LIMIT 1;
        v_row := 1 + floor(random() * coalesce(v_row, 0))::int;
        SELECT id INTO v_start FROM inventory
        WHERE event_id = p_event AND section_id = p_ga_sections[k] AND unit_no = v_row;
        v_ga := '{}';
        FOR pass IN 1 .. 3 LOOP
            v_q := p_ga_qty[k] - cardinality(v_ga);
            EXIT WHEN v_q <= 0;
            IF pass < 3 THEN
                SELECT coalesce(array_agg(l.id), '{}') INTO v_pick FROM (
                    SELECT id FROM inventory
                    WHERE event_id = p_event AND section_id = p_ga_sections[k] AND unit_no IS NOT NULL
                      AND ga_status = 'AVAILABLE'
                      AND id >= CASE WHEN pass = 1 THEN coalesce(v_start, 0) ELSE 0 END
                      AND id < CASE WHEN pass = 1 THEN 9223372036854775807 ELSE coalesce(v_start, 0) END
                      AND inventory_holdable(status, expires_at)
                    ORDER BY id
                    LIMIT v_q
                    FOR UPDATE SKIP LOCKED) l;
            ELSE
                SELECT coalesce(array_agg(l.id), '{}') INTO v_pick FROM (
                    SELECT id FROM inventory
                    WHERE event_id = p_event AND section_id = p_ga_sections[k] AND unit_no IS NOT NULL
                      AND ga_until <= now()
                      AND inventory_holdable(status, expires_at)
                    ORDER BY ga_until, id
                    LIMIT v_q
                    FOR UPDATE SKIP LOCKED) l;
            END IF;
            v_ga := v_ga || v_pick;
        END LOOP;
        UPDATE inventory
        SET status = 'HELD', hold_id = p_hold, owner = p_owner, expires_at = ev.expires_at,
            version = nextval('inventory_version_seq'), updated_at = now()
        WHERE event_id = p_event AND id = ANY (v_ga);
        v_all := v_all || v_ga;
        IF cardinality(v_ga) < p_ga_qty[k] THEN
            RAISE EXCEPTION USING ERRCODE = 'TKH00', MESSAGE = 'ga_unavailable', DETAIL = p_ga_sections[k]::text;
        END IF;
    END LOOP;

    -- 7. The hold, its items with the prices captured now, and the outbox
    -- message, from the rows this transaction HELD (by their ids: there is
    -- no index on inventory.hold_id). Item periods start at
    -- clock_timestamp(), after the commit of any cancellation this
    -- transaction waited for, so a cancelled item's cut period never
    -- overlaps the new one.
    -- One statement; a shortfall found afterwards rolls it back with the rest.
    -- The outbox message is an outbox.InventoryChange (outbox/inventory.go)
    -- of kind 'hold': {eventId, kind, holdId, seats: [{seatId, sectionId,
    -- status 'HELD', version}], ga: [{sectionId}]}, the same as
    -- outbox.NewInventoryChange builds (checked by a test in holds/).
    WITH u AS (
        SELECT i.id, i.section_id, i.seat_id, i.version, p.amount, p.currency
        FROM inventory i LEFT JOIN event_prices p ON p.event_id = i.event_id AND p.section_id = i.section_id
        WHERE i.event_id = p_event AND i.id = ANY (v_all) AND i.hold_id = p_hold AND i.status = 'HELD'
    ), s AS (
        SELECT count(*) AS n, count(amount) AS priced, count(DISTINCT currency) AS currencies,
               coalesce(sum(amount), 0) AS total, coalesce(min(currency), 'XXX') AS currency,
               coalesce(array_agg(seat_id) FILTER (WHERE seat_id IS NOT NULL), '{}') AS seats,
               coalesce(jsonb_agg(jsonb_build_object('seatId', seat_id, 'sectionId', section_id,
                                                     'status', 'HELD', 'version', version))
                        FILTER (WHERE seat_id IS NOT NULL), '[]') AS seats_json
        FROM u
    ), ga AS ( -- GA sections changed, each once
        SELECT coalesce(jsonb_agg(jsonb_build_object('sectionId', section_id)), '[]') AS j
        FROM (SELECT DISTINCT section_id FROM u WHERE seat_id IS NULL) g
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

-- hold_pick_best: hold_create's step 5, the best-available pick. Candidates
-- are locked with SKIP LOCKED, so concurrent buyers pick different seats
-- instead of queueing; a run partly taken meanwhile is excluded and the
-- pick retried. Returns the locked inventory ids (NULL when there are not
-- enough) and the row where seats were found (the caller's next hint).
--
-- Its statements run once per row searched, with that row as a parameter:
-- planned for each call (Postgres's default for a plan whose parameters
-- change), planning cost more than running them (a search of 26 rows late
-- in a sale: 9-13 ms, 2 ms with generic plans; bench/RESULTS.md,
-- 2026-12-04), hence plan_cache_mode here and only here.
CREATE OR REPLACE FUNCTION hold_pick_best(
    p_event uuid, p_best_qty int, p_best_section uuid, p_best_adjacent boolean, p_best_retries int, p_best_from int,
    OUT o_ids bigint[], OUT o_row int)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_secs  uuid[];
    v_row   int;
    v_run   bigint[];
    v_got   bigint[];
    v_best  bigint[];
    v_excl  bigint[] := '{}';
BEGIN
    -- The candidate sections: those of the event's venue, or the one asked
    -- for.
    SELECT coalesce(array_agg(sc.id), '{}') INTO v_secs
    FROM events e JOIN sections sc ON sc.venue_id = e.venue_id
    WHERE e.id = p_event AND (p_best_section IS NULL OR sc.id = p_best_section);
    -- The rows searched are those that still have unsold seats of this
    -- event, in any section, each found by one probe of
    -- inventory_open_seats (00022, next_best_row), so the rows sold out are
    -- never read (00021 listed every row of the sections from seats and
    -- read each seat of each row it searched: late in a sale, 25-42 ms to
    -- find or miss a handful of free seats). They are walked from the
    -- caller's hint, p_best_from, to the back, then from the front to the
    -- hint: the hint is the row where a recent search of this event found
    -- seats (holds.Service keeps it for ten seconds, then searches from the
    -- front again), so a hinted search does not read the rows in front of
    -- it, whose unsold seats are likely held; it still finds seats
    -- wherever some are free. Without a hint, from the front (row_index is
    -- never negative).
    -- In each row, the candidates are its holdable seats, read from
    -- inventory_open_seats (a row's unsold seats); the row's centre
    -- (row_centre) counts all its seats, sold or not, and is computed
    -- once per row label that has candidates.
    IF p_best_adjacent THEN
        -- The best run of p_best_qty consecutive holdable seats in one
        -- row: lowest row_index, then nearest the row's centre. The
        -- lowest row_index with any such run holds the best one, so the
        -- rows are searched one row_index at a time, front to back, and
        -- the search stops at the first that has a run (00020: it read
        -- every seat of the section(s), and computed a row's centre once
        -- per candidate run, 1-2 s on a 20,000-seat section).
        FOR k IN 1 .. p_best_retries LOOP
            v_run := NULL;
            v_row := NULL;
            LOOP
                v_row := next_best_row(p_event, p_best_from, v_row);
                EXIT WHEN v_row IS NULL;
                WITH free AS (
                    SELECT i.id, i.section_id, s.row_label, s.number,
                           s.number - row_number() OVER (PARTITION BY i.section_id, s.row_label ORDER BY s.number) AS grp
                    FROM inventory i JOIN seats s ON s.id = i.seat_id
                    WHERE i.event_id = p_event AND i.open_row = v_row AND i.section_id = ANY (v_secs)
                      AND inventory_holdable(i.status, i.expires_at)
                      AND NOT (i.id = ANY (v_excl))
                ), runs AS (
                    SELECT section_id, row_label, number AS first,
                           lead(number, p_best_qty - 1) OVER (PARTITION BY section_id, row_label, grp ORDER BY number) AS last
                    FROM free
                ), centre AS MATERIALIZED ( -- once per row label, not per run
                    SELECT k.section_id, k.row_label, row_centre(k.section_id, v_row, k.row_label) AS center
                    FROM (SELECT DISTINCT section_id, row_label FROM runs WHERE last IS NOT NULL) k
                ), best AS (
                    SELECT r.* FROM runs r
                    JOIN centre c USING (section_id, row_label)
                    WHERE r.last IS NOT NULL
                    ORDER BY abs((r.first + r.last) / 2.0 - c.center), r.section_id, r.first
                    LIMIT 1
                )
                SELECT array_agg(f.id ORDER BY f.id) INTO v_run
                FROM free f JOIN best b
                  ON f.section_id = b.section_id AND f.row_label = b.row_label
                 AND f.number BETWEEN b.first AND b.last;
                o_row := v_row;
                EXIT WHEN v_run IS NOT NULL;
            END LOOP;
            EXIT WHEN v_run IS NULL;
            SELECT coalesce(array_agg(l.id), '{}') INTO v_got
            FROM (SELECT id FROM inventory
                  WHERE event_id = p_event AND id = ANY (v_run)
                    AND inventory_holdable(status, expires_at)
                  ORDER BY id FOR UPDATE SKIP LOCKED) l;
            IF cardinality(v_got) = cardinality(v_run) THEN
                v_best := v_run;
                EXIT;
            END IF;
            v_excl := v_excl || ARRAY(SELECT x FROM unnest(v_run) x WHERE x <> ALL (v_got));
        END LOOP;
    ELSE
        -- The best holdable seats anywhere: front rows, then central,
        -- taken row_index by row_index, front to back, until there are
        -- p_best_qty (the order of 00014's single query: row_index, then
        -- distance to the row's centre, then id).
        v_best := '{}';
        v_row := NULL;
        LOOP
            v_row := next_best_row(p_event, p_best_from, v_row);
            EXIT WHEN v_row IS NULL;
            WITH free AS MATERIALIZED (
                SELECT i.id, i.section_id, s.row_label, s.number
                FROM inventory i JOIN seats s ON s.id = i.seat_id
                WHERE i.event_id = p_event AND i.open_row = v_row AND i.section_id = ANY (v_secs)
                  AND inventory_holdable(i.status, i.expires_at)
            ), centre AS MATERIALIZED ( -- once per row label, not per seat
                SELECT k.section_id, k.row_label, row_centre(k.section_id, v_row, k.row_label) AS center
                FROM (SELECT DISTINCT section_id, row_label FROM free) k
            )
            SELECT coalesce(array_agg(b.id), '{}') INTO v_got FROM (
                SELECT i.id FROM free f
                JOIN centre c USING (section_id, row_label)
                JOIN inventory i ON i.event_id = p_event AND i.id = f.id
                WHERE inventory_holdable(i.status, i.expires_at)
                ORDER BY abs(f.number - c.center), f.id
                LIMIT p_best_qty - cardinality(v_best)
                FOR UPDATE OF i SKIP LOCKED) b;
            IF o_row IS NULL AND cardinality(v_got) > 0 THEN
                o_row := v_row;
            END IF;
            v_best := v_best || v_got;
            EXIT WHEN cardinality(v_best) >= p_best_qty;
        END LOOP;
        IF coalesce(cardinality(v_best), 0) < p_best_qty THEN
            v_best := NULL;
        END IF;
    END IF;
    o_ids := v_best;
END
$$;

