package holds_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/holds"
)

// A best-available pick that no inventory could satisfy (more adjacent
// seats than a row has, more seats than the section) is refused as the
// database refuses it, before its search; the largest pick that can fit
// still goes to the database and is held.
func TestBestAvailableNeverFits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, holds.Config{})
	ev := createEvent(t, e.pool, eventSpec{rows: 3, perRow: 10, maxPerUser: 100})
	ctx := context.Background()
	best := func(i, qty int, section string, adjacent bool) error {
		_, err := e.svc.Create(ctx, user(i), holds.CreateRequest{EventID: ev.ID, IdempotencyKey: key(),
			BestAvailable: &holds.BestAvailable{Quantity: qty, SectionID: section, Adjacent: adjacent}})
		return err
	}
	var su *apperr.SeatUnavailableError
	require.ErrorAs(t, best(1, 11, ev.Seated, true), &su, "longer than a row")
	require.Equal(t, []string{ev.Seated}, su.SeatIDs)
	require.ErrorAs(t, best(1, 11, "", true), &su, "longer than a row, any section")
	require.Empty(t, su.SeatIDs)
	require.ErrorAs(t, best(1, 31, ev.Seated, false), &su, "more than the section's seats")
	var inv *apperr.InvalidInputError
	require.ErrorAs(t, best(1, 2, ev.GA, true), &inv, "a GA section is not a seated section")
	require.ErrorAs(t, best(1, 2, key(), true), &inv, "a section of another venue")
	require.Zero(t, count(t, e.pool, `SELECT count(*) FROM holds`), "nothing held")

	require.NoError(t, best(2, 10, ev.Seated, true), "a whole row")
	require.NoError(t, best(3, 20, "", false), "the rest of the section")
	require.ErrorAs(t, best(4, 1, ev.Seated, false), &su, "refused by the database: every seat is held")
	_, err := e.svc.Create(ctx, user(5), holds.CreateRequest{EventID: key(), IdempotencyKey: key(),
		BestAvailable: &holds.BestAvailable{Quantity: 11, Adjacent: true}})
	require.ErrorIs(t, err, apperr.ErrNotFound, "an unknown event is the database's refusal")
}
