package graphql

import "testing"

func TestOperationType(t *testing.T) {
	for _, c := range []struct{ doc, name, want string }{
		{`{ a }`, "", "query"},
		{`query { a }`, "", "query"},
		{`mutation { a }`, "", "mutation"},
		{`mutation M($x: In = {a: "}"}) @d(x: [1]) { a(x: "{") }`, "", "mutation"},
		{`# mutation { a }
		  query Q { a }`, "", "query"},
		{`query mutation { a }`, "", "query"},
		{`query Q { a } mutation M { b }`, "M", "mutation"},
		{`query Q { a } mutation M { b }`, "Q", "query"},
		{`query Q { a } mutation M { b }`, "", ""},
		{`query Q { a } mutation M { b }`, "X", ""},
		{`fragment F on Query { a } mutation { ...F }`, "", "mutation"},
		{`{ a(s: """ } mutation \""" {""") }`, "", "query"},
		{`subscription { a }`, "", "subscription"},
		{`mutation { a `, "", ""},
		{`mutation { a(s: "x) }`, "", ""},
		{`}`, "", ""},
		{``, "", ""},
	} {
		if got := operationType(c.doc, c.name); got != c.want {
			t.Errorf("operationType(%q, %q) = %q, want %q", c.doc, c.name, got, c.want)
		}
	}
}

// FuzzOperationType checks that no document makes the scanner loop or panic.
func FuzzOperationType(f *testing.F) {
	for _, s := range []string{`{ a }`, `mutation M($x: In = {a: "}"}) { a }`, `"""`, `#`, `"\`} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, doc, name string) { operationType(doc, name) })
}
