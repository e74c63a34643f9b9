package metal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestBindingEncodesWithoutReflection reads the darwin binding (it cannot
// run here) and checks that the calls made per dispatch reach
// objc_msgSend only through purego.SyscallN: no purego/objc Send, no
// function made by purego.RegisterFunc, both of which go through
// reflection and allocate on every call. It also keeps the binding thin.
func TestBindingEncodesWithoutReflection(t *testing.T) {
	const file = "metal_darwin_arm64.go"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			funcs[fd.Name.Name] = fd
		}
	}
	perDispatch := []string{"SetPipeline", "SetBytes", "SetBuffer", "SetBufferOffset", "MemoryBarrier", "DispatchThreadgroups", "EndEncoding",
		"Retain", "Commit", "WaitUntilCompleted", "Release"}
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		fd, ok := funcs[name]
		if !ok || seen[name] {
			return
		}
		seen[name] = true
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fun := call.Fun
			if ix, ok := fun.(*ast.IndexExpr); ok {
				fun = ix.X
			}
			switch fn := fun.(type) {
			case *ast.SelectorExpr:
				pkg, _ := fn.X.(*ast.Ident)
				switch {
				case pkg != nil && pkg.Name == "purego" && fn.Sel.Name == "SyscallN",
					pkg != nil && pkg.Name == "runtime" && fn.Sel.Name == "KeepAlive",
					pkg != nil && pkg.Name == "unsafe":
				case funcs[fn.Sel.Name] != nil:
					visit(fn.Sel.Name)
				default: // objc Send, purego.RegisterFunc'd function values...
					t.Errorf("%s: %s calls %s on the per-dispatch path: only purego.SyscallN avoids reflection", fset.Position(call.Pos()), name, fn.Sel.Name)
				}
			case *ast.Ident:
				visit(fn.Name)
			}
			return true
		})
	}
	for _, name := range perDispatch {
		if funcs[name] == nil {
			t.Fatalf("%s has no method %s", file, name)
		}
		visit(name)
	}
	if !seen["send"] {
		t.Errorf("the per-dispatch methods do not reach send (purego.SyscallN)")
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	for _, l := range strings.Split(string(src), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			code++
		}
	}
	if code > 250 {
		t.Errorf("%s has %d lines of code; the binding must stay thin (at most 250): move logic to metal/mtl", file, code)
	}
	t.Logf("%s: %d lines of code, per-dispatch path %v", file, code, seen)
}
