package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/ticketing/ticketing/graph"
	"github.com/ticketing/ticketing/resolvers"
)

// FuzzRequestDecoding sends arbitrary bodies and queries through the
// GraphQL handler's decoding, the document limits, validation and the
// input checks (the resolvers have no services: nothing is executed that
// needs the database). Whatever comes in, the answer is a JSON GraphQL
// response with a client error code, never a panic, a 500 or INTERNAL
// before execution. The corpus is testdata/fuzz/FuzzRequestDecoding; run
// with go test -fuzz FuzzRequestDecoding ./app/.
func FuzzRequestDecoding(f *testing.F) {
	es := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{}, Complexity: costModel()})
	srv := handler.New(es)
	srv.AddTransport(transport.POST{})
	srv.AddTransport(transport.GET{})
	srv.SetParserTokenLimit(MaxQueryTokens)
	srv.SetDisableSuggestion(true)
	srv.Use(NewDocumentLimits(100, false))
	srv.Use(DepthLimit{Max: MaxQueryDepth})
	srv.Use(&InputCheck{})
	srv.Use(&ComplexityLimit{Max: MaxQueryComplexity})
	srv.AroundResponses(capErrors)
	// Only decoding and validation are under test: operations that pass
	// are not executed.
	srv.AroundOperations(func(context.Context, graphql.OperationHandler) graphql.ResponseHandler {
		return graphql.OneShot(&graphql.Response{Data: []byte("null")})
	})

	f.Add(`{"query":"{ __typename }"}`)
	f.Add(`[{"query":"{ __typename }"}]`)
	f.Add(`{"query":"query($v: String) { __typename }","variables":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}`)
	f.Add(`{"query":"{ __typename }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`)
	f.Add(`{"query":"{ ` + strings.Repeat(`a:id a:name `, 50) + `}"}`)
	f.Add(`{"query":"mutation { createHold(input: {eventId: \"x\", idempotencyKey: \"\u0000\", generalAdmission: [{sectionId: \"s\", quantity: 4611686018427387905}]}) { id } }"}`)
	f.Add(`{"query":"{ ...F } fragment F on Query { ...F }"}`)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		var resp struct {
			Errors []struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("not JSON: %v: %q", err, rec.Body.String())
		}
		if len(resp.Errors) > MaxErrors {
			t.Fatalf("%d errors", len(resp.Errors))
		}
	})
}
