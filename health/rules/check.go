package rules

import (
	"context"
	"fmt"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/object"
)

var _ health.Rules = (*Set)(nil)

// Check judges obj by the rule for its group and kind; false when no rule
// covers it (kstatus judges it then). An object being deleted is
// Terminating, and one whose status.observedGeneration differs from
// metadata.generation is InProgress, before any expression runs. Then
// inProgress, failed and current are evaluated in that order; the first
// that is true decides, none true means InProgress. An expression that
// reads a field the object does not have (no such key: its operator has
// not written it yet) means InProgress too, with the error as message, so
// spec.timeout reports it. Any other evaluation error (a type mismatch,
// the cost limit) is a *health.RuleError.
func (s *Set) Check(ctx context.Context, obj *unstructured.Unstructured) (health.Result, bool, error) {
	if s == nil {
		return health.Result{}, false, nil
	}
	c, ok := s.byKind[obj.GroupVersionKind().GroupKind()]
	if !ok {
		return health.Result{}, false, nil
	}
	id := object.IDOf(obj)
	if obj.GetDeletionTimestamp() != nil {
		return health.Result{ID: id, Status: health.Terminating, Message: "being deleted"}, true, nil
	}
	if observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); found && observed != obj.GetGeneration() {
		msg := fmt.Sprintf("status.observedGeneration %d is not metadata.generation %d yet", observed, obj.GetGeneration())
		return health.Result{ID: id, Status: health.InProgress, Message: msg}, true, nil
	}
	vars := variables(obj)
	for _, p := range c.exprs {
		out, _, err := p.prg.ContextEval(ctx, vars)
		if err != nil {
			if noSuchKey(err) {
				msg := fmt.Sprintf("health rule %s: %s: %v (not set yet?)", c.name, p.field, err)
				return health.Result{ID: id, Status: health.InProgress, Message: msg}, true, nil
			}
			return health.Result{ID: id, Status: health.Unknown}, true, &health.RuleError{Rule: c.name, Field: p.field, Object: id.String(), Err: err}
		}
		matched, err := asBool(out)
		if err != nil {
			return health.Result{ID: id, Status: health.Unknown}, true, &health.RuleError{Rule: c.name, Field: p.field, Object: id.String(), Err: err}
		}
		if matched {
			return health.Result{ID: id, Status: p.status, Message: message(c.name, p.field, obj)}, true, nil
		}
	}
	return health.Result{ID: id, Status: health.InProgress, Message: fmt.Sprintf("health rule %s: no expression is true yet", c.name)}, true, nil
}

// variables are what an expression sees: the object as self, and its
// top-level fields by name (null when absent, so `status == null` reads).
func variables(obj *unstructured.Unstructured) map[string]any {
	vars := map[string]any{"self": obj.Object}
	for _, f := range topLevel {
		vars[f] = obj.Object[f]
	}
	return vars
}

// noSuchKey reports whether err is CEL's error for a missing map key.
// cel-go has no error type for it; its message is stable ("no such key: x").
func noSuchKey(err error) bool {
	return strings.HasPrefix(err.Error(), "no such key")
}

// asBool is the result of an expression typed dyn at compile time, which
// must be a bool at run time too.
func asBool(v ref.Val) (bool, error) {
	b, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("returned %s, want bool", v.Type().TypeName())
	}
	return bool(b), nil
}

// message says which expression decided, and quotes the object's Ready
// condition (its reason and message) when it has one: what the operator
// says is usually what a person needs next.
func message(rule, field string, obj *unstructured.Unstructured) string {
	msg := fmt.Sprintf("health rule %s: %s is true", rule, field)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		reason, _ := m["reason"].(string)
		text, _ := m["message"].(string)
		if said := strings.TrimSpace(reason + " " + shorten(text, 200)); said != "" {
			msg += " (Ready: " + said + ")"
		}
	}
	return msg
}

func shorten(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
