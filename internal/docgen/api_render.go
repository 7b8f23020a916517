package docgen

import (
	"bytes"
	"fmt"
	"go/ast"
	"maps"
	"slices"
	"strings"
)

// APIReference renders the reference page of the API package in dir: each
// resource (a type marked +kubebuilder:object:root=true that has a Spec),
// every type it reaches, and the package's string constants. Field names come
// from json tags, requiredness from +optional and omitempty, defaults and
// validation from kubebuilder markers. source is the package path the page
// says it was generated from.
func APIReference(dir, source string) ([]byte, error) {
	pkg, err := parseAPI(dir)
	if err != nil {
		return nil, err
	}
	if pkg.group == "" {
		return nil, fmt.Errorf("%s: no +groupName marker in the package comment", dir)
	}
	var roots []*apiType
	for _, name := range sortedTypeNames(pkg) {
		t := pkg.types[name]
		if hasMarker(t.markers, "+kubebuilder:object:root=true") && t.field("Spec") != nil {
			roots = append(roots, t)
		}
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("%s: no root type with a Spec", dir)
	}
	order := reachable(pkg, roots)

	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s API reference\n\n", strings.Join(typeNames(roots), ", "))
	fmt.Fprintf(&b, "<!-- Generated from %s by `make docs`; do not edit. -->\n\n", source)
	fmt.Fprintf(&b, "API group `%s`, version `%s`.", pkg.group, pkg.version)
	if pkg.doc != "" { // "Package v1alpha1 holds" reads "`api/v1alpha1` holds"
		doc := oneLine(pkg.doc)
		if rest, ok := strings.CutPrefix(doc, "Package "+pkg.version+" "); ok {
			doc = "`" + source + "` " + rest
		}
		fmt.Fprintf(&b, " %s", markup(doc))
	}
	b.WriteString(" Fields are listed in the order of the Go types; *required* fields must be set, every other field may be left out.\n\n")
	b.WriteString("Types:\n\n")
	for _, t := range order {
		fmt.Fprintf(&b, "- [%s](#%s)\n", t.name, Slug(t.name))
	}
	if len(pkg.consts) > 0 {
		b.WriteString("- [Constants](#constants)\n")
	}
	for _, t := range order {
		renderType(&b, pkg, t, hasMarker(t.markers, "+kubebuilder:object:root=true"))
	}
	if len(pkg.consts) > 0 {
		b.WriteString("\n## Constants\n")
		for _, c := range pkg.consts {
			renderConsts(&b, c)
		}
	}
	return b.Bytes(), nil
}

func (t *apiType) field(goName string) *apiField {
	for i := range t.fields {
		if t.fields[i].goName == goName {
			return &t.fields[i]
		}
	}
	return nil
}

func typeNames(ts []*apiType) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.name)
	}
	return out
}

// sortedTypeNames is the package's type names in a fixed order.
func sortedTypeNames(pkg *apiPackage) []string {
	return slices.Sorted(maps.Keys(pkg.types))
}

// reachable lists roots, then every local type their fields name, breadth
// first in field order, each once.
func reachable(pkg *apiPackage, roots []*apiType) []*apiType {
	seen := map[string]bool{}
	var order []*apiType
	queue := append([]*apiType(nil), roots...)
	for _, r := range roots {
		seen[r.name] = true
	}
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		order = append(order, t)
		for _, f := range t.fields {
			for _, name := range localTypes(f.typ) {
				if lt := pkg.types[name]; lt != nil && !seen[name] {
					seen[name] = true
					queue = append(queue, lt)
				}
			}
		}
	}
	return order
}

// localTypes are the unqualified type names in e.
func localTypes(e ast.Expr) []string {
	switch t := e.(type) {
	case *ast.Ident:
		return []string{t.Name}
	case *ast.StarExpr:
		return localTypes(t.X)
	case *ast.ArrayType:
		return localTypes(t.Elt)
	case *ast.MapType:
		return append(localTypes(t.Key), localTypes(t.Value)...)
	}
	return nil
}

