package app

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// Limits checked on the raw document before gqlparser validates it
// (validation's field merging is quadratic in repeated response names, and
// it reports an error per conflicting pair), on every transport: POST, GET,
// WebSocket and SSE all go through the executor's operation parameter
// mutators.
const (
	// MaxQueryTokens is the parser's token limit (GRAPHQL_PARSE_FAILED).
	MaxQueryTokens = 2000
	// MaxSelections caps the fields of a document with every fragment
	// spread expanded where it is used (GRAPHQL_VALIDATION_FAILED).
	MaxSelections = 1000
	// MaxRepeatedName caps how often one response name (alias or field
	// name) occurs in one merged selection set: the fields validation
	// compares pairwise (GRAPHQL_VALIDATION_FAILED).
	MaxRepeatedName = 20
	// MaxErrors caps the errors of one response (the rest are dropped and
	// the last one says so).
	MaxErrors = 20
)

// DocumentLimits is a gqlgen extension that parses the document with a
// token limit and refuses, before validation, documents with too many
// selections or too many fields of the same response name. Documents that
// passed are remembered (by their text), so a repeated query costs one
// cache lookup.
type DocumentLimits struct {
	passed *lru.LRU[struct{}]
	// Introspection allows __schema and __type; without it they are
	// refused here, before execution (GRAPHQL_VALIDATION_FAILED).
	Introspection bool
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = &DocumentLimits{}

// NewDocumentLimits returns the extension with a cache of size passed documents.
func NewDocumentLimits(size int, introspection bool) *DocumentLimits {
	return &DocumentLimits{passed: lru.New[struct{}](size), Introspection: introspection}
}

// ExtensionName implements graphql.HandlerExtension.
func (*DocumentLimits) ExtensionName() string { return "DocumentLimits" }

// Validate implements graphql.HandlerExtension.
func (*DocumentLimits) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters implements graphql.OperationParameterMutator.
func (l *DocumentLimits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if err := prescanError(ctx); err != nil {
		return err // refused before decoding (app/prescan.go)
	}
	if p.Query == "" {
		return nil // the executor answers "no operation provided"
	}
	if _, ok := l.passed.Get(ctx, p.Query); ok {
		return nil
	}
	if err := CheckDocument(p.Query, l.Introspection); err != nil {
		return err
	}
	l.passed.Add(ctx, p.Query, struct{}{})
	return nil
}

// CheckDocument parses query with MaxQueryTokens and applies MaxSelections
// and MaxRepeatedName (and refuses introspection unless allowed). Its cost
// is linear in the document's length.
func CheckDocument(query string, introspection bool) *gqlerror.Error {
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, MaxQueryTokens)
	if err != nil {
		gerr, ok := err.(*gqlerror.Error)
		if !ok {
			gerr = gqlerror.Errorf("%s", err)
		}
		errcode.Set(gerr, errcode.ParseFailed)
		return gerr
	}
	c := docCounter{frags: map[string]*ast.FragmentDefinition{}, size: map[string]int{}}
	for _, f := range doc.Fragments {
		c.frags[f.Name] = f
	}
	total := 0
	for _, op := range doc.Operations {
		total = min(total+c.setSize(op.SelectionSet, 0), MaxSelections+1)
	}
	for _, f := range doc.Fragments {
		total = min(total+c.fragSize(f.Name, 0), MaxSelections+1)
	}
	if total > MaxSelections {
		return limitError(fmt.Sprintf("the document selects more than %d fields (fragments counted where they are spread)", MaxSelections), MaxSelections)
	}
	if !introspection && c.introspects(doc) {
		err := gqlerror.Errorf("introspection is disabled on this server")
		errcode.Set(err, errcode.ValidationFailed)
		return err
	}
	for _, op := range doc.Operations {
		if name, n := c.repeated([]ast.SelectionSet{op.SelectionSet}, map[string]bool{}); n > MaxRepeatedName {
			return limitError(fmt.Sprintf("the response name %q occurs %d times in one selection set (limit %d)", truncate(name, 64), n, MaxRepeatedName), MaxRepeatedName)
		}
	}
	return nil
}

