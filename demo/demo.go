// Package demo loads a believable demo catalog (venues in Spain, Latin
// America, London and New York; artists; 300 events over the next six
// months, in Spanish and English) and generates large catalogs for
// benchmarks. Everything goes through the catalog service, so the demo data
// is validated and gets its inventory exactly like admin-created data.
//
// Ids are deterministic (UUIDv5 of a name), and what exists is skipped:
// seeding twice creates nothing the second time.
package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/auth"
	"github.com/ticketing/ticketing/catalog"
)

// DemoEvents is the number of events of the demo catalog.
const DemoEvents = 300

// namespace of the demo's deterministic ids.
var namespace = uuid.MustParse("6f1c2a4e-5b7d-4c3e-9a8b-0d1e2f3a4b5c")

func id(kind string, key any) string {
	return uuid.NewSHA1(namespace, fmt.Appendf(nil, "%s/%v", kind, key)).String()
}

// Counts reports what a seed run created.
type Counts struct {
	Venues, Artists, Events int
}

// seeder acts as the catalog administrator.
func seeder(ctx context.Context) context.Context {
	return auth.WithUser(ctx, auth.User{ID: "demo-seeder", Roles: []string{"admin"}})
}

// Seed loads the demo catalog; what already exists is left alone. Event
// times are relative to now: the first run decides them.
func Seed(ctx context.Context, svc *catalog.Service, now time.Time) (Counts, error) {
	ctx = seeder(ctx)
	c, secs, err := seedBase(ctx, svc)
	if err != nil {
		return c, err
	}
	rng := rand.New(rand.NewPCG(2024, 6))
	ins := make([]catalog.EventInput, 0, DemoEvents)
	for i := range DemoEvents {
		ins = append(ins, demoEvent(i, now, 2+i*180/DemoEvents, rng, venues, secs))
	}
	c.Events, err = createMissing(ctx, svc, ins, svc.CreateEvents, 50)
	return c, err
}

