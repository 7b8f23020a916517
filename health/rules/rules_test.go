package rules_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/health/rules"
)

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

// widget is the rule most tests use: status.phase decides.
var widget = rules.Rule{
	APIVersion: "example.com/v1",
	Kind:       "Widget",
	InProgress: "self.status.phase == 'Rolling'",
	Failed:     "status.phase == 'Broken'",
	Current:    "self.status.phase == 'Ready' || self.status.phase == 'Rolling'",
}

func widgetWith(t *testing.T, status string) *unstructured.Unstructured {
	return parse(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: ns, generation: 2}, status: `+status+`}`)
}

func TestCheck(t *testing.T) {
	set, err := rules.Compile([]rules.Rule{widget})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		status string
		want   health.Status
		msg    string
	}{
		{name: "current", status: `{phase: Ready}`, want: health.Current, msg: "current is true"},
		{name: "failed", status: `{phase: Broken}`, want: health.Failed, msg: "failed is true"},
		{name: "inProgress is evaluated before current", status: `{phase: Rolling}`, want: health.InProgress, msg: "inProgress is true"},
		{name: "none true", status: `{phase: Pending}`, want: health.InProgress, msg: "no expression is true yet"},
		{name: "a field not written yet", status: `{}`, want: health.InProgress, msg: "no such key: phase"},
		{name: "a status for an older generation", status: `{observedGeneration: 1, phase: Ready}`, want: health.InProgress, msg: "observedGeneration 1"},
		{name: "the Ready condition is quoted", status: `{phase: Broken, conditions: [{type: Ready, status: "False", reason: Oops, message: "disk full"}]}`,
			want: health.Failed, msg: "(Ready: Oops disk full)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := set.Check(context.Background(), widgetWith(t, tt.status))
			if err != nil || !ok {
				t.Fatalf("Check: covered %v, error %v", ok, err)
			}
			if got.Status != tt.want || !strings.Contains(got.Message, tt.msg) {
				t.Errorf("Check = %s (%s), want %s with %q", got.Status, got.Message, tt.want, tt.msg)
			}
		})
	}
	t.Run("another kind is not covered", func(t *testing.T) {
		cm := parse(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: n}}`)
		if _, ok, _ := set.Check(context.Background(), cm); ok {
			t.Error("the Widget rule covered a ConfigMap")
		}
	})
	t.Run("every version of the group", func(t *testing.T) {
		w := parse(t, `{apiVersion: example.com/v2, kind: Widget, metadata: {name: w}, status: {phase: Broken}}`)
		if got, ok, _ := set.Check(context.Background(), w); !ok || got.Status != health.Failed {
			t.Errorf("example.com/v2 Widget: covered %v, %s", ok, got.Status)
		}
	})
}

