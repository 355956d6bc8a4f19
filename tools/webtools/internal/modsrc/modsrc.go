// Package modsrc finds a file in the source of a module in the module
// cache, for webtools' table generators, which read their data from the
// packages the tables replace.
package modsrc

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
)

// File is the path of rel inside module's source, found with go list -m
// (so the version is the one go.mod requires).
func File(module, rel string) (string, error) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil || len(bytes.TrimSpace(dir)) == 0 {
		return "", fmt.Errorf("cannot find %s's source (go list -m): %v", module, err)
	}
	return filepath.Join(string(bytes.TrimSpace(dir)), rel), nil
}

// MapKeys returns the string keys of the map literal assigned to the
// package-level variable name in the Go file src, and fails when it finds
// fewer than least (a layout change the generators must not miss).
func MapKeys(src, name string, least int) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, src, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", src, err)
	}
	var keys []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != name || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			return false
		}
		for _, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if bl, ok := kv.Key.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				if s, err := strconv.Unquote(bl.Value); err == nil {
					keys = append(keys, s)
				}
			}
		}
		return false
	})
	if len(keys) < least {
		return nil, fmt.Errorf("%s: found %d keys in %s, want at least %d: has its layout changed?", src, len(keys), name, least)
	}
	return keys, nil
}
