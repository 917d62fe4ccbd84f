-- The one definition, in SQL, of "the event's sale is open": from
-- sale_starts_at until sale_ends_at (NULL: no end), by the database clock.
-- hold_create decides with it, store.HoldEvent reads it, and
-- store.WarmEventIDs puts the events on sale first with it; Go's
-- store.SaleStatus is the same window (plus cancelled_at, which the
-- holds_refuse_cancelled_event trigger enforces on the hold path).
--
-- LANGUAGE sql, STABLE, one expression: the planner inlines it, as it does
-- inventory_holdable.
CREATE OR REPLACE FUNCTION event_sale_open(sale_starts_at timestamptz, sale_ends_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT sale_starts_at <= now() AND (sale_ends_at IS NULL OR now() < sale_ends_at)
$$;
