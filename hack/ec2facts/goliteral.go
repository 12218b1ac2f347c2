package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
)

// readVars parses a generated Go file and returns the value of each package-level variable whose
// value is a literal: composite literals become maps (struct fields or string-keyed map entries)
// or slices, calls like aws.Int32(4) or lo.ToPtr("x") become their argument. Only the figures of
// the file are read; none of its code is kept.
func readVars(src []byte) (map[string]any, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					v, err := literal(vs.Values[i])
					if err != nil {
						return nil, fmt.Errorf("var %s: %w", name.Name, err)
					}
					out[name.Name] = v
				}
			}
		}
	}
	return out, nil
}

func literal(e ast.Expr) (any, error) {
	switch x := e.(type) {
	case *ast.BasicLit:
		switch x.Kind {
		case token.STRING:
			return strconv.Unquote(x.Value)
		case token.INT:
			return strconv.ParseInt(x.Value, 0, 64)
		case token.FLOAT:
			return strconv.ParseFloat(x.Value, 64)
		}
		return nil, fmt.Errorf("literal %s", x.Value)
	case *ast.Ident:
		switch x.Name {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "nil":
			return nil, nil
		}
		return x.Name, nil
	case *ast.SelectorExpr:
		return x.Sel.Name, nil
	case *ast.UnaryExpr:
		return literal(x.X)
	case *ast.CallExpr:
		if len(x.Args) != 1 {
			return nil, fmt.Errorf("call with %d arguments", len(x.Args))
		}
		return literal(x.Args[0])
	case *ast.CompositeLit:
		if len(x.Elts) == 0 {
			if _, isMap := x.Type.(*ast.MapType); isMap {
				return map[string]any{}, nil
			}
			return []any{}, nil
		}
		if _, keyed := x.Elts[0].(*ast.KeyValueExpr); !keyed {
			list := make([]any, 0, len(x.Elts))
			for _, el := range x.Elts {
				v, err := literal(el)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			return list, nil
		}
		m := map[string]any{}
		for _, el := range x.Elts {
			kv := el.(*ast.KeyValueExpr)
			k, err := literal(kv.Key)
			if err != nil {
				return nil, err
			}
			v, err := literal(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("%v: %w", k, err)
			}
			m[fmt.Sprint(k)] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("unsupported expression %T", e)
}
