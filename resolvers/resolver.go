// Package resolvers implements the GraphQL schema. Resolvers stay thin: they
// read the caller from the context, convert the input, call one domain
// service and convert the result.
package resolvers

//go:generate go tool gqlgen generate

// Resolver is the dependency root of the GraphQL layer.
type Resolver struct{}
