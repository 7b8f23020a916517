package docgen

import (
	"strings"
	"testing"
)

// TestAPIReferenceFixture: each fact a field's source carries reaches its row.
func TestAPIReferenceFixture(t *testing.T) {
	out, err := APIReference("testdata/api/v9", "testdata/api/v9")
	if err != nil {
		t.Fatal(err)
	}
	page := string(out)
	for _, tc := range []struct{ name, want string }{
		{"title from the root type", "# Widget API reference\n"},
		{"generated-from note", "<!-- Generated from testdata/api/v9 by `make docs`; do not edit. -->"},
		{"group from +groupName, version from the directory", "API group `example.dev`, version `v9`. `testdata/api/v9` is a fixture for the API reference generator."},
		{"resource markers", "Resource: short name `wd`."},
		{"apiVersion from the group", "| `apiVersion` | string | `example.dev/v9` |"},
		{"kind from the type", "| `kind` | string | `Widget` |"},
		{"required without +optional or omitempty", "| `size` | integer | *Required.* `size` of the widget. |"},
		{"default and an XValidation message", "| `every` | duration (`30s`, `5m`, `1h30m`) | `every` says how often. Default: `5m`. Validation: every must be at least 1s. |"},
		{"local named type links, enum, pipe escaped", "| `colour` | [Colour](#colour) | `colour` is one of a few \\| piped. Validation: one of `red`, `blue`. |"},
		{"omitempty is optional; $ escaped; MaxItems", "| `parts` | list of [Part](#part) | `parts` lists the parts; \\${NAME} stays literal. Validation: at most 3 items. |"},
		{"length range", "| `name` | string | *Required.* `name` of the part. Validation: 1 to 10 characters. |"},
		{"typed constants under their type", "| `red` | is red. |"},
		{"trailing comment, name stripped", "| `blue` | blue. |"},
		{"untyped constants in their block", "| `example.dev/owner` | `LabelOwner` | who owns a widget. |"},
		{"a single constant keeps its own comment", "### Other constants\n\n| Value | Go name | Meaning |\n|---|---|---|\n| `example.dev` | `Domain` | is the fixture's domain, alone. |"},
	} {
		if !strings.Contains(page, tc.want) {
			t.Errorf("%s: page lacks %q:\n%s", tc.name, tc.want, page)
		}
	}
	for _, absent := range []string{"## WidgetList", "## Unused", "internal", "Ignored", "notExported"} {
		if strings.Contains(page, absent) {
			t.Errorf("page contains %q, which is not part of the API:\n%s", absent, page)
		}
	}
	if i, j := strings.Index(page, "## WidgetSpec"), strings.Index(page, "## Part"); i < 0 || j < i {
		t.Errorf("types not in reach order (WidgetSpec before Part):\n%s", page)
	}
}

func TestAPIReferenceNeedsAGroup(t *testing.T) {
	if _, err := APIReference("testdata/links", "x"); err == nil {
		t.Error("a directory without an API package rendered without error")
	}
}
