package gemma3n

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestModelsNeverBuildMasks fails if any Go file under models/ calls
// tensor.NewMask or writes a tensor.Mask literal: masks come only from
// kvcache, together with the keys they describe.
func TestModelsNeverBuildMasks(t *testing.T) {
	root := filepath.Join("..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		names := map[string]bool{}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "mlxchat/tensor" {
				name := "tensor"
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = true
			}
		}
		isTensor := func(e ast.Expr, sel string) bool {
			s, ok := e.(*ast.SelectorExpr)
			if !ok || s.Sel.Name != sel {
				return false
			}
			id, ok := s.X.(*ast.Ident)
			return ok && names[id.Name]
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if isTensor(x.Fun, "NewMask") {
					t.Errorf("%s: calls tensor.NewMask; masks must come from kvcache", fset.Position(x.Pos()))
				}
			case *ast.CompositeLit:
				if isTensor(x.Type, "Mask") {
					t.Errorf("%s: builds a tensor.Mask literal; masks must come from kvcache", fset.Position(x.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("parsed only %d files under %s", files, root)
	}
}
