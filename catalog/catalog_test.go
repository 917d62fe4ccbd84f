package catalog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketing/ticketing/apperr"
	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/internal/testdb"
	"github.com/ticketing/ticketing/store"
)

func admin() context.Context {
	return auth.WithUser(context.Background(), auth.User{ID: "admin-1", Roles: []string{"admin"}})
}

func newService(t *testing.T) (*catalog.Service, *store.Store) {
	pool := testdb.NewPool(t)
	st := store.New(pool)
	return catalog.New(st, time.Now), st
}

// venueInput: a stalls section of 3 rows (10, 12, 14 seats), a balcony of 2
// rows of 5, and a GA floor of 100.
func venueInput() catalog.VenueInput {
	return catalog.VenueInput{
		Name: "Teatro de Prueba", Address: "Calle Mayor 1", City: "Madrid", Country: "ES",
		Lat: 40.4168, Lon: -3.7038,
		Sections: []catalog.SectionInput{
			{Name: "Platea", Kind: catalog.KindSeated, Rows: []catalog.RowInput{{"A", 10}, {"B", 12}, {"C", 14}},
				Layout: &catalog.Layout{X: -65, Y: 30, Curve: 8}},
			{Name: "Anfiteatro", Kind: catalog.KindSeated, Rows: []catalog.RowInput{{"1", 5}, {"2", 5}}},
			{Name: "Pista", Kind: catalog.KindGeneralAdmission, Capacity: 100},
		},
	}
}

func createVenue(t *testing.T, svc *catalog.Service) (catalog.Venue, []catalog.Section) {
	v, err := svc.CreateVenue(admin(), venueInput())
	require.NoError(t, err)
	secs, err := svc.SectionsByVenueIDs(admin(), []string{v.ID})
	require.NoError(t, err)
	return v, secs[v.ID]
}

func eventInput(venueID string, secs []catalog.Section, artistIDs ...string) catalog.EventInput {
	in := catalog.EventInput{
		Name: "Música en el Retiro", Description: "Concierto al aire libre", Category: "Concierto",
		StartsAt: time.Now().Add(30 * 24 * time.Hour), VenueID: venueID, ArtistIDs: artistIDs,
		SaleStartsAt: time.Now().Add(-time.Hour), MaxTicketsPerUser: 8, HoldDurationSeconds: 600,
		RefundPolicy: "Sin devoluciones",
	}
	for i, s := range secs {
		in.Prices = append(in.Prices, catalog.PriceInput{SectionID: s.ID, Amount: int64(1000 * (i + 1)), Currency: "EUR"})
	}
	return in
}

func TestCreateVenueLayout(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	v, secs := createVenue(t, svc)
	require.Equal(t, 10+12+14+10+100, v.Capacity)
	got, err := svc.GetVenue(context.Background(), v.ID)
	require.NoError(t, err)
	require.Equal(t, v, got)

	require.Len(t, secs, 3)
	require.Equal(t, []string{"Platea", "Anfiteatro", "Pista"}, []string{secs[0].Name, secs[1].Name, secs[2].Name})
	require.Equal(t, 36, secs[0].Capacity)
	require.Equal(t, "GENERAL_ADMISSION", secs[2].Kind)

	seats, err := svc.SeatsBySectionIDs(context.Background(), []string{secs[0].ID, secs[1].ID, secs[2].ID})
	require.NoError(t, err)
	require.Len(t, seats[secs[0].ID], 36)
	require.Empty(t, seats[secs[2].ID])
	stalls := seats[secs[0].ID]
	// Row C (widest) starts at the layout corner; rows grow away from the stage.
	require.Equal(t, "A", stalls[0].RowLabel)
	require.Equal(t, 1, stalls[0].Number)
	for _, st := range stalls {
		require.Greater(t, st.Y, 0.0, "seats are behind the stage")
		b := secs[0]
		require.True(t, st.X >= b.BoundsX && st.X <= b.BoundsX+b.BoundsW && st.Y >= b.BoundsY && st.Y <= b.BoundsY+b.BoundsH,
			"seat %s%d inside the section bounds", st.RowLabel, st.Number)
	}
	last := stalls[len(stalls)-1]
	require.Equal(t, "C", last.RowLabel)
	require.Equal(t, -65.0, stalls[22].X) // C1: the front-left corner of the widest row
	require.Greater(t, last.Y, stalls[0].Y)
	// The automatically placed balcony is behind the stalls.
	for _, st := range seats[secs[1].ID] {
		require.Greater(t, st.Y, secs[0].BoundsY+secs[0].BoundsH)
	}
	require.Greater(t, secs[2].BoundsW, 0.0)
	require.Greater(t, secs[2].BoundsH, 0.0)
}

