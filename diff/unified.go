package diff

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Unified returns a unified diff of the YAML of before and after, headed by
// subject (e.g. "Deployment/prod/web"), with Secret values masked (changed
// keys shown as MaskBefore/MaskAfter, never their values). Bookkeeping the
// server rewrites on every write — managedFields, resourceVersion,
// generation — is left out. A nil object diffs as empty; equal objects yield
// "".
func Unified(subject string, before, after *unstructured.Unstructured) string {
	before, after = maskPair(before, after)
	a, b := yamlOf(before), yamlOf(after)
	if a == b {
		return ""
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        lines(a),
		B:        lines(b),
		FromFile: subject + " (live)",
		ToFile:   subject + " (desired)",
		Context:  3,
	})
	if err != nil {
		return "# " + subject + ": diff failed: " + err.Error() + "\n"
	}
	return text
}

// lines splits text into lines that keep their "\n"; "" has none, so a
// missing object diffs as an empty file.
func lines(text string) []string {
	out := strings.SplitAfter(text, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// yamlOf renders obj without server bookkeeping; nil renders as "".
func yamlOf(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	view := comparable(obj, true, true)
	if meta, ok := view["metadata"].(map[string]any); ok && len(meta) == 0 {
		delete(view, "metadata")
	}
	b, err := yaml.Marshal(view)
	if err != nil {
		return "# unrenderable: " + err.Error() + "\n"
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}
