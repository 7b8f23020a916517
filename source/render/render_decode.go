package render

import (
	"bytes"
	"path"
	"regexp"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/budget"
)

// decodedObject is one object read from a document, before validation.
type decodedObject struct {
	// Loc says where the document starts.
	Loc docLocation
	// Item is the 1-based index inside a List document, 0 for a plain object.
	Item int
	// Object is the JSON-compatible content (maps, slices, strings, int64,
	// float64, bool, nil), as unstructured.Unstructured requires.
	Object any
}

// decodeManifest decodes every document in data, read from file (a
// slash-separated path relative to the repository root). Empty documents are
// skipped; List documents are expanded into their items.
func decodeManifest(file string, data []byte, opts Options) ([]decodedObject, error) {
	if strings.EqualFold(path.Ext(file), ".json") {
		loc := docLocation{Path: file, Document: 1, Line: 1}
		var v any
		if err := utiljson.Unmarshal(data, &v); err != nil {
			return nil, &Error{Class: errInvalidYAML, Path: file, Detail: "invalid JSON", Err: withheldJSON(data, err)}
		}
		if err := opts.Budget.Charge(budget.StagePlain, int64(len(data))); err != nil {
			return nil, overBudget(loc, err)
		}
		objs, err := expandList(loc, v)
		if err == nil {
			err = opts.countObjects(loc, len(objs)) // render_limit.go
		}
		return objs, err
	}
	var out []decodedObject
	for _, doc := range splitYAMLDocuments(data) {
		loc := docLocation{Path: file, Document: doc.Index, Line: doc.Line}
		v, err := decodeYAMLDocument(loc, doc, opts)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		objs, err := expandList(loc, v)
		if err != nil {
			return nil, err
		}
		if err := opts.countObjects(loc, len(objs)); err != nil { // render_limit.go
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeYAMLDocument converts one document to JSON-compatible values with the
// same YAML rules kubectl uses (sigs.k8s.io/yaml), after bounding its alias
// expansion. A document holding only comments decodes to nil.
func decodeYAMLDocument(loc docLocation, doc yamlDocument, opts Options) (any, error) {
	if err := checkAliasExpansion(doc.Data, opts.MaxYAMLNodes); err != nil {
		return nil, &Error{Class: ErrTooLarge, Path: loc.Path, Line: loc.Line, Document: loc.Document,
			Detail: "YAML alias expansion too large", Err: err}
	}
	j, err := yaml.YAMLToJSON(doc.Data)
	if err != nil {
		return nil, yamlError(loc, doc, err)
	}
	if err := opts.Budget.Charge(budget.StagePlain, int64(len(j))); err != nil {
		return nil, overBudget(loc, err)
	}
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, &Error{Class: errInvalidYAML, Path: loc.Path, Line: loc.Line, Document: loc.Document,
			Detail: "invalid YAML", Err: withheldJSON(doc.Data, err)}
	}
	return v, nil
}

// yamlError reports a YAML parser error at the line of the file the parser
// pointed at (the document's first line when it named none), with the
// parser's own words after it and its "yaml: line N:" prefix dropped: one
// position, the one to fix.
func yamlError(loc docLocation, doc yamlDocument, err error) *Error {
	e := &Error{Class: errInvalidYAML, Path: loc.Path, Line: loc.Line, Document: loc.Document,
		Detail: "invalid YAML", Err: withheldYAML(doc, err)}
	m := parserLine.FindStringSubmatch(err.Error())
	if m == nil {
		return e
	}
	n, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return e
	}
	e.Line = n + doc.Offset
	switch cause := e.Err.(type) {
	case *withheldError:
		cause.Line = 0 // said once, in front
	case yamlLineError:
		e.Err = yamlProblem{err: err, text: strings.TrimSpace(strings.TrimPrefix(err.Error(), m[0]))}
	}
	return e
}

// yamlProblem is a YAML parser error without its position, which the
// Error around it gives as a line of the file.
type yamlProblem struct {
	err  error
	text string
}

func (e yamlProblem) Error() string { return e.text }

func (e yamlProblem) Unwrap() error { return e.err }

// expandList returns the items of a List document (kind "List" or any
// "<Kind>List" with an items array), or the document itself.
func expandList(loc docLocation, v any) ([]decodedObject, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, nil
		}
		return nil, docErr(errInvalidObject, loc, "not an object")
	}
	kind, _ := m["kind"].(string)
	items, isList := m["items"].([]any)
	if !isList || !strings.HasSuffix(kind, "List") {
		return []decodedObject{{Loc: loc, Object: m}}, nil
	}
	out := make([]decodedObject, 0, len(items))
	for i, item := range items {
		out = append(out, decodedObject{Loc: loc, Item: i + 1, Object: item})
	}
	return out, nil
}

// yamlDocument is one "---"-separated chunk of a YAML stream.
type yamlDocument struct {
	// Index counts non-empty documents from 1, as a reader would.
	Index int
	// Line is the 1-based line of the document's first content.
	Line int
	// Offset is the number of lines before the chunk, to turn the YAML
	// parser's chunk-relative line numbers into file line numbers.
	Offset int
	Data   []byte
}

// splitYAMLDocuments splits a stream on "---" lines the way kubectl does (a
// separator may carry a trailing comment) and drops chunks with no content
// other than comments and blank lines.
func splitYAMLDocuments(data []byte) []yamlDocument {
	var docs []yamlDocument
	start, startLine, line := 0, 1, 1
	flush := func(end int) {
		if first := firstContentLine(data[start:end]); first > 0 {
			docs = append(docs, yamlDocument{Index: len(docs) + 1, Line: startLine + first - 1,
				Offset: startLine - 1, Data: data[start:end]})
		}
	}
	for off := 0; off < len(data); line++ {
		next := len(data)
		lineEnd := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			lineEnd, next = off+i, off+i+1
		}
		if isDocumentSeparator(data[off:lineEnd]) {
			flush(off)
			start, startLine = next, line+1
		}
		off = next
	}
	flush(len(data))
	return docs
}

// isDocumentSeparator matches "---" alone or followed by whitespace and a comment.
func isDocumentSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(line[3:])
	return len(rest) == 0 || rest[0] == '#'
}

// firstContentLine returns the 1-based line of the first line that is not
// blank or a comment, 0 if there is none.
func firstContentLine(chunk []byte) int {
	n := 1
	for len(chunk) > 0 {
		l := chunk
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			l, chunk = chunk[:i], chunk[i+1:]
		} else {
			chunk = nil
		}
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' {
			return n
		}
		n++
	}
	return 0
}

// yamlLineError rewrites the "line N" of a YAML parser error, which counts
// from the start of the document, into a line of the file.
type yamlLineError struct {
	err    error
	offset int
}

var yamlLinePattern = regexp.MustCompile(`line (\d+)`)

func (e yamlLineError) Error() string {
	return yamlLinePattern.ReplaceAllStringFunc(e.err.Error(), func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+e.offset)
	})
}

func (e yamlLineError) Unwrap() error { return e.err }
