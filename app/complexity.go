package app

import (
	"github.com/ticketing/ticketing/graph"
	"github.com/ticketing/ticketing/graph/model"
)

// Costs of list fields for the complexity limit (MaxQueryComplexity). By
// default gqlgen counts every field as 1 whatever it returns, so 285
// aliases of searchEvents(first: 100) { ... venue { sections { seats } } }
// cost what 285 single events cost. Here a paginated list costs its page
// size times what is selected in each item, and an unpaginated list of
// seats or sections an estimate of its length: a query's cost grows with
// what it can return.
const (
	defaultPage  = 20 // the contract's default `first`
	seatsCost    = 20 // a seat map or section's seats, as a multiple of one seat's fields
	sectionsCost = 5  // a venue's sections
)

func page(child int, first *int) int {
	n := defaultPage
	if first != nil && *first > 0 {
		n = *first
	}
	return 1 + n*child
}

func list(n int) func(child int) int { return func(child int) int { return 1 + n*child } }

// costModel is the schema's cost model.
func costModel() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	c.Query.SearchEvents = func(child int, _ *model.EventSearchInput, first *int, _ *string) int { return page(child, first) }
	c.Query.Events = func(child int, first *int, _, _, _ *string) int { return page(child, first) }
	c.Query.MyOrders = func(child int, first *int, _ *string) int { return page(child, first) }
	c.Artist.Events = func(child int, first *int, _ *string) int { return page(child, first) }
	c.SeatMap.Seats = list(seatsCost)
	c.SeatMapUpdate.Seats = list(seatsCost)
	c.Section.Seats = list(seatsCost)
	c.Venue.Sections = list(sectionsCost)
	return c
}
