package holds_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

// modelHold is a hold in the in-memory model of the inventory.
type modelHold struct {
	id     string
	owner  int
	seats  []string
	ga     int
	status string
}

type model struct {
	holds []*modelHold
}

func (m *model) active() []*modelHold {
	var out []*modelHold
	for _, h := range m.holds {
		if h.status == holds.StatusActive {
			out = append(out, h)
		}
	}
	return out
}

// timeTravel moves every timestamp of the event's holds one hour into the
// past, so that every active hold is expired by the database clock. Items
// are shifted oldest first, which keeps the exclusion constraint satisfied
// at every row.
func timeTravel(t *rapid.T, pool *pgxpool.Pool, eventID string) {
	ctx := context.Background()
	_, err := pool.Exec(ctx, `UPDATE holds SET created_at = created_at - interval '1 hour', expires_at = expires_at - interval '1 hour' WHERE event_id = $1`, eventID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE inventory SET expires_at = expires_at - interval '1 hour' WHERE event_id = $1 AND expires_at IS NOT NULL`, eventID)
	require.NoError(t, err)
	rows, err := pool.Query(ctx, `SELECT hold_id::text, inventory_id FROM hold_items WHERE event_id = $1 AND NOT isempty(period) ORDER BY lower(period)`, eventID)
	require.NoError(t, err)
	type key struct {
		hold string
		inv  int64
	}
	var keys []key
	for rows.Next() {
		var k key
		require.NoError(t, rows.Scan(&k.hold, &k.inv))
		keys = append(keys, k)
	}
	require.NoError(t, rows.Err())
	for _, k := range keys {
		_, err = pool.Exec(ctx, `UPDATE hold_items SET period = tstzrange(lower(period) - interval '1 hour', upper(period) - interval '1 hour')
			WHERE hold_id = $1 AND inventory_id = $2`, k.hold, k.inv)
		require.NoError(t, err)
	}
}

// Random hold/cancel/expire/sweep sequences against a model of the inventory.
func TestPropertyHoldsMatchModel(t *testing.T) {
	t.Parallel()
	pool := testdb.NewPool(t)
	st := store.New(pool)
	svc := holds.New(st, holds.Config{}) // Postgres alone: time travel would confuse real leases
	const users, maxPerUser, gaCap = 3, 4, 3

	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		ev := createEvent(t, pool, eventSpec{rows: 1, perRow: 6, gaCapacity: gaCap, maxPerUser: maxPerUser})
		m := &model{}

		t.Repeat(map[string]func(*rapid.T){
			"hold": func(t *rapid.T) {
				u := rapid.IntRange(0, users-1).Draw(t, "user")
				seats := rapid.SliceOfNDistinct(rapid.SampledFrom(ev.AllSeat), 0, 3, rapid.ID[string]).Draw(t, "seats")
				ga := rapid.IntRange(0, 2).Draw(t, "ga")
				if len(seats) == 0 && ga == 0 {
					t.Skip("empty request")
				}
				req := holds.CreateRequest{EventID: ev.ID, SeatIDs: seats, IdempotencyKey: key()}
				if ga > 0 {
					req.GeneralAdmission = []holds.GARequest{{SectionID: ev.GA, Quantity: ga}}
				}
				// The model's verdict: limit, then seats, then GA.
				mine, heldGA, taken := 0, 0, map[string]bool{}
				for _, h := range m.active() {
					if h.owner == u {
						mine += len(h.seats) + h.ga
					}
					heldGA += h.ga
					for _, s := range h.seats {
						taken[s] = true
					}
				}
				var want string
				switch {
				case mine+len(seats)+ga > maxPerUser:
					want = "limit"
				case anyTaken(seats, taken):
					want = "seats"
				case heldGA+ga > gaCap:
					want = "ga"
				}
				h, err := svc.Create(ctx, user(u), req)
				var le *apperr.HoldLimitError
				var su *apperr.SeatUnavailableError
				switch want {
				case "":
					require.NoError(t, err)
					m.holds = append(m.holds, &modelHold{id: h.ID, owner: u, seats: seats, ga: ga, status: holds.StatusActive})
				case "limit":
					require.ErrorAs(t, err, &le)
				case "seats":
					require.ErrorAs(t, err, &su)
					for _, s := range su.SeatIDs {
						require.True(t, taken[s], "reported seat %s is free in the model", s)
					}
				case "ga":
					require.ErrorAs(t, err, &su)
					require.Equal(t, []string{ev.GA}, su.SeatIDs)
				}
			},
			"cancel": func(t *rapid.T) {
				if len(m.holds) == 0 {
					t.Skip("no holds")
				}
				h := rapid.SampledFrom(m.holds).Draw(t, "hold")
				u := rapid.IntRange(0, users-1).Draw(t, "user")
				_, err := svc.Cancel(ctx, user(u), h.id)
				switch {
				case u != h.owner:
					require.ErrorIs(t, err, apperr.ErrForbidden)
				case h.status != holds.StatusActive:
					require.ErrorIs(t, err, apperr.ErrHoldExpired)
				default:
					require.NoError(t, err)
					h.status = holds.StatusCancelled
				}
			},
			"expire": func(t *rapid.T) {
				timeTravel(t, pool, ev.ID)
				for _, h := range m.active() {
					h.status = holds.StatusExpired
				}
			},
			"sweep": func(t *rapid.T) {
				_, err := svc.Sweep(ctx)
				require.NoError(t, err)
			},
			"": func(t *rapid.T) { // invariants after every step
				status := map[string]string{}
				srows, err := pool.Query(ctx, `SELECT id::text, CASE WHEN status = 'ACTIVE' AND expires_at <= now() THEN 'EXPIRED' ELSE status END FROM holds WHERE event_id = $1`, ev.ID)
				require.NoError(t, err)
				for srows.Next() {
					var id, s string
					require.NoError(t, srows.Scan(&id, &s))
					status[id] = s
				}
				require.NoError(t, srows.Err())
				require.Len(t, status, len(m.holds))
				for _, h := range m.holds {
					require.Equal(t, h.status, status[h.id], "hold %s", h.id)
				}
				want := map[string]string{}
				wantGA := map[string]int{}
				for _, h := range m.active() {
					for _, s := range h.seats {
						want[s] = h.id
					}
					wantGA[h.id] += h.ga
				}
				rows, err := pool.Query(ctx, `
					SELECT coalesce(seat_id::text, ''), CASE WHEN status = 'HELD' AND expires_at > now() THEN hold_id::text ELSE '' END
					FROM inventory WHERE event_id = $1`, ev.ID)
				require.NoError(t, err)
				gotGA := map[string]int{}
				for rows.Next() {
					var seat, hold string
					require.NoError(t, rows.Scan(&seat, &hold))
					if seat == "" {
						if hold != "" {
							gotGA[hold]++
						}
						continue
					}
					require.Equal(t, want[seat], hold, "seat %s", seat)
				}
				require.NoError(t, rows.Err())
				for id, n := range wantGA {
					require.Equal(t, n, gotGA[id], "GA units of hold %s", id)
				}
			},
		})
	})
}

func anyTaken(seats []string, taken map[string]bool) bool {
	for _, s := range seats {
		if taken[s] {
			return true
		}
	}
	return false
}
