package docgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// apiPackage is what the API reference says about one API package, read from
// its source.
type apiPackage struct {
	group, version string
	doc            string
	types          map[string]*apiType
	consts         []constBlock // untyped string constants, in source order
}

// apiType is one named type of the package.
type apiType struct {
	name    string
	doc     string
	markers []string
	fields  []apiField // nil unless a struct
	basic   string     // the underlying type of a named non-struct type
	values  []apiConst // constants of this type, in source order
}

// apiField is one struct field.
type apiField struct {
	goName    string
	json      string // "" for an inline embedded field
	omitempty bool   // omitempty or omitzero
	typ       ast.Expr
	imports   map[string]string // the file's import names → paths, to resolve typ
	doc       string
	markers   []string
}

// constBlock is one const declaration with its doc comment.
type constBlock struct {
	doc    string
	consts []apiConst
}

// apiConst is one string constant.
type apiConst struct {
	name, value, doc string
}

// parseAPI reads the non-test, non-generated Go files of dir.
func parseAPI(dir string) (*apiPackage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated") {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	pkg := &apiPackage{version: filepath.Base(dir), types: map[string]*apiType{}}
	fset := token.NewFileSet()
	typed := map[string][]apiConst{} // constants of named types, joined after all files are read
	for _, n := range names {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if f.Doc != nil {
			prose, markers := splitComment(f.Doc)
			if prose != "" {
				pkg.doc = prose
			}
			for _, m := range markers {
				if g, ok := strings.CutPrefix(m, "+groupName="); ok {
					pkg.group = g
				}
			}
		}
		imports := importNames(f)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			switch gd.Tok {
			case token.TYPE:
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					if !ts.Name.IsExported() {
						continue
					}
					doc := ts.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					t := &apiType{name: ts.Name.Name}
					t.doc, t.markers = splitComment(doc)
					switch u := ts.Type.(type) {
					case *ast.StructType:
						t.fields = structFields(u, imports)
					case *ast.Ident:
						t.basic = u.Name
					}
					pkg.types[t.name] = t
				}
			case token.CONST:
				block := constBlock{}
				if gd.Lparen.IsValid() { // a block: its comment is the block's
					block.doc, _ = splitComment(gd.Doc)
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					doc := vs.Doc
					if doc == nil {
						doc = vs.Comment
					}
					if doc == nil && !gd.Lparen.IsValid() { // a single const: the comment is its own
						doc = gd.Doc
					}
					prose, _ := splitComment(doc)
					for i, name := range vs.Names {
						if !name.IsExported() || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						value, err := strconv.Unquote(lit.Value)
						if err != nil {
							return nil, fmt.Errorf("%s: %w", name.Name, err)
						}
						c := apiConst{name: name.Name, value: value, doc: prose}
						if id, ok := vs.Type.(*ast.Ident); ok {
							typed[id.Name] = append(typed[id.Name], c)
							continue
						}
						block.consts = append(block.consts, c)
					}
				}
				if len(block.consts) == 0 {
					continue
				}
				if block.doc == "" && len(pkg.consts) > 0 && pkg.consts[len(pkg.consts)-1].doc == "" {
					last := &pkg.consts[len(pkg.consts)-1] // single consts share one block
					last.consts = append(last.consts, block.consts...)
					continue
				}
				pkg.consts = append(pkg.consts, block)
			}
		}
	}
	for name, values := range typed {
		if t := pkg.types[name]; t != nil {
			t.values = values
		}
	}
	return pkg, nil
}

func structFields(st *ast.StructType, imports map[string]string) []apiField {
	var out []apiField
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			tag, _ = strconv.Unquote(f.Tag.Value)
		}
		jsonTag := reflect.StructTag(tag).Get("json")
		name, opts, _ := strings.Cut(jsonTag, ",")
		if name == "-" {
			continue
		}
		af := apiField{typ: f.Type, imports: imports, json: name}
		af.doc, af.markers = splitComment(f.Doc)
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				af.omitempty = true
			}
		}
		if len(f.Names) == 0 { // embedded
			af.goName = typeName(f.Type)
			if strings.Contains(opts, "inline") {
				af.json = ""
			}
			out = append(out, af)
			continue
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			af.goName = n.Name
			out = append(out, af)
		}
	}
	return out
}

// typeName is the last name of a (possibly qualified) type expression.
func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.StarExpr:
		return typeName(t.X)
	}
	return ""
}

// importNames maps the names a file uses for its imports to their paths.
func importNames(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = p
	}
	return m
}

// splitComment separates a doc comment into prose (paragraphs joined by a
// blank line, each on one line) and kubebuilder-style markers (lines
// starting with "+").
func splitComment(cg *ast.CommentGroup) (string, []string) {
	if cg == nil {
		return "", nil
	}
	var paras []string
	var cur []string
	var markers []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(cg.Text(), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "+"):
			flush()
			markers = append(markers, line)
		case line == "":
			flush()
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return strings.Join(paras, "\n\n"), markers
}