func limitError(msg string, limit int) *gqlerror.Error {
	err := gqlerror.Errorf("%s", msg)
	errcode.Set(err, errcode.ValidationFailed)
	err.Extensions["limit"] = limit
	return err
}

type docCounter struct {
	frags map[string]*ast.FragmentDefinition
	size  map[string]int // memo of fragSize; -1 while being computed (a cycle)
}

// setSize is the number of fields of set with fragments expanded, saturated
// at MaxSelections+1. depth guards the recursion (the parser already caps
// nesting).
func (c *docCounter) setSize(set ast.SelectionSet, depth int) int {
	n := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			n += 1 + c.setSize(s.SelectionSet, depth+1)
		case *ast.InlineFragment:
			n += c.setSize(s.SelectionSet, depth+1)
		case *ast.FragmentSpread:
			n += c.fragSize(s.Name, depth+1)
		}
		if n > MaxSelections {
			return MaxSelections + 1
		}
	}
	return n
}

func (c *docCounter) fragSize(name string, depth int) int {
	if n, ok := c.size[name]; ok {
		return max(n, 0) // a cycle counts 0: validation refuses it
	}
	f := c.frags[name]
	if f == nil {
		return 0
	}
	c.size[name] = -1
	n := c.setSize(f.SelectionSet, depth)
	c.size[name] = n
	return n
}

// introspects reports whether any field of doc is __schema or __type
// (__typename is not introspection).
func (c *docCounter) introspects(doc *ast.QueryDocument) bool {
	var walk func(set ast.SelectionSet) bool
	walk = func(set ast.SelectionSet) bool {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				if s.Name == "__schema" || s.Name == "__type" || walk(s.SelectionSet) {
					return true
				}
			case *ast.InlineFragment:
				if walk(s.SelectionSet) {
					return true
				}
			}
		}
		return false
	}
	for _, op := range doc.Operations {
		if walk(op.SelectionSet) {
			return true
		}
	}
	for _, f := range doc.Fragments { // spreads: every fragment is looked at once
		if walk(f.SelectionSet) {
			return true
		}
	}
	return false
}

// repeated merges sets as validation does (fragments and inline fragments
// flattened, fields of the same response name merged) and returns the most
// repeated response name of any merged set and its count. The expanded
// document is at most MaxSelections fields, so this is linear in it.
func (c *docCounter) repeated(sets []ast.SelectionSet, inFrag map[string]bool) (string, int) {
	groups := map[string][]*ast.Field{}
	var order []string
	var collect func(set ast.SelectionSet)
	collect = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				name := s.Alias
				if name == "" {
					name = s.Name
				}
				if _, ok := groups[name]; !ok {
					order = append(order, name)
				}
				groups[name] = append(groups[name], s)
			case *ast.InlineFragment:
				collect(s.SelectionSet)
			case *ast.FragmentSpread:
				if f := c.frags[s.Name]; f != nil && !inFrag[s.Name] {
					inFrag[s.Name] = true
					collect(f.SelectionSet)
					delete(inFrag, s.Name)
				}
			}
		}
	}
	for _, s := range sets {
		collect(s)
	}
	worst, most := "", 0
	for _, name := range order {
		fields := groups[name]
		if len(fields) > most {
			worst, most = name, len(fields)
		}
		if most > MaxRepeatedName {
			return worst, most
		}
		var children []ast.SelectionSet
		for _, f := range fields {
			if len(f.SelectionSet) > 0 {
				children = append(children, f.SelectionSet)
			}
		}
		if len(children) == 0 {
			continue
		}
		if n, k := c.repeated(children, inFrag); k > most {
			worst, most = n, k
			if most > MaxRepeatedName {
				return worst, most
			}
		}
	}
	return worst, most
}

// capErrors is a response middleware keeping at most MaxErrors errors.
func capErrors(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp != nil && len(resp.Errors) > MaxErrors {
		dropped := len(resp.Errors) - (MaxErrors - 1)
		last := gqlerror.Errorf("%d more errors not shown", dropped)
		last.Extensions = map[string]any{"code": resp.Errors[0].Extensions["code"]}
		resp.Errors = append(resp.Errors[:MaxErrors-1:MaxErrors-1], last)
	}
	return resp
}

// truncate shortens s to at most n bytes (on a rune boundary) with an ellipsis.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