func TestCheckEvaluationErrors(t *testing.T) {
	tests := []struct {
		name, current, status, want string
	}{
		{name: "a type mismatch", current: "self.status.phase > 3", status: `{phase: Ready}`, want: "no such overload"},
		{name: "dyn that is not a bool", current: "self.status.phase", status: `{phase: Ready}`, want: "returned string, want bool"},
		{name: "the cost limit", current: "self.status.items.all(a, self.status.items.all(b, a != b || a == b))",
			status: `{items: [` + strings.Repeat("1,", 1000) + `1]}`, want: "cost limit exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := rules.DefaultLimits()
			lim.EstimatedCost = ^uint64(0) // let the runtime limit do it
			set, err := rules.CompileWithLimits([]rules.Rule{{APIVersion: "example.com/v1", Kind: "Widget", Current: tt.current}}, lim)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := set.Check(context.Background(), widgetWith(t, tt.status))
			var re *health.RuleError
			if !ok || !errors.As(err, &re) {
				t.Fatalf("Check = %s, covered %v, error %v; want a *health.RuleError", got.Status, ok, err)
			}
			if got.Status == health.Current {
				t.Error("a rule that failed to evaluate judged the object Current")
			}
			for _, part := range []string{"example.com/Widget", "current", "Widget.example.com/ns/w", tt.want} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not say %q", err, part)
				}
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		rule rules.Rule
		want string
	}{
		{name: "syntax", rule: rules.Rule{APIVersion: "a.io/v1", Kind: "A", Current: "self.status.("}, want: "health rule a.io/A current: ERROR"},
		{name: "not a bool", rule: rules.Rule{APIVersion: "a.io/v1", Kind: "A", Current: "'yes'"}, want: "returns string, want bool"},
		{name: "undeclared name", rule: rules.Rule{APIVersion: "a.io/v1", Kind: "A", Failed: "object.status == 1", Current: "true"}, want: "a.io/A failed: ERROR"},
		{name: "no current", rule: rules.Rule{APIVersion: "a.io/v1", Kind: "A", Failed: "true"}, want: "current is required"},
		{name: "a loop in a loop", rule: rules.Rule{APIVersion: "a.io/v1", Kind: "A",
			Current: "self.status.conditions.exists(c, self.status.conditions.exists(d, c.type == d.type))"}, want: "estimated cost"},
		{name: "a loop in a loop through optionals", rule: rules.Rule{APIVersion: "a.io/v1", Kind: "A",
			Current: "self.status.?conditions.orValue([]).exists(c, self.status.?conditions.orValue([]).exists(d, c.type == d.type))"}, want: "estimated cost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := rules.Compile([]rules.Rule{tt.rule})
			var re *health.RuleError
			if set != nil || !errors.As(err, &re) {
				t.Fatalf("Compile = %v, %v; want a *health.RuleError", set, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want %q in it", err, tt.want)
			}
		})
	}
	t.Run("the same kind twice", func(t *testing.T) {
		_, err := rules.Compile([]rules.Rule{widget, widget})
		if err == nil || !strings.Contains(err.Error(), "a second rule") {
			t.Errorf("Compile error %v, want a second rule named", err)
		}
		if err := rules.Duplicate([]rules.Rule{widget, widget}); err == nil {
			t.Error("Duplicate found none")
		}
	})
	t.Run("Secrets", func(t *testing.T) {
		// "no such key: " + a value would put the Secret's value in status.
		_, err := rules.Compile([]rules.Rule{{APIVersion: "v1", Kind: "Secret", Current: "self.data[self.data.password] == ''"}})
		if err == nil || !strings.Contains(err.Error(), "Secrets are not judged") {
			t.Errorf("Compile error %v, want Secrets refused", err)
		}
	})
}

func TestMerge(t *testing.T) {
	base := []rules.Rule{
		{APIVersion: "b.io/v1", Kind: "B", Current: "base"},
		{APIVersion: "a.io/v1", Kind: "A", Current: "base"},
	}
	over := []rules.Rule{{APIVersion: "a.io/v2", Kind: "A", Current: "own"}}
	want := []rules.Rule{
		{APIVersion: "a.io/v2", Kind: "A", Current: "own"},
		{APIVersion: "b.io/v1", Kind: "B", Current: "base"},
	}
	if d := cmp.Diff(want, rules.Merge(base, over)); d != "" {
		t.Errorf("Merge (-want +got):\n%s", d)
	}
}

func TestCacheCompilesOncePerRuleSet(t *testing.T) {
	c := rules.NewCache(2)
	first, err := c.Compile([]rules.Rule{widget})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.Compile([]rules.Rule{widget})
	if first != again || c.Len() != 1 {
		t.Errorf("the same rules compiled twice (same set %v, %d cached)", first == again, c.Len())
	}
	bad := []rules.Rule{{APIVersion: "a.io/v1", Kind: "A", Current: "("}}
	_, err1 := c.Compile(bad)
	_, err2 := c.Compile(bad)
	if err1 == nil || err1 != err2 {
		t.Errorf("a broken set: errors %v and %v, want the cached one twice", err1, err2)
	}
	c.Compile([]rules.Rule{{APIVersion: "c.io/v1", Kind: "C", Current: "true"}})
	if c.Len() != 2 {
		t.Errorf("%d sets cached, want at most 2", c.Len())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