func renderType(b *bytes.Buffer, pkg *apiPackage, t *apiType, root bool) {
	fmt.Fprintf(b, "\n## %s\n\n", t.name)
	if t.doc != "" {
		b.WriteString(markup(t.doc) + "\n\n")
	}
	if root {
		if facts := resourceFacts(t.markers); facts != "" {
			b.WriteString(facts + "\n\n")
		}
	}
	if rules := validation(t.markers); len(rules) > 0 {
		fmt.Fprintf(b, "Validation: %s.\n\n", strings.Join(rules, "; "))
	}
	if t.fields == nil {
		renderNamedBasic(b, t)
		return
	}
	b.WriteString("| Field | Type | Description |\n|---|---|---|\n")
	for _, f := range t.fields {
		if f.json == "" { // inline embedded: apiVersion and kind
			if typeName(f.typ) == "TypeMeta" {
				fmt.Fprintf(b, "| `apiVersion` | string | `%s/%s` |\n", pkg.group, pkg.version)
				fmt.Fprintf(b, "| `kind` | string | `%s` |\n", t.name)
			}
			continue
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", f.json, typeText(pkg, f.typ, f.imports), cell(fieldDescription(f)))
	}
}

// renderNamedBasic describes a named string (or other basic) type and its
// constants.
func renderNamedBasic(b *bytes.Buffer, t *apiType) {
	fmt.Fprintf(b, "A %s.", basicName(t.basic))
	if len(t.values) == 0 {
		b.WriteString("\n")
		return
	}
	b.WriteString(" Values:\n\n| Value | Meaning |\n|---|---|\n")
	for _, v := range t.values {
		fmt.Fprintf(b, "| `%s` | %s |\n", v.value, cell(markup(stripName(v.doc, v.name))))
	}
}

func renderConsts(b *bytes.Buffer, c constBlock) {
	heading := "Other constants"
	if c.doc != "" {
		heading = firstPhrase(c.doc)
	}
	fmt.Fprintf(b, "\n### %s\n\n", heading)
	if c.doc != "" {
		b.WriteString(markup(c.doc) + "\n\n")
	}
	b.WriteString("| Value | Go name | Meaning |\n|---|---|---|\n")
	for _, k := range c.consts {
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", k.value, k.name, cell(markup(stripName(k.doc, k.name))))
	}
}

// fieldDescription is a field's doc comment (its leading Go name replaced by
// the json name) followed by what its markers say.
func fieldDescription(f apiField) string {
	var parts []string
	required := !hasMarker(f.markers, "+optional") && !f.omitempty
	if required {
		parts = append(parts, "*Required.*")
	}
	if f.doc != "" {
		parts = append(parts, markup(renameLead(f.doc, f.goName, f.json)))
	}
	if d, ok := markerValue(f.markers, "+kubebuilder:default="); ok {
		d = strings.Trim(d, `"`)
		if !strings.Contains(f.doc, "Defaults to "+d) { // else the comment says it already
			parts = append(parts, fmt.Sprintf("Default: `%s`.", d))
		}
	}
	if rules := validation(f.markers); len(rules) > 0 {
		parts = append(parts, "Validation: "+strings.Join(rules, "; ")+".")
	}
	return strings.Join(parts, " ")
}

// validation turns kubebuilder validation markers into short phrases.
func validation(markers []string) []string {
	var out []string
	var minLen, maxLen string
	for _, m := range markers {
		rest, ok := strings.CutPrefix(m, "+kubebuilder:validation:")
		if !ok {
			continue
		}
		i := strings.IndexAny(rest, ":=")
		if i < 0 {
			continue
		}
		key, value := rest[:i], rest[i+1:]
		switch key {
		case "Enum":
			var vals []string
			for _, v := range strings.Split(value, ";") {
				vals = append(vals, "`"+strings.Trim(v, `"`)+"`")
			}
			out = append(out, "one of "+strings.Join(vals, ", "))
		case "Minimum":
			out = append(out, "at least "+value)
		case "Maximum":
			out = append(out, "at most "+value)
		case "MinLength":
			minLen = value
		case "MaxLength":
			maxLen = value
		case "MinItems":
			out = append(out, "at least "+value+" items")
		case "MaxItems":
			out = append(out, "at most "+value+" items")
		case "Pattern":
			out = append(out, "matches `"+strings.Trim(value, "`")+"`")
		case "XValidation":
			if msg := quotedParam(value, "message"); msg != "" {
				out = append(out, msg)
			}
		}
	}
	switch {
	case minLen == "1" && maxLen != "":
		out = append([]string{"1 to " + maxLen + " characters"}, out...)
	case minLen != "" && maxLen != "":
		out = append([]string{minLen + " to " + maxLen + " characters"}, out...)
	case maxLen != "":
		out = append([]string{"at most " + maxLen + " characters"}, out...)
	case minLen == "1":
		out = append([]string{"not empty"}, out...)
	case minLen != "":
		out = append([]string{"at least " + minLen + " characters"}, out...)
	}
	return out
}

// resourceFacts summarises a root type's resource markers.
func resourceFacts(markers []string) string {
	var facts, columns []string
	for _, m := range markers {
		rest, ok := strings.CutPrefix(m, "+kubebuilder:")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(rest, "resource:"):
			for _, kv := range strings.Split(strings.TrimPrefix(rest, "resource:"), ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "shortName":
					facts = append(facts, "short name `"+v+"`")
				case "categories":
					facts = append(facts, "category `"+v+"`")
				case "scope":
					facts = append(facts, "scope "+v)
				}
			}
		case rest == "subresource:status":
			facts = append(facts, "status subresource")
		case strings.HasPrefix(rest, "printcolumn:"):
			if name := unquotedParam(strings.TrimPrefix(rest, "printcolumn:"), "name"); name != "" {
				columns = append(columns, name)
			}
		}
	}
	var out []string
	if len(facts) > 0 {
		out = append(out, "Resource: "+strings.Join(facts, ", ")+".")
	}
	if len(columns) > 0 {
		out = append(out, "`kubectl get` columns: "+strings.Join(columns, ", ")+".")
	}
	return strings.Join(out, " ")
}

