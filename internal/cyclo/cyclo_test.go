package cyclo

import (
	"go/parser"
	"go/token"
	"sort"
	"testing"
)

// ceiling is the highest cyclomatic complexity a production function may
// have. Above it a function is hard to read whole and hard to test branch
// by branch; split it into named steps.
const ceiling = 20

// TestNoFunctionOverCeiling walks every non-test .go file of the module
// and fails naming each function over the ceiling.
func TestNoFunctionOverCeiling(t *testing.T) {
	stats, err := Tree("../..")
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(stats, func(i, j int) bool { return stats[i].Complexity > stats[j].Complexity })
	for _, s := range stats {
		if s.Complexity > ceiling {
			t.Errorf("%s (%s): cyclomatic complexity %d, over %d; split it into named steps", s.Func, s.Pos, s.Complexity, ceiling)
		}
	}
}

// TestComplexityCountsLikeGocyclo pins each rule on a small source: the
// figures are what gocyclo v0.6.0 reports for the same functions.
func TestComplexityCountsLikeGocyclo(t *testing.T) {
	const src = `package p

type T[K any] struct{}

func straight() {}

func branches(a, b bool, xs []int, ch chan int) {
	if a && b || !a { // if +1, && +1, || +1
	}
	for i := 0; i < 3; i++ { // +1
	}
	for range xs { // +1
	}
	switch {
	case a: // +1
	case b, !b: // +1: one per clause, not per expression
	default: // +0
	}
	select {
	case <-ch: // +1
	default: // +0
	}
	f := func() {
		if a { // closures count toward their function: +1
		}
	}
	f()
}

func (t *T[K]) method(a bool) {
	if a {
	}
}

var lit = func(a bool) {
	if a {
	}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"p straight":    1,
		"p branches":    10,
		"p (*T).method": 2,
		"p lit":         2,
	}
	got := map[string]int{}
	for _, s := range File(fset, f) {
		got[s.Func] = s.Complexity
	}
	if len(got) != len(want) {
		t.Errorf("functions = %v, want %v", got, want)
	}
	for name, c := range want {
		if got[name] != c {
			t.Errorf("%s = %d, want %d", name, got[name], c)
		}
	}
}
