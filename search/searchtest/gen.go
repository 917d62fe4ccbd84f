// Package searchtest generates catalogs for search tests and benchmarks:
// venues in real cities, artists, and events with Spanish and English
// names, inserted straight into the catalog tables.
package searchtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/ticketing/ticketing/store"
)

// City is a generator city.
type City struct {
	Name, Country string
	Lat, Lon      float64
}

// Cities are the generated venues' cities (accents on purpose).
var Cities = []City{
	{"Madrid", "ES", 40.4168, -3.7038}, {"Barcelona", "ES", 41.3874, 2.1686},
	{"Sevilla", "ES", 37.3891, -5.9845}, {"Málaga", "ES", 36.7213, -4.4214},
	{"Córdoba", "ES", 37.8882, -4.7794}, {"València", "ES", 39.4699, -0.3763},
	{"Bilbao", "ES", 43.2630, -2.9350}, {"A Coruña", "ES", 43.3623, -8.4115},
	{"Zaragoza", "ES", 41.6488, -0.8891}, {"Lisboa", "PT", 38.7223, -9.1393},
	{"Porto", "PT", 41.1579, -8.6291}, {"London", "GB", 51.5072, -0.1276},
	{"Manchester", "GB", 53.4808, -2.2426}, {"Paris", "FR", 48.8566, 2.3522},
	{"Lyon", "FR", 45.7640, 4.8357}, {"Berlin", "DE", 52.5200, 13.4050},
	{"München", "DE", 48.1351, 11.5820}, {"Roma", "IT", 41.9028, 12.4964},
	{"Milano", "IT", 45.4642, 9.1900}, {"Ciudad de México", "MX", 19.4326, -99.1332},
}

// Categories are the generated events' categories.
var Categories = []string{"music", "theatre", "sports", "comedy", "festival", "dance", "family"}

var (
	adjectives = []string{"Gran", "Noche de", "Festival de", "Gala de", "Ciclo de", "Live", "Summer", "Winter", "Grand", "Late Night"}
	nouns      = map[string][]string{
		"music":    {"Música Clásica", "Jazz", "Flamenco", "Rock", "Ópera", "Indie Pop", "Electrónica", "Orquesta Sinfónica", "Guitarra Española", "Blues"},
		"theatre":  {"Teatro Clásico", "Comedia Musical", "Drama", "Shakespeare", "Zarzuela", "Improvisación", "Monólogos"},
		"sports":   {"Fútbol", "Baloncesto", "Tenis", "Pádel", "Boxeo", "Atletismo", "Rugby"},
		"comedy":   {"Stand-up", "Humor", "Monólogos", "Comedy Club", "Risas"},
		"festival": {"Primavera", "Verano", "Cultura Urbana", "Arte Callejero", "Gastronomía"},
		"dance":    {"Ballet", "Danza Contemporánea", "Tango", "Salsa", "Hip Hop"},
		"family":   {"Circo", "Magia", "Títeres", "Cuentacuentos", "Ciencia Divertida"},
	}
	descWords = []string{"una", "velada", "inolvidable", "con", "los", "mejores", "artistas", "del", "momento",
		"an", "unforgettable", "evening", "with", "special", "guests", "en", "directo", "entradas", "limitadas",
		"experience", "música", "ciudad", "escenario", "show", "familia", "tradición", "nueva", "temporada"}
	artistFirst = []string{"Rosalía", "Pablo", "Lucía", "Martín", "Inés", "Jorge", "Carmen", "Álvaro", "Sofía", "Diego", "Nuria", "Héctor", "Olivia", "James", "Emma", "Noah"}
	artistLast  = []string{"Vega", "Fernández", "Ortiz", "Núñez", "Castaño", "Peña", "Muñoz", "Smith", "Brown", "Quartet", "Trío", "Ensemble", "Band", "Orchestra"}
	venueKinds  = []string{"Teatro", "Auditorio", "Palacio de los Deportes", "Sala", "Estadio", "Arena", "Hall", "Club"}
)

// Catalog is what Generate created.
type Catalog struct {
	EventIDs []string
}

