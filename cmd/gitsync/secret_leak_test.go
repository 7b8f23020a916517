package main

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestSecretErrorsLeakNoValue runs `gitsync diff`, `gitsync apply --dry-run`
// and `gitsync apply` on directories that build a Secret the pipeline
// rejects, each holding a distinctive value, and checks that the value
// (plain or base64) appears nowhere in stdout or stderr, while the output
// still names the file or object and the field.
//
// Checked by hand that it fails without the guards: with the secretSafe calls
// in apply/object.go removed the apply cases print their values; with
// mayHoldSecret returning false and the env checks off
// (source/render_secret.go) the render cases do.
func TestSecretErrorsLeakNoValue(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n"
	const generator = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"secretGenerator:\n- name: db\n  envs: [db.env]\n"
	tests := []struct {
		name  string
		files map[string]string
		value string
		want  []string
	}{
		{
			name:  "YAML tag in a Secret",
			files: map[string]string{"secret.yaml": secret + "stringData:\n  password: !!int s3cr3t-yamltag-VALUE\n"},
			value: "s3cr3t-yamltag-VALUE",
			want:  []string{"secret.yaml:1: document 1: invalid YAML"},
		},
		{
			name:  "env line without =",
			files: map[string]string{"kustomization.yaml": generator, "db.env": "USER=app\ns3cr3t-envnoeq-VALUE\n"},
			value: "s3cr3t-envnoeq-VALUE",
			want:  []string{"db.env:2:", `secretGenerator "db"`},
		},
		{
			name:  "env line with invalid UTF-8",
			files: map[string]string{"kustomization.yaml": generator, "db.env": "PASSWORD=s3cr3t-envutf8-VALUE\xff\n"},
			value: "s3cr3t-envutf8-VALUE",
			want:  []string{"db.env:1:", "UTF-8"},
		},
		{
			name: "replacement into a Secret",
			files: map[string]string{
				"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
					"resources: [secret.yaml, cm.yaml]\nreplacements:\n" +
					"- source: {kind: ConfigMap, name: cm, fieldPath: data.x}\n  targets:\n" +
					"  - select: {kind: Secret}\n    fieldPaths: [stringData.password.nested]\n",
				"secret.yaml": secret + "stringData:\n  password: s3cr3t-replacement-VALUE\n",
				"cm.yaml":     configMap("cm", "x", "hello"),
			},
			value: "s3cr3t-replacement-VALUE",
			want:  []string{"kustomize build failed", "secret.yaml"},
		},
		{
			name:  "stringData value that is a map",
			files: map[string]string{"secret.yaml": secret + "stringData:\n  password:\n    nested: s3cr3t-nested-VALUE\n"},
			value: "s3cr3t-nested-VALUE",
			want:  []string{"Secret/" + ns + "/db", "password"},
		},
		{
			name:  "data key that is no Secret key",
			files: map[string]string{"secret.yaml": secret + "data:\n  'PASSWORD: s3cr3t-badkey-VALUE': eA==\n"},
			value: "s3cr3t-badkey-VALUE",
			want:  []string{"Secret/" + ns + "/db", "data[(key withheld)]"},
		},
		{
			name:  "data value that is not base64",
			files: map[string]string{"secret.yaml": secret + "data:\n  password: s3cr3t-base64-VALUE\n"},
			value: "s3cr3t-base64-VALUE",
			want:  []string{"Secret/" + ns + "/db", "data[password]: not valid base64"},
		},
		{
			name: "dockerconfigjson that is not JSON",
			files: map[string]string{"secret.yaml": secret + "type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " +
				base64.StdEncoding.EncodeToString([]byte(`{"auths": s3cr3t-docker-VALUE}`)) + "\n"},
			value: "s3cr3t-docker-VALUE",
			want:  []string{"Secret/" + ns + "/db", "data[.dockerconfigjson]"},
		},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		writeFiles(t, dir, tt.files)
		for _, args := range [][]string{{"diff", dir}, {"apply", dir, "--dry-run"}, {"apply", dir}} {
			t.Run(tt.name+"/"+strings.Join(args[:1], " ")+strings.Join(args[2:], " "), func(t *testing.T) {
				r := gitsyncIn(t, ns, args...)
				if r.code == 0 {
					t.Fatalf("want a failure:\n%s", r)
				}
				out := r.stdout + r.stderr
				for _, form := range []string{tt.value, base64.StdEncoding.EncodeToString([]byte(tt.value))} {
					if strings.Contains(out, form) {
						t.Errorf("output quotes the Secret value %q:\n%s", form, r)
					}
				}
				for _, w := range tt.want {
					if !strings.Contains(out, w) {
						t.Errorf("output does not say %q:\n%s", w, r)
					}
				}
			})
		}
	}
}