// SeedEvents adds n generated events (ids "bench/0".."bench/n-1", so a
// second run with the same n adds nothing), spread over the next year, in
// small generated venues ("Sala Íntima <city>", 30 places: 24 standing and
// one row of 6 seats) in the demo's cities, with the demo artists. Small
// venues keep the inventory of 100,000 events at 3 million rows instead of
// hundreds of millions. Events are validated and get their inventory like
// any other, through catalog.ImportEvents in batches of 2,000 (COPY, and
// INSERT ... SELECT generate_series for the inventory), without outbox rows:
// search indexes catch up by version.
func SeedEvents(ctx context.Context, svc *catalog.Service, now time.Time, n int) (Counts, error) {
	ctx = seeder(ctx)
	c, _, err := seedBase(ctx, svc)
	if err != nil {
		return c, err
	}
	small := smallVenues()
	k, secs, err := createVenues(ctx, svc, small)
	c.Venues += k
	if err != nil {
		return c, err
	}
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	const batch = 2000
	for start := 0; start < n; start += batch {
		ins := make([]catalog.EventInput, 0, batch)
		for i := start; i < min(n, start+batch); i++ {
			in := demoEvent(i, now, 2+i*364/n, rng, small, secs)
			in.ID = id("bench", i)
			in.Name = fmt.Sprintf("%s #%d", in.Name, i+1)
			ins = append(ins, in)
		}
		k, err := createMissing(ctx, svc, ins, svc.ImportEvents, batch)
		c.Events += k
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// smallVenues are the generated events' venues: one small club per demo
// city, in that city's currency and language.
func smallVenues() []venueSpec {
	var out []venueSpec
	seen := map[string]bool{}
	for _, v := range venues {
		if seen[v.city] {
			continue
		}
		seen[v.city] = true
		out = append(out, venueSpec{
			name: "Sala Íntima " + v.city, address: "Calle del Ensayo, 1", city: v.city, country: v.country,
			lat: v.lat + 0.004, lon: v.lon + 0.004, kind: kindClub, currency: v.currency, base: v.base,
			english: v.english, sections: club(24, 1, 6),
		})
	}
	return out
}

// seedBase creates the demo venues and artists that do not exist yet and
// returns the sections of every demo venue (secs[i] of venues[i]).
func seedBase(ctx context.Context, svc *catalog.Service) (c Counts, secs [][]catalog.Section, err error) {
	c.Venues, secs, err = createVenues(ctx, svc, venues)
	if err != nil {
		return c, nil, err
	}
	aids := make([]string, len(artists))
	for i, a := range artists {
		aids[i] = id("artist", a.name)
	}
	haveA, err := svc.ArtistsByIDs(ctx, aids)
	if err != nil {
		return c, nil, err
	}
	for i, a := range artists {
		if _, ok := haveA[aids[i]]; ok {
			continue
		}
		if _, err := svc.CreateArtist(ctx, catalog.ArtistInput{ID: aids[i], Name: a.name, Bio: a.bio, Genres: a.genres}); err != nil {
			return c, nil, fmt.Errorf("demo artist %s: %w", a.name, err)
		}
		c.Artists++
	}
	return c, secs, nil
}

// createVenues creates the venues of specs that do not exist yet and
// returns how many it created and the sections of every one (secs[i] of
// specs[i]).
func createVenues(ctx context.Context, svc *catalog.Service, specs []venueSpec) (n int, secs [][]catalog.Section, err error) {
	vids := make([]string, len(specs))
	for i, v := range specs {
		vids[i] = id("venue", v.name)
	}
	have, err := svc.VenuesByIDs(ctx, vids)
	if err != nil {
		return 0, nil, err
	}
	for i, v := range specs {
		if _, ok := have[vids[i]]; ok {
			continue
		}
		_, err := svc.CreateVenue(ctx, catalog.VenueInput{
			ID: vids[i], Name: v.name, Address: v.address, City: v.city, Country: v.country,
			Lat: v.lat, Lon: v.lon, Sections: v.sections,
		})
		if err != nil {
			return n, nil, fmt.Errorf("demo venue %s: %w", v.name, err)
		}
		n++
	}
	byVenue, err := svc.SectionsByVenueIDs(ctx, vids)
	if err != nil {
		return n, nil, err
	}
	for _, vid := range vids {
		secs = append(secs, byVenue[vid])
	}
	return n, secs, nil
}

// createMissing creates the events whose ids do not exist yet with create,
// batch events per call.
func createMissing(ctx context.Context, svc *catalog.Service, ins []catalog.EventInput,
	create func(context.Context, []catalog.EventInput) ([]catalog.Event, error), batch int) (int, error) {
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
	}
	have, err := svc.EventsByIDs(ctx, ids)
	if err != nil {
		return 0, err
	}
	var todo []catalog.EventInput
	for _, in := range ins {
		if _, ok := have[in.ID]; !ok {
			todo = append(todo, in)
		}
	}
	for start := 0; start < len(todo); start += batch {
		if _, err := create(ctx, todo[start:min(len(todo), start+batch)]); err != nil {
			return start, err
		}
	}
	return len(todo), nil
}

// demoEvent is the i-th event over venues (in turn), day days from now, in
// the venue's language and currency; secs[j] are the sections of venues[j].
func demoEvent(i int, now time.Time, day int, rng *rand.Rand, venues []venueSpec, secs [][]catalog.Section) catalog.EventInput {
	vi := i % len(venues)
	v := venues[vi]
	cats := categoriesOf[v.kind]
	cat := cats[rng.IntN(len(cats))]
	lang := spanish
	if v.english {
		lang = english
		if _, ok := lang[cat]; !ok {
			cat = "concierto"
		}
	}
	t := lang[cat]
	name := t.names[rng.IntN(len(t.names))]

	starts := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, day).Add(time.Duration(18+rng.IntN(4)) * time.Hour).Add(time.Duration(rng.IntN(2)*30) * time.Minute)
	ends := starts.Add(time.Duration(90+rng.IntN(4)*30) * time.Minute)

	in := catalog.EventInput{
		ID:                  id("event", i),
		Name:                name,
		Description:         t.descriptions[rng.IntN(len(t.descriptions))],
		Category:            cat,
		StartsAt:            starts,
		EndsAt:              &ends,
		VenueID:             id("venue", v.name),
		SaleStartsAt:        now.Add(-time.Hour),
		MaxTicketsPerUser:   []int{8, 8, 6, 4, 10}[rng.IntN(5)],
		HoldDurationSeconds: 600,
		RefundPolicy:        refundPolicies[rng.IntN(len(refundPolicies))],
	}
	switch {
	case i%25 == 0:
		in.QueueRequired = true
		in.MaxTicketsPerUser = 4
		in.HoldDurationSeconds = 300
	case i%11 == 0:
		// The sale opens later.
		in.SaleStartsAt = starts.AddDate(0, 0, -14)
		if !in.SaleStartsAt.After(now) {
			in.SaleStartsAt = now.Add(24 * time.Hour)
		}
	case i%13 == 0:
		in.HoldDurationSeconds = 900
	}
	if i%7 == 0 {
		end := starts.Add(-2 * time.Hour)
		in.SaleEndsAt = &end
	}
	switch cat {
	case "concierto", "comedia":
		in.ArtistIDs = pickArtists(rng, 1+rng.IntN(2))
	case "festival":
		in.ArtistIDs = pickArtists(rng, 3+rng.IntN(3))
	case "teatro", "familia":
		if rng.IntN(2) == 0 {
			in.ArtistIDs = pickArtists(rng, 1)
		}
	}
	if len(in.ArtistIDs) > 0 && cat == "concierto" && !v.english {
		in.Name = artists[artistIndex[in.ArtistIDs[0]]].name + ": " + name
	}
	// Prices: the front sections cost more; multiples of 5 major units.
	for j, s := range secs[vi] {
		factor := []int64{4, 2, 2, 1, 1}[min(j, 4)]
		if s.Kind == string(catalog.KindGeneralAdmission) {
			factor = 2
		}
		amount := v.base * factor * int64(8+rng.IntN(5)) / 8
		unit := int64(500)
		if v.currency == "CLP" {
			unit = 5000 // CLP has no minor unit: amounts are whole pesos.
		}
		amount = (amount + unit - 1) / unit * unit
		in.Prices = append(in.Prices, catalog.PriceInput{SectionID: s.ID, Amount: amount, Currency: v.currency})
	}
	return in
}

var artistIndex = func() map[string]int {
	m := map[string]int{}
	for i, a := range artists {
		m[id("artist", a.name)] = i
	}
	return m
}()

func pickArtists(rng *rand.Rand, n int) []string {
	out := make([]string, 0, n)
	for _, k := range rng.Perm(len(artists))[:n] {
		out = append(out, id("artist", artists[k].name))
	}
	return out
}