// Generate inserts n events over `venues` venues and `artists` artists,
// deterministically from seed, starting between a week ago and a year after
// now (so some are past).
func Generate(ctx context.Context, st *store.Store, n, venues, artists int, seed uint64, now time.Time) (Catalog, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var out Catalog
	type venue struct {
		id       string
		sections []string
	}
	vs := make([]venue, venues)
	var secs []store.Section
	for i := range vs {
		c := Cities[i%len(Cities)]
		v := store.Venue{
			ID: uuid.Must(uuid.NewV7()).String(), Name: fmt.Sprintf("%s %s %d", pick(venueKinds), c.Name, i),
			Address: fmt.Sprintf("Calle %d", i+1), City: c.Name, Country: c.Country,
			Lat: c.Lat + (rng.Float64()-0.5)*0.2, Lon: c.Lon + (rng.Float64()-0.5)*0.2,
		}
		if err := st.VenueCreate(ctx, v); err != nil {
			return out, err
		}
		vs[i].id = v.ID
		for p, name := range []string{"Pista", "Grada"} {
			id := uuid.Must(uuid.NewV7()).String()
			vs[i].sections = append(vs[i].sections, id)
			secs = append(secs, store.Section{ID: id, VenueID: v.ID, Position: p, Name: name,
				Kind: "GENERAL_ADMISSION", Capacity: 500, BoundsX: float64(p) * 120, BoundsW: 100, BoundsH: 100})
		}
	}
	if err := st.SectionsCreate(ctx, secs); err != nil {
		return out, err
	}
	as := make([]string, artists)
	for i := range as {
		as[i] = uuid.Must(uuid.NewV7()).String()
		name := fmt.Sprintf("%s %s %d", pick(artistFirst), pick(artistLast), i)
		if err := st.ArtistCreate(ctx, store.Artist{ID: as[i], Name: name, Genres: []string{}}); err != nil {
			return out, err
		}
	}
	const chunk = 5000
	for done := 0; done < n; done += chunk {
		m := min(chunk, n-done)
		evs := make([]store.Event, 0, m)
		var links []store.EventArtistLink
		var prices []store.Price
		for range m {
			cat := pick(Categories)
			v := vs[rng.IntN(len(vs))]
			starts := now.Add(-7*24*time.Hour + time.Duration(rng.Int64N(int64(372*24*time.Hour)))).Truncate(time.Minute)
			desc := ""
			for j := range 12 + rng.IntN(12) {
				if j > 0 {
					desc += " "
				}
				desc += pick(descWords)
			}
			e := store.Event{
				ID: uuid.Must(uuid.NewV7()).String(), VenueID: v.id,
				Name:     fmt.Sprintf("%s %s", pick(adjectives), pick(nouns[cat])),
				Category: cat, Description: desc, StartsAt: starts,
				SaleStartsAt: starts.Add(-60 * 24 * time.Hour), MaxTicketsPerUser: 6,
				HoldDurationSeconds: 600, Version: 1,
			}
			evs = append(evs, e)
			out.EventIDs = append(out.EventIDs, e.ID)
			for j := range 1 + rng.IntN(2) {
				links = append(links, store.EventArtistLink{EventID: e.ID, ArtistID: as[(rng.IntN(len(as))+j)%len(as)], Position: j})
			}
			base := int64(1000 + rng.IntN(9000))
			prices = append(prices,
				store.Price{EventID: e.ID, SectionID: v.sections[0], Amount: base, Currency: "EUR"},
				store.Price{EventID: e.ID, SectionID: v.sections[1], Amount: base * 2, Currency: "EUR"})
		}
		if err := st.EventsCreate(ctx, evs); err != nil {
			return out, err
		}
		if err := st.EventArtistLinksCreate(ctx, dedupLinks(links)); err != nil {
			return out, err
		}
		if err := st.PricesCreate(ctx, prices); err != nil {
			return out, err
		}
	}
	return out, nil
}

func dedupLinks(ls []store.EventArtistLink) []store.EventArtistLink {
	seen := map[[2]string]bool{}
	out := ls[:0]
	for _, l := range ls {
		k := [2]string{l.EventID, l.ArtistID}
		if !seen[k] {
			seen[k] = true
			out = append(out, l)
		}
	}
	return out
}
