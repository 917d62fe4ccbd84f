package sharedexec

import "testing"

func TestMentions(t *testing.T) {
	for _, c := range []struct {
		doc, name string
		want      int
	}{
		{`subscription($a: String) { u(after: $a) { x } }`, "a", 2},
		{`subscription($a: String, $ab: Int) { u(after: $a, n: $ab) { x } }`, "a", 2},
		{`subscription($a: String) { u(after: $a) { x(f: $a) } }`, "a", 3},
		{`subscription($a_1: String) { u(after: $a_1) }`, "a", 0},
		{`subscription($a:String){u(after:$a)}`, "a", 2},
	} {
		if got := mentions(c.doc, c.name); got != c.want {
			t.Errorf("mentions(%q, %q) = %d, want %d", c.doc, c.name, got, c.want)
		}
	}
}
