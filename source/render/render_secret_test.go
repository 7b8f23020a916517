package render

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// secretDoc is the head of a Secret manifest; cases append its data.
const secretDoc = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: shop\n"

// secretGen is a kustomization with one secretGenerator reading db.env.
const secretGen = kustomizeHeader + "namespace: shop\nsecretGenerator:\n- name: db\n  envs: [db.env]\n"

// TestRenderErrorsWithholdSecretValues renders inputs that build a Secret
// and fail, each holding a distinctive value, and checks that the error
// never quotes it while still naming the file and what to fix.
//
// Checked by hand that every case fails without the guard: with
// mayHoldSecret returning false and checkSecretEnv and checkSecretLiteral
// returning no problem (render_secret.go), the YAML parser's and kustomize's
// messages come back and quote the value, and the env cases without "="
// render without error (a key named after the value).
func TestRenderErrorsWithholdSecretValues(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		value string
		class error
		// want are substrings the message must hold so it stays useful.
		want []string
	}{
		{
			name:  "plain Secret with a YAML tag the value cannot take",
			files: map[string]string{"secret.yaml": secretDoc + "stringData:\n  password: !!int s3cr3t-tag-VALUE\n"},
			value: "s3cr3t-tag-VALUE", class: errInvalidYAML,
			want: []string{"secret.yaml:1: document 1: invalid YAML", "message is withheld"},
		},
		{
			name:  "plain Secret with a value as map key",
			files: map[string]string{"secret.yaml": secretDoc + "stringData:\n  ? [s3cr3t-mapkey-VALUE]\n  : x\n"},
			value: "s3cr3t-mapkey-VALUE", class: errInvalidYAML,
			want: []string{"secret.yaml:1: document 1: invalid YAML"},
		},
		{
			name:  "plain Secret with an unknown anchor",
			files: map[string]string{"secret.yaml": secretDoc + "stringData:\n  a: *s3cr3t-anchor-VALUE\n"},
			value: "s3cr3t-anchor-VALUE", class: errInvalidYAML,
			want: []string{"secret.yaml:1: document 1: invalid YAML"},
		},
		{
			name:  "second document of a file is a bad Secret",
			files: map[string]string{"all.yaml": configMap("cm") + "---\n" + secretDoc + "data:\n  password: !!int s3cr3t-second-VALUE\n"},
			value: "s3cr3t-second-VALUE", class: errInvalidYAML,
			want: []string{"all.yaml:7: document 2: invalid YAML"},
		},
		{
			name:  "env line without =",
			files: map[string]string{"kustomization.yaml": secretGen, "db.env": "USER=app\ns3cr3t-envnoeq-VALUE\n"},
			value: "s3cr3t-envnoeq-VALUE", class: errKustomize,
			want: []string{"db.env:2:", `secretGenerator "db" in kustomization.yaml`, `no "="`},
		},
		{
			name:  "env line PASSWORD: value",
			files: map[string]string{"kustomization.yaml": secretGen, "db.env": "PASSWORD: s3cr3t-envcolon-VALUE\n"},
			value: "s3cr3t-envcolon-VALUE", class: errKustomize,
			want: []string{"db.env:1:", `no "="`},
		},
		{
			name:  "env value with invalid UTF-8",
			files: map[string]string{"kustomization.yaml": secretGen, "db.env": "# creds\nPASSWORD=s3cr3t-utf8-VALUE\xff\xfe\n"},
			value: "s3cr3t-utf8-VALUE", class: errKustomize,
			want: []string{"db.env:2:", "not valid UTF-8"},
		},
		{
			name:  "env key that is no Secret key",
			files: map[string]string{"kustomization.yaml": secretGen, "db.env": "s3cr3t-envkey-VALUE and more=x\n"},
			value: "s3cr3t-envkey-VALUE", class: errKustomize,
			want: []string{"db.env:1:", "not a valid Secret key"},
		},
		{
			name: "literal without =",
			files: map[string]string{"kustomization.yaml": kustomizeHeader +
				"secretGenerator:\n- name: db\n  literals: [USER=app, s3cr3t-literal-VALUE]\n"},
			value: "s3cr3t-literal-VALUE", class: errKustomize,
			want: []string{"kustomization.yaml", `secretGenerator "db" literals[1]`},
		},
		{
			name: "kustomization with a literal of the wrong YAML type",
			files: map[string]string{"kustomization.yaml": kustomizeHeader +
				"secretGenerator:\n- name: db\n  literals: [!!int s3cr3t-klit-VALUE]\n"},
			value: "s3cr3t-klit-VALUE", class: errKustomize,
			want: []string{"kustomization.yaml: invalid kustomization"},
		},
		{
			name: "replacement targeting a Secret field",
			files: map[string]string{
				"kustomization.yaml": kustomizeHeader + "resources: [secret.yaml, cm.yaml]\nreplacements:\n" +
					"- source: {kind: ConfigMap, name: cm, fieldPath: data.x}\n  targets:\n" +
					"  - select: {kind: Secret}\n    fieldPaths: [stringData.password.nested]\n",
				"secret.yaml": secretDoc + "stringData:\n  password: s3cr3t-repltarget-VALUE\n",
				"cm.yaml":     configMap("cm") + "data:\n  x: hello\n",
			},
			value: "s3cr3t-repltarget-VALUE", class: errKustomize,
			want: []string{"kustomize build failed", "kustomization.yaml", "secret.yaml"},
		},
		{
			name: "replacement reading a Secret field",
			files: map[string]string{
				"kustomization.yaml": kustomizeHeader + "resources: [secret.yaml, cm.yaml]\nreplacements:\n" +
					"- source: {kind: Secret, name: db, fieldPath: stringData.password.nested}\n  targets:\n" +
					"  - select: {kind: ConfigMap}\n    fieldPaths: [data.x]\n",
				"secret.yaml": secretDoc + "stringData:\n  password: s3cr3t-replsource-VALUE\n",
				"cm.yaml":     configMap("cm") + "data:\n  x: hello\n",
			},
			value: "s3cr3t-replsource-VALUE", class: errKustomize,
			want: []string{"kustomize build failed", "secret.yaml"},
		},
		{
			name: "Secret resource of a kustomization with a bad YAML tag",
			files: map[string]string{
				"kustomization.yaml": kustomizeHeader + "resources: [secret.yaml]\n",
				"secret.yaml":        secretDoc + "stringData:\n  password: !!int s3cr3t-kres-VALUE\n",
			},
			value: "s3cr3t-kres-VALUE", class: errKustomize,
			want: []string{"kustomize build failed", "secret.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			_, err := Render(context.Background(), dir, ".", Options{})
			if err == nil {
				t.Fatal("Render succeeded, want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, tt.value) || strings.Contains(msg, strings.ToLower(tt.value)) {
				t.Errorf("error quotes the Secret value:\n%s", msg)
			}
			if !errors.Is(err, tt.class) {
				t.Errorf("error %q is not %v", msg, tt.class)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestRenderErrorsKeepMessagesWithoutSecrets checks that input which cannot
// hold a Secret keeps the tool's own message, the most useful one.
func TestRenderErrorsKeepMessagesWithoutSecrets(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name:  "ConfigMap with a bad YAML tag",
			files: map[string]string{"cm.yaml": configMap("cm") + "data:\n  x: !!int hello-value\n"},
			want:  "cannot decode !!str `hello-value` as a !!int",
		},
		{
			name: "replacement between ConfigMaps",
			files: map[string]string{
				"kustomization.yaml": kustomizeHeader + "resources: [cm.yaml]\nreplacements:\n" +
					"- source: {kind: ConfigMap, name: cm, fieldPath: data.x}\n  targets:\n" +
					"  - select: {kind: ConfigMap}\n    fieldPaths: [data.x.y]\n",
				"cm.yaml": configMap("cm") + "data:\n  x: hello\n",
			},
			want: `unable to find field "data.x.y" in replacement target`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			_, err := Render(context.Background(), dir, ".", Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// TestSecretGeneratorAcceptsWellFormedEnv checks that the env file checks
// refuse nothing kustomize reads as intended: comments, blank lines, a
// byte-order mark, indentation, "=" inside values, empty values.
func TestSecretGeneratorAcceptsWellFormedEnv(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"kustomization.yaml": secretGen,
		"db.env":             "\xef\xbb\xbf# creds\n\n  USER=app\nPASSWORD=a=b\nEMPTY=\n",
	})
	r, err := Render(context.Background(), dir, ".", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 1 || r.Objects[0].GetKind() != "Secret" {
		t.Fatalf("rendered %d objects, want the Secret", len(r.Objects))
	}
}