// Types the reference names in words or with a link instead of their Go
// name, keyed by import path and name.
var externalTypes = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":                 "duration (`30s`, `5m`, `1h30m`)",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":                     "timestamp (RFC 3339)",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Condition":                "[Condition](https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#Condition)",
	"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta":               "[ObjectMeta](https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#ObjectMeta)",
	"k8s.io/apimachinery/pkg/types.UID":                             "string",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": "object (any YAML)",
}

// typeText renders a field's type: local types link to their section.
func typeText(pkg *apiPackage, e ast.Expr, imports map[string]string) string {
	switch t := e.(type) {
	case *ast.Ident:
		if lt := pkg.types[t.Name]; lt != nil {
			return fmt.Sprintf("[%s](#%s)", t.Name, Slug(t.Name))
		}
		return basicName(t.Name)
	case *ast.StarExpr:
		return typeText(pkg, t.X, imports)
	case *ast.ArrayType:
		return "list of " + typeText(pkg, t.Elt, imports)
	case *ast.MapType:
		return "map of " + typeText(pkg, t.Key, imports) + " to " + typeText(pkg, t.Value, imports)
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok {
			if s, ok := externalTypes[imports[x.Name]+"."+t.Sel.Name]; ok {
				return s
			}
			return x.Name + "." + t.Sel.Name
		}
	}
	return "?"
}

func basicName(n string) string {
	switch n {
	case "bool":
		return "boolean"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	}
	return n
}

func hasMarker(markers []string, m string) bool {
	for _, x := range markers {
		if x == m {
			return true
		}
	}
	return false
}

func markerValue(markers []string, prefix string) (string, bool) {
	for _, x := range markers {
		if v, ok := strings.CutPrefix(x, prefix); ok {
			return v, true
		}
	}
	return "", false
}

// quotedParam returns the value of key="..." in a marker's parameters.
func quotedParam(s, key string) string {
	i := strings.Index(s, key+`="`)
	if i < 0 {
		return ""
	}
	rest := s[i+len(key)+2:]
	var out strings.Builder
	for j := 0; j < len(rest); j++ {
		switch rest[j] {
		case '\\':
			if j+1 < len(rest) {
				j++
				out.WriteByte(rest[j])
			}
		case '"':
			return out.String()
		default:
			out.WriteByte(rest[j])
		}
	}
	return out.String()
}

// unquotedParam returns the value of key=value (up to the next comma) in a
// marker's parameters, or of key="value".
func unquotedParam(s, key string) string {
	for _, kv := range strings.Split(s, ",") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// renameLead replaces a doc comment's leading Go name by the json name.
func renameLead(doc, goName, json string) string {
	if rest, ok := strings.CutPrefix(doc, goName); ok && (rest == "" || rest[0] == ' ' || rest[0] == ',' || rest[0] == ':') {
		return "`" + json + "`" + rest
	}
	return doc
}

// stripName drops a constant's own name (and a colon after it) from the
// start of its comment.
func stripName(doc, name string) string {
	rest, ok := strings.CutPrefix(doc, name)
	if !ok {
		return doc
	}
	rest = strings.TrimLeft(strings.TrimSpace(rest), ":,")
	return strings.TrimSpace(rest)
}

// firstPhrase is the start of a comment up to its first comma, colon or
// full stop: a heading.
func firstPhrase(doc string) string {
	if i := strings.IndexAny(doc, ",:."); i > 0 {
		return strings.TrimSpace(doc[:i])
	}
	return doc
}

// oneLine joins paragraphs into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// markup escapes the characters of prose that Markdown would read as markup
// ($ opens math on GitHub), leaving code spans as they are.
func markup(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "<", `\<`, "$", `\$`)
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 { // even parts are outside code spans
		parts[i] = r.Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// cell makes s safe inside one Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}
