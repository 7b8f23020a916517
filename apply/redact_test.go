package apply_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
)

// TestSecretErrorsWithholdValues applies Secrets the apiserver rejects, each
// holding a distinctive value, for real and as a dry run, and checks that
// the failed entry's error never holds the value (plain or base64) while it
// still names the object and the field and keeps its class, so the agent
// still tells a permanent failure from a transient one.
//
// Checked by hand that the cases marked "leaks" fail without the guard: with
// the two secretSafe calls in object.go removed, their errors quote the
// value (server-side apply's typed patch error, the apiserver's "Invalid
// value" echo of a key); the others check that the message stays useful and
// the class intact (the apiserver itself says no more than "illegal base64
// data at input byte 6" and "<secret contents redacted>" for them).
func TestSecretErrorsWithholdValues(t *testing.T) {
	ns := env.Namespace(t)
	const head = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: NAME\n  namespace: NS\n"
	tests := []struct {
		name     string
		manifest string
		// setup prepares the live Secret (name, namespace ns) before the apply.
		setup func(t *testing.T, name string)
		value string
		want  []string
		class func(error) bool
	}{
		{
			name:     "stringData value that is a map",
			manifest: head + "stringData:\n  password:\n    nested: s3cr3t-nested-VALUE\n",
			value:    "s3cr3t-nested-VALUE", // leaks: server-side apply quotes the map
			want:     []string{"stringData[password]: not a string", "request failed (500)"},
			class:    statusCode(500),
		},
		{
			name:     "data key that is no Secret key",
			manifest: head + "data:\n  'PASSWORD: s3cr3t-key-VALUE': eA==\n",
			value:    "s3cr3t-key-VALUE", // leaks: the apiserver quotes the key
			want:     []string{"data[(key withheld)]: Invalid value: (value withheld)"},
			class:    apierrors.IsInvalid,
		},
		{
			name:     "data value that is not base64",
			manifest: head + "data:\n  password: s3cr3t-b64-VALUE\n",
			value:    "s3cr3t-b64-VALUE",
			want:     []string{"data[password]: not valid base64"},
			class:    statusCode(500),
		},
		{
			name: "dockerconfigjson that is not JSON",
			manifest: head + "type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " +
				base64.StdEncoding.EncodeToString([]byte(`{"auths": s3cr3t-docker-VALUE}`)) + "\n",
			value: "s3cr3t-docker-VALUE",
			want:  []string{"data[.dockerconfigjson]: Invalid value: (value withheld)"},
			class: apierrors.IsInvalid,
		},
		{
			name:     "immutable Secret changed",
			manifest: head + "immutable: true\nstringData:\n  password: s3cr3t-immutable-VALUE\n",
			setup: func(t *testing.T, name string) {
				create(t, ns, head+"immutable: true\nstringData:\n  password: old\n", name, "kubectl")
			},
			value: "s3cr3t-immutable-VALUE",
			want:  []string{"immutable field data"},
			class: func(err error) bool {
				var ie *apply.ImmutableError
				return errors.As(err, &ie) && apierrors.IsInvalid(err)
			},
		},
		{
			name:     "field another manager owns",
			manifest: head + "stringData:\n  password: s3cr3t-conflict-VALUE\n",
			setup: func(t *testing.T, name string) {
				create(t, ns, head+"stringData:\n  password: theirs\n", name, "other-operator")
			},
			value: "s3cr3t-conflict-VALUE",
			want:  []string{`"other-operator" owns .stringData.password`},
			class: func(err error) bool {
				var ce *apply.ConflictError
				return errors.As(err, &ce) && apierrors.IsConflict(err)
			},
		},
	}
	for i, tt := range tests {
		for _, dryRun := range []bool{false, true} {
			mode := map[bool]string{false: "apply", true: "dry-run"}[dryRun]
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				name := strings.ReplaceAll(strings.ToLower(mode), "-", "") + "-" + string(rune('a'+i))
				if tt.setup != nil {
					tt.setup(t, name)
				}
				opts := apply.DefaultOptions()
				opts.DryRun = dryRun
				f := newFixture(t, opts)
				cs := f.apply(t, obj(t, ns, strings.ReplaceAll(tt.manifest, "NAME", name)))
				subject := "Secret/" + ns + "/" + name
				e := entry(t, cs, subject)
				if e.Action != apply.Failed || e.Err == nil {
					t.Fatalf("entry %s %s, want failed", e.Action, e.Err)
				}
				for _, msg := range []string{e.Err.Error(), cs.Err().Error()} {
					for _, form := range []string{tt.value, base64.StdEncoding.EncodeToString([]byte(tt.value))} {
						if strings.Contains(msg, form) {
							t.Errorf("error quotes the Secret value:\n%s", msg)
						}
					}
				}
				for _, w := range append([]string{subject}, tt.want...) {
					if !strings.Contains(e.Err.Error(), w) {
						t.Errorf("error %q does not say %q", e.Err, w)
					}
				}
				if !tt.class(e.Err) {
					t.Errorf("error lost its class: %#v", e.Err)
				}
			})
		}
	}
}

// statusCode says whether err carries an apiserver status with code.
func statusCode(code int32) func(error) bool {
	return func(err error) bool {
		var s apierrors.APIStatus
		return errors.As(err, &s) && s.Status().Code == code
	}
}

// create server-side applies manifest (NAME replaced by name) as manager.
func create(t *testing.T, ns, manifest, name, manager string) {
	t.Helper()
	u := obj(t, ns, strings.ReplaceAll(manifest, "NAME", name))
	if err := env.Client.Patch(context.Background(), u, client.Apply, client.FieldOwner(manager)); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}
