-- The one definition of "holdable now": an inventory row is free when it is
-- AVAILABLE, or HELD past its expires_at by the database clock (no cron
-- frees it). Every reader and writer of inventory asks this function
-- (hold_create, store/: seat map, catalog, search, audit, orders'
-- confirmation); inventory_status is the status a reader shows.
--
-- LANGUAGE sql, STABLE, one expression: the planner inlines it, so the plans
-- (and hold_create's cached ones) are those of the expression written out.
-- Given inventory's CHECK (a HELD row has expires_at), it is never NULL.
CREATE OR REPLACE FUNCTION inventory_holdable(status text, expires_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT status = 'AVAILABLE' OR (status = 'HELD' AND expires_at <= now())
$$;

-- The status a reader shows: AVAILABLE when holdable, else HELD (a live
-- hold) or SOLD.
CREATE OR REPLACE FUNCTION inventory_status(status text, expires_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN inventory_holdable(status, expires_at) THEN 'AVAILABLE' ELSE status END
$$;

-- The same rule for a hold: an ACTIVE hold past its expires_at reads as
-- EXPIRED (the sweeper, store.ExpireHolds, writes it down later).
CREATE OR REPLACE FUNCTION hold_status(status text, expires_at timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN status = 'ACTIVE' AND expires_at <= now() THEN 'EXPIRED' ELSE status END
$$;
