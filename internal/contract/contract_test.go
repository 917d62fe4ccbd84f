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

// shared is the contract beside the repository; copy is the copy this
// repository keeps (testdata/), so that a clone without ../shared still
// checks the schema instead of skipping it.
var (
	shared = filepath.Join("..", "..", "..", "shared", "api", "contract.graphqls")
	copy   = filepath.Join("testdata", "contract.graphqls")
)

func TestSchemaKeepsTheContract(t *testing.T) {
	path := shared
	if _, err := os.Stat(shared); err != nil {
		t.Logf("the shared contract is not beside the repository (%v): checking against %s", err, copy)
		path = copy
	}
	contract := load(t, path)
	ours := load(t, filepath.Join("..", "..", "schema.graphqls"))
	compare(t.Errorf, contract, ours)
}

// The kept copy is the shared contract, so that a clone without ../shared
// checks against what CI checks.
func TestContractCopyIsCurrent(t *testing.T) {
	want, err := os.ReadFile(shared)
	if err != nil {
		t.Logf("no shared contract beside the repository (%v): nothing to compare the copy with", err)
		return
	}
	got, err := os.ReadFile(copy)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("internal/contract/%s differs from ../shared/api/contract.graphqls: run\n\tcp ../shared/api/contract.graphqls internal/contract/%s", copy, copy)
	}
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
			if d, w := defaultOf(gf.DefaultValue), defaultOf(wf.DefaultValue); d != w {
				errorf("%s.%s defaults to %s, the contract says %s", name, wf.Name, d, w)
			}
			for _, wa := range wf.Arguments {
				ga := gf.Arguments.ForName(wa.Name)
				if ga == nil {
					errorf("%s.%s(%s) is missing", name, wf.Name, wa.Name)
				} else if ga.Type.String() != wa.Type.String() {
					errorf("%s.%s(%s) is %s, the contract says %s", name, wf.Name, wa.Name, ga.Type, wa.Type)
				} else if d, w := defaultOf(ga.DefaultValue), defaultOf(wa.DefaultValue); d != w {
					errorf("%s.%s(%s) defaults to %s, the contract says %s", name, wf.Name, wa.Name, d, w)
				}
			}
			for _, ga := range gf.Arguments {
				if wf.Arguments.ForName(ga.Name) == nil && ga.Type.NonNull && ga.DefaultValue == nil {
					errorf("%s.%s(%s) is a new required argument: clients of the contract cannot send it", name, wf.Name, ga.Name)
				}
			}
		}
		if wt.Kind == ast.InputObject {
			for _, gf := range gt.Fields {
				if wt.Fields.ForName(gf.Name) == nil && gf.Type.NonNull && gf.DefaultValue == nil {
					errorf("%s.%s is a new required input field: clients of the contract cannot send it", name, gf.Name)
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

// defaultOf is a default value as GraphQL text ("none" when there is none).
func defaultOf(v *ast.Value) string {
	if v == nil {
		return "none"
	}
	return v.String()
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
		check(t, want, name, src)
	}
	withDefaults := gqlparser.MustLoadSchema(&ast.Source{Input: `type Query { events(first: Int = 20, f: F): [ID!] }
input F { adjacent: Boolean = true, n: Int }`})
	for name, src := range map[string]string{
		"argument default changed":    `type Query { events(first: Int = 10, f: F): [ID!] } input F { adjacent: Boolean = true, n: Int }`,
		"argument default dropped":    `type Query { events(first: Int, f: F): [ID!] } input F { adjacent: Boolean = true, n: Int }`,
		"input field default changed": `type Query { events(first: Int = 20, f: F): [ID!] } input F { adjacent: Boolean = false, n: Int }`,
		"new required input field":    `type Query { events(first: Int = 20, f: F): [ID!] } input F { adjacent: Boolean = true, n: Int, x: Int! }`,
	} {
		check(t, withDefaults, name, src)
	}
	n := 0
	compare(func(string, ...any) { n++ }, want, want)
	compare(func(string, ...any) { n++ }, withDefaults, withDefaults)
	if n != 0 {
		t.Errorf("identical schemas reported %d differences", n)
	}
}

func check(t *testing.T, want *ast.Schema, name, src string) {
	t.Helper()
	got := gqlparser.MustLoadSchema(&ast.Source{Input: src})
	n := 0
	compare(func(string, ...any) { n++ }, want, got)
	if n == 0 {
		t.Errorf("%s: not reported", name)
	}
}
