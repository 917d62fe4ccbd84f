package app

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/ticketing/ticketing/apperr"
)

// InputCheck refuses, before execution, arguments that no resolver should
// see: a string with a NUL byte (Postgres cannot store one) and an Int
// outside GraphQL's 32-bit range (gqlgen's Int is a Go int: 2^62 would
// overflow a sum or be truncated on the way to SQL). The answer is
// BAD_USER_INPUT naming the argument ("input.generalAdmission.quantity").
type InputCheck struct{ schema *ast.Schema }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = &InputCheck{}

// ExtensionName implements graphql.HandlerExtension.
func (*InputCheck) ExtensionName() string { return "InputCheck" }

// Validate implements graphql.HandlerExtension.
func (c *InputCheck) Validate(es graphql.ExecutableSchema) error {
	c.schema = es.Schema()
	return nil
}

// MutateOperationContext implements graphql.OperationContextMutator.
func (c *InputCheck) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	w := inputWalker{schema: c.schema, vars: oc.Variables, seen: map[string]bool{}}
	if err := w.set(oc.Operation.SelectionSet, oc.Doc.Fragments); err != nil {
		d, _ := apperr.Describe(err)
		g := gqlerror.Errorf("%s", d.Message)
		g.Extensions = map[string]any{"code": d.Code}
		for k, v := range d.Extensions {
			g.Extensions[k] = v
		}
		return g
	}
	return nil
}

type inputWalker struct {
	schema *ast.Schema
	vars   map[string]any
	seen   map[string]bool // fragments already checked
}

func (w *inputWalker) set(set ast.SelectionSet, frags ast.FragmentDefinitionList) error {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			for _, a := range s.Arguments {
				var typ *ast.Type
				if s.Definition != nil {
					if d := s.Definition.Arguments.ForName(a.Name); d != nil {
						typ = d.Type
					}
				}
				v, err := a.Value.Value(w.vars)
				if err != nil {
					continue // validation has refused it
				}
				if err := w.value(a.Name, typ, v); err != nil {
					return err
				}
			}
			if err := w.set(s.SelectionSet, frags); err != nil {
				return err
			}
		case *ast.InlineFragment:
			if err := w.set(s.SelectionSet, frags); err != nil {
				return err
			}
		case *ast.FragmentSpread:
			if f := frags.ForName(s.Name); f != nil && !w.seen[s.Name] {
				w.seen[s.Name] = true
				if err := w.set(f.SelectionSet, frags); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// value checks v, of GraphQL type typ (nil if unknown), found at path.
func (w *inputWalker) value(path string, typ *ast.Type, v any) error {
	switch x := v.(type) {
	case string:
		if strings.IndexByte(x, 0) >= 0 {
			return apperr.Invalid(path, "must not contain a NUL character")
		}
		if typ != nil && typ.NamedType == "Int" {
			if _, err := strconv.ParseInt(x, 10, 32); err != nil {
				return apperr.Invalid(path, "must be a 32-bit integer")
			}
		}
	case []any:
		var elem *ast.Type
		if typ != nil {
			elem = typ.Elem
		}
		for _, e := range x {
			if err := w.value(path, elem, e); err != nil {
				return err
			}
		}
	case map[string]any:
		var def *ast.Definition
		if typ != nil && w.schema != nil {
			def = w.schema.Types[typ.Name()]
		}
		for k, e := range x {
			var ft *ast.Type
			if def != nil {
				if f := def.Fields.ForName(k); f != nil {
					ft = f.Type
				}
			}
			if err := w.value(path+"."+k, ft, e); err != nil {
				return err
			}
		}
	default:
		if typ != nil && typ.NamedType == "Int" && !int32Range(x) {
			return apperr.Invalid(path, "must be an integer from %d to %d", math.MinInt32, math.MaxInt32)
		}
	}
	return nil
}

// int32Range reports whether a decoded number fits GraphQL's Int.
func int32Range(v any) bool {
	var f float64
	switch n := v.(type) {
	case int:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case int32:
		return true
	case int64:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case float64:
		f = n
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return false
		}
		return i >= math.MinInt32 && i <= math.MaxInt32
	default:
		return true
	}
	return f >= math.MinInt32 && f <= math.MaxInt32 && f == math.Trunc(f)
}
