// Package contract checks that schema.graphqls keeps every name of the
// shared public contract (../shared/api/contract.graphqls): the schema may
// add, never rename or drop.
package contract

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

func load(t *testing.T, path string) *ast.Schema {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, gerr := gqlparser.LoadSchema(&ast.Source{Name: path, Input: string(b)})
	if gerr != nil {
		t.Fatalf("%s: %v", path, gerr)
	}
	return s
}

func TestSchemaKeepsTheContract(t *testing.T) {
	contractPath := filepath.Join("..", "..", "..", "shared", "api", "contract.graphqls")
	if _, err := os.Stat(contractPath); err != nil {
		t.Skipf("the shared contract is not beside the repository (%v)", err)
	}
	contract := load(t, contractPath)
	ours := load(t, filepath.Join("..", "..", "schema.graphqls"))
	compare(t.Errorf, contract, ours)
}

// compare reports every type, field, argument, input field and enum value of
// want that got is missing or types differently.
func compare(errorf func(format string, args ...any), want, got *ast.Schema) {
	for name, wt := range want.Types {
		if wt.BuiltIn {
			continue
		}
		gt := got.Types[name]
		if gt == nil {
			errorf("type %s is missing", name)
			continue
		}
		if gt.Kind != wt.Kind {
			errorf("type %s is a %s, the contract says %s", name, gt.Kind, wt.Kind)
			continue
		}
		for _, wf := range wt.Fields {
			gf := gt.Fields.ForName(wf.Name)
			if gf == nil {
				errorf("%s.%s is missing", name, wf.Name)
				continue
			}
			if gf.Type.String() != wf.Type.String() {
				errorf("%s.%s is %s, the contract says %s", name, wf.Name, gf.Type, wf.Type)
			}
			for _, wa := range wf.Arguments {
				ga := gf.Arguments.ForName(wa.Name)
				if ga == nil {
					errorf("%s.%s(%s) is missing", name, wf.Name, wa.Name)
				} else if ga.Type.String() != wa.Type.String() {
					errorf("%s.%s(%s) is %s, the contract says %s", name, wf.Name, wa.Name, ga.Type, wa.Type)
				}
			}
			for _, ga := range gf.Arguments {
				if wf.Arguments.ForName(ga.Name) == nil && ga.Type.NonNull && ga.DefaultValue == nil {
					errorf("%s.%s(%s) is a new required argument: clients of the contract cannot send it", name, wf.Name, ga.Name)
				}
			}
		}
		for _, wv := range wt.EnumValues {
			if gt.EnumValues.ForName(wv.Name) == nil {
				errorf("enum value %s.%s is missing", name, wv.Name)
			}
		}
	}
}

// TestCompareCatchesChanges makes sure the comparison can fail.
func TestCompareCatchesChanges(t *testing.T) {
	want := gqlparser.MustLoadSchema(&ast.Source{Input: `type Query { event(id: ID!): Event }
type Event { id: ID! name: String! }`})
	for name, src := range map[string]string{
		"renamed field": `type Query { event(id: ID!): Event } type Event { id: ID! title: String! }`,
		"changed type":  `type Query { event(id: ID!): Event } type Event { id: ID! name: String }`,
		"renamed arg":   `type Query { event(eventId: ID!): Event } type Event { id: ID! name: String! }`,
		"new required":  `type Query { event(id: ID!, x: Int!): Event } type Event { id: ID! name: String! }`,
		"type missing":  `type Query { event(id: ID!): String }`,
	} {
		got := gqlparser.MustLoadSchema(&ast.Source{Input: src})
		n := 0
		compare(func(string, ...any) { n++ }, want, got)
		if n == 0 {
			t.Errorf("%s: not reported", name)
		}
	}
	n := 0
	compare(func(string, ...any) { n++ }, want, want)
	if n != 0 {
		t.Errorf("identical schemas reported %d differences", n)
	}
}
