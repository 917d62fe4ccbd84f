package holds_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/outbox"
	"github.com/ticketing/ticketing/store"
)

// TestHoldCreateMessageIsAnInventoryChange: the outbox message hold_create
// writes in SQL is an outbox.InventoryChange (no other field) equal to what
// outbox.NewInventoryChange builds from the rows the hold took; so is the
// message of its cancellation.
func TestHoldCreateMessageIsAnInventoryChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{gaCapacity: 10})
	ctx := context.Background()
	h, err := e.svc.Create(ctx, user(1), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
		SeatIDs:          []string{ev.Seats[0][0], ev.Seats[1][2]},
		GeneralAdmission: []holds.GARequest{{SectionID: ev.GA, Quantity: 3}}})
	require.NoError(t, err)

	rows, err := e.pool.Query(ctx, `
		SELECT i.id, i.section_id::text, i.seat_id::text, i.version
		FROM hold_items hi JOIN inventory i ON i.event_id = hi.event_id AND i.id = hi.inventory_id
		WHERE hi.hold_id = $1 ORDER BY i.id`, h.ID)
	require.NoError(t, err)
	units, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.InventoryUnit, error) {
		var u store.InventoryUnit
		return u, r.Scan(&u.InventoryID, &u.SectionID, &u.SeatID, &u.Version)
	})
	require.NoError(t, err)
	require.Len(t, units, 5)

	message := func(kind string) outbox.InventoryChange {
		t.Helper()
		var b []byte
		require.NoError(t, e.pool.QueryRow(ctx, `SELECT payload::text FROM outbox
			WHERE topic = 'inventory' AND payload->>'holdId' = $1 AND payload->>'kind' = $2`, h.ID, kind).Scan(&b))
		var c outbox.InventoryChange
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&c), "%s", b)
		slices.SortFunc(c.Seats, func(a, b outbox.ChangedSeat) int { return cmp.Compare(a.SeatID, b.SeatID) })
		return c
	}
	want := outbox.NewInventoryChange(ev.ID, "hold", h.ID, "", "HELD", units)
	slices.SortFunc(want.Seats, func(a, b outbox.ChangedSeat) int { return cmp.Compare(a.SeatID, b.SeatID) })
	require.Len(t, want.Seats, 2)
	require.Equal(t, []outbox.ChangedGA{{SectionID: ev.GA}}, want.GA)
	require.Equal(t, want, message("hold"))

	_, err = e.svc.Cancel(ctx, user(1), h.ID)
	require.NoError(t, err)
	c := message("cancel")
	require.Equal(t, "cancel", c.Kind)
	require.Len(t, c.Seats, 2)
	require.Equal(t, []outbox.ChangedGA{{SectionID: ev.GA}}, c.GA)
}