func TestCreateEventInventory(t *testing.T) {
	t.Parallel()
	svc, st := newService(t)
	v, secs := createVenue(t, svc)
	a1, err := svc.CreateArtist(admin(), catalog.ArtistInput{Name: "Lucía Ferrán", Bio: "Cantautora", Genres: []string{"pop", "canción"}})
	require.NoError(t, err)
	a2, err := svc.CreateArtist(admin(), catalog.ArtistInput{Name: "Los Ángeles del Sur"})
	require.NoError(t, err)

	e, err := svc.CreateEvent(admin(), eventInput(v.ID, secs, a2.ID, a1.ID))
	require.NoError(t, err)
	require.Equal(t, "concierto", e.Category)
	require.Equal(t, int64(1), e.Version)

	var seatRows, gaRows, units, outbox int
	pool := st.Pool()
	ctx := context.Background()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE seat_id IS NOT NULL), count(*) FILTER (WHERE unit_no IS NOT NULL),
		count(DISTINCT unit_no) FROM inventory WHERE event_id = $1 AND status = 'AVAILABLE'`, e.ID).Scan(&seatRows, &gaRows, &units))
	require.Equal(t, 46, seatRows)
	require.Equal(t, 100, gaRows)
	require.Equal(t, 100, units)
	var payload map[string]any
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) OVER (), payload FROM outbox WHERE topic = 'catalog' AND event_id = $1`, e.ID).Scan(&outbox, &payload))
	require.Equal(t, 1, outbox)
	require.Equal(t, map[string]any{"eventId": e.ID, "version": float64(1)}, payload)

	artists, err := svc.ArtistsByEventIDs(ctx, []string{e.ID})
	require.NoError(t, err)
	require.Equal(t, []string{a2.Name, a1.Name}, []string{artists[e.ID][0].Name, artists[e.ID][1].Name})
	prices, err := svc.PricesByEventIDs(ctx, []string{e.ID})
	require.NoError(t, err)
	require.Len(t, prices[e.ID], 3)
	require.Equal(t, secs[0].ID, prices[e.ID][0].SectionID)

	byArtist, err := svc.EventsByArtist(ctx, a1.ID, 10, "")
	require.NoError(t, err)
	require.Equal(t, 1, byArtist.TotalCount)
	require.Equal(t, e.ID, byArtist.Events[0].ID)

	// Availability and the seat map follow the inventory; an expired hold
	// counts as available.
	a, err := svc.Availability(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, catalog.Availability{EventID: e.ID, Available: 146, Capacity: 146}, a)

	mark := func(where, status, expires string) {
		t.Helper()
		require.NoError(t, st.Exec(ctx, `UPDATE inventory SET status = '`+status+`', hold_id = gen_random_uuid(), owner = 'u',
			expires_at = now() + interval '`+expires+`', version = nextval('inventory_version_seq') WHERE event_id = $1 AND `+where, e.ID))
	}
	mark(`seat_id IS NOT NULL AND id IN (SELECT id FROM inventory WHERE event_id = $1 AND seat_id IS NOT NULL ORDER BY id LIMIT 3)`, "HELD", "10 minutes")
	mark(`unit_no IN (1, 2)`, "HELD", "-1 second") // expired
	mark(`unit_no IN (3, 4, 5, 6)`, "HELD", "10 minutes")
	a, err = svc.Availability(ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, catalog.Availability{EventID: e.ID, Available: 139, Held: 7, Capacity: 146}, a)

	// The seat map's rows (store.SeatMapSeats / SeatMapGA, what
	// seatmap.Service's projection loads) judge holds as availability does.
	seats, err := st.SeatMapSeats(ctx, e.ID)
	require.NoError(t, err)
	require.Len(t, seats, 46)
	held := 0
	for _, s := range seats {
		if s.Status == catalog.StatusHeld {
			held++
		}
		require.Positive(t, s.Version)
	}
	require.Equal(t, 3, held)
	ga, err := st.SeatMapGA(ctx, e.ID, nil)
	require.NoError(t, err)
	require.Len(t, ga, 1)
	require.Equal(t, secs[2].ID, ga[0].SectionID)
	require.Equal(t, 96, ga[0].Available)
	// One GA count: the version is the sum of the units' versions.
	var sumVersion int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT sum(version) FROM inventory WHERE event_id = $1 AND unit_no IS NOT NULL`, e.ID).Scan(&sumVersion))
	require.Equal(t, sumVersion, ga[0].Version)

	require.Equal(t, catalog.SaleOnSale, svc.SaleStatus(e, a))
	require.Equal(t, catalog.SaleSoldOut, svc.SaleStatus(e, catalog.Availability{Capacity: 1}))
}

func TestCreateEventLargeIsFast(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	in := venueInput()
	in.Sections = nil
	for i := range 40 {
		var rows []catalog.RowInput
		for r := range 20 {
			rows = append(rows, catalog.RowInput{Label: string(rune('A' + r)), Seats: 25})
		}
		in.Sections = append(in.Sections, catalog.SectionInput{Name: "Sector " + string(rune('A'+i%26)) + strings.Repeat("I", i/26), Kind: catalog.KindSeated, Rows: rows})
	}
	v, err := svc.CreateVenue(admin(), in)
	require.NoError(t, err)
	require.Equal(t, 20_000, v.Capacity)
	secs, err := svc.SectionsByVenueIDs(admin(), []string{v.ID})
	require.NoError(t, err)
	start := time.Now()
	e, err := svc.CreateEvent(admin(), eventInput(v.ID, secs[v.ID]))
	require.NoError(t, err)
	took := time.Since(start)
	a, err := svc.Availability(context.Background(), e.ID)
	require.NoError(t, err)
	require.Equal(t, 20_000, a.Available)
	t.Logf("20,000-seat event created in %v", took)
	require.Less(t, took, 5*time.Second) // well under a second on an idle machine
}

func TestValidation(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	v, secs := createVenue(t, svc)
	ctx := admin()

	venueCases := []struct {
		field string
		edit  func(*catalog.VenueInput)
	}{
		{"input.name", func(in *catalog.VenueInput) { in.Name = "  " }},
		{"input.city", func(in *catalog.VenueInput) { in.City = "" }},
		{"input.location.lat", func(in *catalog.VenueInput) { in.Lat = 91 }},
		{"input.location.lon", func(in *catalog.VenueInput) { in.Lon = -181 }},
		{"input.sections", func(in *catalog.VenueInput) { in.Sections = nil }},
		{"input.sections[1].name", func(in *catalog.VenueInput) { in.Sections[1].Name = "Platea" }},
		{"input.sections[1].kind", func(in *catalog.VenueInput) { in.Sections[1].Kind = "BOX" }},
		{"input.sections[1].rows", func(in *catalog.VenueInput) { in.Sections[1].Rows = nil }},
		{"input.sections[1].rows[0].seats", func(in *catalog.VenueInput) { in.Sections[1].Rows[0].Seats = 0 }},
		{"input.sections[0].rows[2].label", func(in *catalog.VenueInput) { in.Sections[0].Rows[2].Label = "A" }},
		{"input.sections[2].capacity", func(in *catalog.VenueInput) { in.Sections[2].Capacity = 0 }},
		{"input.sections[2].rows", func(in *catalog.VenueInput) { in.Sections[2].Rows = []catalog.RowInput{{"A", 1}} }},
		{"input.sections[0].layout.seatSpacing", func(in *catalog.VenueInput) { in.Sections[0].Layout.SeatSpacing = -1 }},
	}
	for _, c := range venueCases {
		in := venueInput()
		c.edit(&in)
		_, err := svc.CreateVenue(ctx, in)
		requireInvalid(t, err, c.field)
	}

	other, err := svc.CreateVenue(ctx, func() catalog.VenueInput { in := venueInput(); in.Name = "Otro"; return in }())
	require.NoError(t, err)
	otherSecs, err := svc.SectionsByVenueIDs(ctx, []string{other.ID})
	require.NoError(t, err)

	eventCases := []struct {
		field string
		edit  func(*catalog.EventInput)
	}{
		{"input.name", func(in *catalog.EventInput) { in.Name = "" }},
		{"input.category", func(in *catalog.EventInput) { in.Category = " " }},
		{"input.startsAt", func(in *catalog.EventInput) { in.StartsAt = time.Now().Add(-time.Hour) }},
		{"input.endsAt", func(in *catalog.EventInput) { e := in.StartsAt.Add(-time.Minute); in.EndsAt = &e }},
		{"input.venueId", func(in *catalog.EventInput) { in.VenueID = "nope" }},
		{"input.venueId", func(in *catalog.EventInput) { in.VenueID = "0190a0a0-0000-7000-8000-000000000000" }},
		{"input.artistIds[0]", func(in *catalog.EventInput) { in.ArtistIDs = []string{"0190a0a0-0000-7000-8000-000000000000"} }},
		{"input.saleStartsAt", func(in *catalog.EventInput) { in.SaleStartsAt = in.StartsAt.Add(time.Hour) }},
		{"input.saleEndsAt", func(in *catalog.EventInput) { e := in.SaleStartsAt; in.SaleEndsAt = &e }},
		{"input.prices", func(in *catalog.EventInput) { in.Prices = in.Prices[:2] }},
		{"input.prices", func(in *catalog.EventInput) { in.Prices = nil }},
		{"input.prices[1].sectionId", func(in *catalog.EventInput) { in.Prices[1].SectionID = otherSecs[other.ID][1].ID }},
		{"input.prices[2].sectionId", func(in *catalog.EventInput) { in.Prices[2].SectionID = in.Prices[0].SectionID }},
		{"input.prices[0].amount", func(in *catalog.EventInput) { in.Prices[0].Amount = -1 }},
		{"input.prices[0].currency", func(in *catalog.EventInput) { in.Prices[0].Currency = "eur" }},
		{"input.prices[1].currency", func(in *catalog.EventInput) { in.Prices[1].Currency = "USD" }},
		{"input.maxTicketsPerUser", func(in *catalog.EventInput) { in.MaxTicketsPerUser = 0 }},
		{"input.holdDurationSeconds", func(in *catalog.EventInput) { in.HoldDurationSeconds = 0 }},
		{"input.holdDurationSeconds", func(in *catalog.EventInput) { in.HoldDurationSeconds = 3601 }},
	}
	for _, c := range eventCases {
		in := eventInput(v.ID, secs)
		c.edit(&in)
		_, err := svc.CreateEvent(ctx, in)
		requireInvalid(t, err, c.field)
	}

	_, err = svc.CreateArtist(ctx, catalog.ArtistInput{Name: "Ñu"})
	require.NoError(t, err)
	_, err = svc.CreateArtist(ctx, catalog.ArtistInput{Name: "ñU"})
	requireInvalid(t, err, "input.name")
	_, err = svc.CreateArtist(ctx, catalog.ArtistInput{Name: "X", Genres: []string{"rock", ""}})
	requireInvalid(t, err, "input.genres[1]")

	// Nothing was created by the failed attempts.
	page, err := svc.ListEvents(ctx, catalog.ListFilter{First: 10})
	require.NoError(t, err)
	require.Zero(t, page.TotalCount)
}

func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var inv *apperr.InvalidInputError
	require.True(t, errors.As(err, &inv), "want invalid %s, got %v", field, err)
	require.Equal(t, field, inv.Field, "%v", err)
}

func TestAdminRequired(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	user := auth.WithUser(context.Background(), auth.User{ID: "u1"})
	_, err := svc.CreateVenue(user, venueInput())
	require.ErrorIs(t, err, apperr.ErrForbidden)
	_, err = svc.CreateArtist(context.Background(), catalog.ArtistInput{Name: "X"})
	require.ErrorIs(t, err, apperr.ErrUnauthenticated)
	_, err = svc.CreateEvent(user, catalog.EventInput{})
	require.ErrorIs(t, err, apperr.ErrForbidden)
}

func TestListEvents(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	v, secs := createVenue(t, svc)
	in2 := venueInput()
	in2.Name, in2.City = "Sala Bogotá", "Bogotá"
	v2, err := svc.CreateVenue(admin(), in2)
	require.NoError(t, err)
	secs2, err := svc.SectionsByVenueIDs(admin(), []string{v2.ID})
	require.NoError(t, err)

	base := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	var ins []catalog.EventInput
	for i := range 7 {
		in := eventInput(v.ID, secs)
		if i%2 == 1 {
			in = eventInput(v2.ID, secs2[v2.ID])
			in.Category = "teatro"
		}
		in.StartsAt = base.Add(time.Duration(i/2) * time.Hour) // pairs share a start time
		ins = append(ins, in)
	}
	_, err = svc.CreateEvents(admin(), ins)
	require.NoError(t, err)

	ctx := context.Background()
	var seen []string
	after := ""
	for {
		p, err := svc.ListEvents(ctx, catalog.ListFilter{First: 3, After: after})
		require.NoError(t, err)
		require.Equal(t, 7, p.TotalCount)
		for _, e := range p.Events {
			seen = append(seen, e.ID)
		}
		if !p.HasNextPage {
			break
		}
		after = p.Cursors[len(p.Cursors)-1]
	}
	require.Len(t, seen, 7)
	all, err := svc.EventsByIDs(ctx, seen)
	require.NoError(t, err)
	require.Len(t, all, 7)
	for i := 1; i < len(seen); i++ {
		a, b := all[seen[i-1]], all[seen[i]]
		require.True(t, a.StartsAt.Before(b.StartsAt) || (a.StartsAt.Equal(b.StartsAt) && a.ID < b.ID))
	}

	p, err := svc.ListEvents(ctx, catalog.ListFilter{First: 10, City: "bogota"})
	require.NoError(t, err)
	require.Equal(t, 3, p.TotalCount)
	p, err = svc.ListEvents(ctx, catalog.ListFilter{First: 10, Category: "CONCIERTO"})
	require.NoError(t, err)
	require.Equal(t, 4, p.TotalCount)
	_, err = svc.ListEvents(ctx, catalog.ListFilter{First: 10, After: "garbage"})
	requireInvalid(t, err, "after")
	_, err = svc.GetEvent(ctx, "not-a-uuid")
	require.ErrorIs(t, err, apperr.ErrNotFound)
}
