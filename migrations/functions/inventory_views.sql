-- The one count of a general-admission section: units holdable now, and the
-- section's version, the sum of its units' versions. A unit's version only
-- grows, and grows with each committed change, so the sum grows with every
-- commit that is visible, whatever order the changes took their versions in.
-- (max(version) did not: a hold that took a lower version but committed
-- after another labelled its new count with the same max, and every
-- consumer dropped it as not newer.) Read by the live seat map
-- (store.SeatMapGA: the projection's load and the relay's recount); a
-- filter on event_id (and section_id) is pushed into the grouping. held,
-- sold and capacity (appended: a view replaced in place only gains columns at
-- the end) count as the event's availability does (store.InventoryAvailability),
-- so an event page reads its availability off the live map (seatmap.Counts).
CREATE OR REPLACE VIEW ga_availability AS
SELECT event_id, section_id,
       (count(*) FILTER (WHERE inventory_holdable(status, expires_at)))::int AS available,
       sum(version)::bigint AS version,
       (count(*) FILTER (WHERE inventory_status(status, expires_at) = 'HELD'))::int AS held,
       (count(*) FILTER (WHERE status = 'SOLD'))::int AS sold,
       count(*)::int AS capacity
FROM inventory
WHERE unit_no IS NOT NULL
GROUP BY event_id, section_id;
