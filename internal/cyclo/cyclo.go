// Package cyclo measures the cyclomatic complexity of Go functions the way
// gocyclo (github.com/fzipp/gocyclo) does, so the module can hold itself to
// a ceiling in its own tests without an outside tool: one for the function,
// plus one for each if, for, range, non-default case clause, non-default
// select clause, and each && and ||. Closures count toward the function
// that holds them, as in gocyclo.
//
// Unlike gocyclo it does not honour a //gocyclo:ignore directive: the
// ceiling has no per-function escape hatch, only the explicit list kept in
// the guard test.
package cyclo

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
)

// Stat is the complexity of one function, named the way gocyclo prints it:
// the package name, a space, then "Name" or "(Recv).Name".
type Stat struct {
	Func       string
	Complexity int
	Pos        token.Position
}

// Complexity returns the cyclomatic complexity of a function node.
func Complexity(fn ast.Node) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil { // default does not branch
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil { // default does not branch
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// File returns the statistics of every function declared in a parsed file:
// function and method declarations, and function literals bound by a
// package-level var (as gocyclo counts them).
func File(fset *token.FileSet, f *ast.File) []Stat {
	var stats []Stat
	add := func(n ast.Node, name string) {
		stats = append(stats, Stat{
			Func:       f.Name.Name + " " + name,
			Complexity: Complexity(n),
			Pos:        fset.Position(n.Pos()),
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d, funcName(d))
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.FuncLit); ok {
						add(lit, vs.Names[0].Name)
					}
				}
			}
		}
	}
	return stats
}

// Tree parses every non-test .go file below root, skipping the folders
// gocyclo skips (testdata, vendor, and names starting with "." or "_"),
// and returns the statistics of all their functions.
func Tree(root string) ([]Stat, error) {
	var stats []Stat
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != root && skipDir(e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("cyclo: %w", err)
		}
		stats = append(stats, File(fset, f)...)
		return nil
	})
	return stats, err
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// funcName renders "Name" or "(Recv).Name" with the receiver type as
// gocyclo writes it: pointer kept, type parameters dropped
// ("(*Service).Update", "(*List).Add").
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || fn.Recv.NumFields() == 0 {
		return fn.Name.Name
	}
	return "(" + recvString(fn.Recv.List[0].Type) + ")." + fn.Name.Name
}

func recvString(t ast.Expr) string {
	switch t := t.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return "*" + recvString(t.X)
	case *ast.IndexExpr:
		return recvString(t.X)
	case *ast.IndexListExpr:
		return recvString(t.X)
	}
	return "BADRECV"
}
