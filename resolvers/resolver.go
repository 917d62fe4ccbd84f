// Package resolvers implements the GraphQL schema. Resolvers stay thin: they
// read the caller from the context, convert the input, call one domain
// service and convert the result.
package resolvers

//go:generate go tool gqlgen generate

import (
	"github.com/ticketing/ticketing/catalog"
	"github.com/ticketing/ticketing/holds"
	"github.com/ticketing/ticketing/orders"
	"github.com/ticketing/ticketing/queue"
	"github.com/ticketing/ticketing/search"
	"github.com/ticketing/ticketing/seatmap"
)

// Resolver is the dependency root of the GraphQL layer.
type Resolver struct {
	// Catalog serves venues, artists, events, availability and seat maps.
	Catalog *catalog.Service
	// Holds creates, cancels and reads seat holds.
	Holds *holds.Service
	// Queue is the virtual waiting room.
	Queue *queue.Service
	// SeatMaps is the live seat map: cached snapshots and subscriptions.
	SeatMaps *seatmap.Service
	// Search answers searchEvents from the search projection.
	Search *search.Service
	// Orders creates and reads orders and their payments and tickets.
	Orders *orders.Service
}
