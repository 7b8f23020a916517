package substitute_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/source/substitute"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func vars(kv ...string) substitute.Variables {
	var v substitute.Variables
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1], false)
	}
	return v
}

func TestObjects(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		vars   substitute.Variables
		strict bool
		want   string
	}{
		{
			name: "plain and default",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '${ENV}', b: 'x-${MISSING:=dflt}-y', c: '${EMPTY:=}'}",
			vars: vars("ENV", "prod"), strict: true,
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: prod, b: x-dflt-y, c: ''}",
		},
		{
			name: "a defined variable wins over the default",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '${ENV:=dev}'}",
			vars: vars("ENV", "prod"), strict: true,
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: prod}",
		},
		{
			name: "escape, shell forms and bare dollars are left alone",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '$${ENV}', b: 'echo ${1} ${#a[@]} ${a.b} $ENV', c: 'open ${ENV'}",
			vars: vars("ENV", "prod"), strict: true,
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '${ENV}', b: 'echo ${1} ${#a[@]} ${a.b} $ENV', c: 'open ${ENV'}",
		},
		{
			name: "a value is inserted once, never expanded again",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '${A}'}",
			vars: vars("A", "${B}", "B", "leak"), strict: true,
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '${B}'}",
		},
		{
			name: "keys, apiVersion, kind and sops metadata are not substituted; lists and labels are",
			in: "apiVersion: '${V}'\nkind: '${V}'\nmetadata: {name: c, labels: {'${V}': '${V}'}}\nsops: {mac: '${V}'}\n" +
				"spec: {args: ['${V}', 1, true]}",
			vars: vars("V", "x"), strict: true,
			want: "apiVersion: '${V}'\nkind: '${V}'\nmetadata: {name: c, labels: {'${V}': x}}\nsops: {mac: '${V}'}\nspec: {args: [x, 1, true]}",
		},
		{
			name:   "opt-out annotation",
			in:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {gitsync.dev/substitute: disabled}}\ndata: {a: '${UNDEFINED}'}",
			strict: true,
			want:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {gitsync.dev/substitute: disabled}}\ndata: {a: '${UNDEFINED}'}",
		},
		{
			name: "non-strict: undefined becomes empty",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 'a${UNDEFINED}b'}",
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: ab}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := obj(t, tt.in)
			orig := in.DeepCopy()
			res, err := substitute.Objects([]*unstructured.Unstructured{in}, tt.vars, substitute.Options{Strict: tt.strict})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(obj(t, tt.want).Object, res.Objects[0].Object); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(orig.Object, in.Object); diff != "" {
				t.Errorf("input modified (-before +after)\n%s", diff)
			}
		})
	}
}

// A tenant-controlled value holding YAML structure (a newline, ": ", a
// document separator) must stay one string: no field, no object is added.
func TestValueCannotInjectStructure(t *testing.T) {
	in := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: app}\ndata: {a: '${EVIL}'}")
	evil := "x\n  b: injected\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\nrules: [{verbs: ['*']}]"
	res, err := substitute.Objects([]*unstructured.Unstructured{in}, vars("EVIL", evil), substitute.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 1 {
		t.Fatalf("%d objects, want 1", len(res.Objects))
	}
	want := map[string]any{"a": evil}
	if diff := cmp.Diff(want, res.Objects[0].Object["data"]); diff != "" {
		t.Errorf("data (-want +got)\n%s", diff)
	}
}

func TestStrictErrorNamesVariableAndObjectNotValues(t *testing.T) {
	in := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: app}\n"+
		"spec: {template: {spec: {containers: [{name: c, env: [{name: A, value: 'secret-${KNOWN}-${NOPE}'}]}]}}}")
	var v substitute.Variables
	v.Set("KNOWN", "hunter2", true)
	_, err := substitute.Objects([]*unstructured.Unstructured{in}, v, substitute.DefaultOptions())
	var ue *substitute.UndefinedError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want *UndefinedError", err)
	}
	want := `Deployment/app/web: variable "NOPE" at spec.template.spec.containers[0].env[0].value is not defined and has no default`
	if err.Error() != want {
		t.Errorf("err = %q\nwant  %q", err, want)
	}
}

func TestSensitivePaths(t *testing.T) {
	in := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: app}\ndata: {pw: 'p=${PW}', host: '${HOST}', plain: x}")
	var v substitute.Variables
	v.Set("PW", "hunter2", true)
	v.Set("HOST", "db", false)
	res, err := substitute.Objects([]*unstructured.Unstructured{in}, v, substitute.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	id := object.ID{Kind: "ConfigMap", Namespace: "app", Name: "c"}
	if diff := cmp.Diff(map[object.ID][]string{id: {"data.pw"}}, res.Sensitive); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hunter2"}, v.SensitiveValues()); diff != "" {
		t.Errorf("SensitiveValues (-want +got)\n%s", diff)
	}
}

func TestUnchangedObjectsAreNotCopied(t *testing.T) {
	in := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}")
	res, err := substitute.Objects([]*unstructured.Unstructured{in}, vars("A", "x"), substitute.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects[0] != in {
		t.Error("an object without references was copied")
	}
}

func TestDuplicateAfterSubstitution(t *testing.T) {
	a := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '${N}'}")
	b := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}")
	_, err := substitute.Objects([]*unstructured.Unstructured{a, b}, vars("N", "x"), substitute.DefaultOptions())
	var de *substitute.DuplicateError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want *DuplicateError", err)
	}
}
