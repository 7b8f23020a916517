package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/internal/testcharts"
	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/sops/sopstest"
)

// builtObjects decodes build's stdout: YAML documents, or a v1 List for
// -o json.
func builtObjects(t *testing.T, stdout, format string) []*unstructured.Unstructured {
	t.Helper()
	if format == outputJSON {
		var list struct {
			APIVersion string           `json:"apiVersion"`
			Kind       string           `json:"kind"`
			Items      []map[string]any `json:"items"`
		}
		if err := json.Unmarshal([]byte(stdout), &list); err != nil {
			t.Fatalf("-o json is not JSON: %v\n%s", err, stdout)
		}
		if list.APIVersion != "v1" || list.Kind != "List" {
			t.Fatalf("-o json: want a v1 List, got %s %s", list.APIVersion, list.Kind)
		}
		out := make([]*unstructured.Unstructured, len(list.Items))
		for i, item := range list.Items {
			out[i] = &unstructured.Unstructured{Object: item}
		}
		return out
	}
	var out []*unstructured.Unstructured
	dec := yamlutil.NewYAMLOrJSONDecoder(strings.NewReader(stdout), 4096)
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("-o yaml is not YAML documents: %v\n%s", err, stdout)
		}
		if doc != nil {
			out = append(out, &unstructured.Unstructured{Object: doc})
		}
	}
}

// subjects lists the objects' IDs as change sets name them, namespaced
// objects without a namespace placed in ns.
func subjects(t *testing.T, objs []*unstructured.Unstructured, ns string) []string {
	t.Helper()
	out := make([]string, len(objs))
	for i, obj := range objs {
		out[i] = liveKey(t, obj, ns).String()
	}
	return out
}

// liveKey is obj's ID in the cluster: a namespaced object without a
// namespace goes to ns, as apply puts it.
func liveKey(t *testing.T, obj *unstructured.Unstructured, ns string) object.ID {
	t.Helper()
	id := object.IDOf(obj)
	if id.Namespace == "" {
		namespaced, err := env.Client.IsObjectNamespaced(obj)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if namespaced {
			id.Namespace = ns
		}
	}
	return id
}

// wantLiveMatches fails unless every field of every built object holds the
// same value in the live object (the fields build printed; the server adds
// others), Secret values excepted: build masks them; and the labels are the
// same both ways.
func wantLiveMatches(t *testing.T, built []*unstructured.Unstructured, ns string) {
	t.Helper()
	for _, obj := range built {
		id := liveKey(t, obj, ns)
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, live); err != nil {
			t.Errorf("%s: built, but not live: %v", id, err)
			continue
		}
		want := jsonValue(t, obj.Object)
		if id.Group == "" && id.Kind == "Secret" {
			delete(want.(map[string]any), "data")
			delete(want.(map[string]any), "stringData")
		}
		for _, d := range notIn(want, jsonValue(t, live.Object), "") {
			t.Errorf("%s: %s", id, d)
		}
		// Nothing but the apply sets labels here: live has no label build
		// did not print (the owner labels above all).
		if d := cmp.Diff(obj.GetLabels(), live.GetLabels()); d != "" {
			t.Errorf("%s: labels (-built +live):\n%s", id, d)
		}
	}
}

// jsonValue is v as encoding/json reads it back (numbers as float64).
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// notIn lists the fields of want that got lacks or holds differently; a
// list must have want's length, its items compared in turn. A zero value
// (0, false, "", {} or []) matches a missing field: the apiserver stores
// such fields of built-in kinds as omitted.
func notIn(want, got any, path string) []string {
	if got == nil && (want == nil || reflect.ValueOf(want).IsZero() || isEmpty(want)) {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: built %v, live %v", path, want, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, notIn(v, g[k], path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: built %v, live %v", path, want, got)}
		}
		var out []string
		for i := range w {
			out = append(out, notIn(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: built %v, live %v", path, want, got)}
	}
	return nil
}

// isEmpty reports whether v is an empty map or list.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// TestBuildNeedsNoCluster: build of a directory reads no cluster (the
// kubeconfig does not exist), prints the objects in render order as YAML
// documents or one v1 List, the same objects either way and the same bytes
// every time; --name stamps apply --name's owner labels, without it none.
//
// Checked: without the build command, every run exits 2.
func TestBuildNeedsNoCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"b.yaml":  configMap("b", "k", "v"),
		"a.yaml":  configMap("a", "k", "v"),
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n",
		"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\nspec:\n" +
			"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
	})
	yamlOut := gitsync(t, "build", dir)
	wantCode(t, yamlOut, 0)
	if yamlOut.stderr != "" {
		t.Errorf("want nothing on stderr:\n%s", yamlOut)
	}
	want := []string{"ConfigMap/a", "ConfigMap/b", "Namespace/shop", "Deployment/shop/web"}
	for _, format := range []string{outputYAML, outputJSON} {
		r := gitsync(t, "build", dir, "-o", format)
		wantCode(t, r, 0)
		objs := builtObjects(t, r.stdout, format)
		got := make([]string, len(objs))
		for i, obj := range objs {
			got[i] = object.IDOf(obj).String()
			if _, ok := obj.GetLabels()[gitsyncv1.LabelName]; ok {
				t.Errorf("%s: owner labels without --name", got[i])
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("-o %s: objects (-want +got):\n%s", format, d)
		}
		if again := gitsync(t, "build", dir, "-o", format); again.stdout != r.stdout {
			t.Errorf("-o %s: two builds differ:\n%s\n%s", format, r.stdout, again.stdout)
		}
	}
	if !strings.HasPrefix(yamlOut.stdout, "apiVersion: v1\n") || strings.Count(yamlOut.stdout, "\n---\n") != 3 {
		t.Errorf("-o yaml: want four documents separated by ---, got:\n%s", yamlOut.stdout)
	}

	r := gitsync(t, "build", dir, "--name", "web", "-n", "prod", "-o", "json")
	wantCode(t, r, 0)
	wantLabels := object.CLIOwner("prod", "web").Labels()
	for _, obj := range builtObjects(t, r.stdout, outputJSON) {
		labels := obj.GetLabels()
		for k, v := range wantLabels {
			if labels[k] != v {
				t.Errorf("%s --name web -n prod: label %s=%q, want %q", object.IDOf(obj), k, labels[k], v)
			}
		}
	}
}

// TestBuildMasksSecrets: build decrypts a SOPS Secret and substitutes a
// --substitute-from-file value into a Secret and a ConfigMap as apply does,
// and no plaintext value shows anywhere, in YAML or JSON, raw or base64:
// Secret values are ***, the file's value *** wherever it lands; values
// that are not secret are printed.
//
// Checked: with encodeObjects not masking (no diff.Mask), the literal
// Secret's value is printed in both formats.
func TestBuildMasksSecrets(t *testing.T) {
	t.Parallel()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	const token, password, literal = "tok-41f7-decrypted", "pw-8a2b-from-file", "lit-6d0c-in-git"
	enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n  env: ${ENV}\n  token: "+token+"\n"),
		sopstest.Options{EncryptedRegex: "^token$"}, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	dir, keys := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"api.enc.yaml": string(enc),
		"db.yaml":      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: ${DB_PASSWORD}\n",
		"lit.yaml":     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: lit\ndata:\n  v: " + base64.StdEncoding.EncodeToString([]byte(literal)) + "\n",
		"app.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  env: \"${ENV}\"\n  db: \"${DB_PASSWORD}\"\n",
	})
	keyFile, varsFile := filepath.Join(keys, "key.agekey"), filepath.Join(keys, "vars.env")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(varsFile, []byte("DB_PASSWORD="+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{outputYAML, outputJSON} {
		r := gitsync(t, "build", dir, "-o", format, "--substitute", "ENV=prod", "--substitute-from-file", varsFile, "--age-key-file", keyFile)
		wantCode(t, r, 0)
		for _, v := range []string{token, password, literal} {
			for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v))} {
				if strings.Contains(r.stdout+r.stderr, form) {
					t.Errorf("-o %s prints %q (of %q):\n%s", format, form, v, r)
				}
			}
		}
		got := map[string]map[string]any{}
		for _, obj := range builtObjects(t, r.stdout, format) {
			for _, field := range []string{"data", "stringData"} {
				m, _, _ := unstructured.NestedMap(obj.Object, field)
				for k, v := range m {
					if got[obj.GetName()] == nil {
						got[obj.GetName()] = map[string]any{}
					}
					got[obj.GetName()][field+"."+k] = v
				}
			}
		}
		want := map[string]map[string]any{
			"api": {"stringData.env": "***", "stringData.token": "***"},
			"db":  {"stringData.password": "***"},
			"lit": {"data.v": "***"},
			"app": {"data.env": "prod", "data.db": "***"},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("-o %s: values (-want +got):\n%s", format, d)
		}
	}
}

// TestBuildErrors: a missing directory, an invalid manifest, a render
// error, an encrypted file without a key and an unknown -o exit 2 with a
// message naming what is wrong, and print nothing on stdout.
//
// Checked: with Run encoding and writing what objects returned before
// checking its error, the -o json cases print an empty List.
func TestBuildErrors(t *testing.T) {
	t.Parallel()
	invalid, broken, encrypted := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, invalid, map[string]string{"a.yaml": configMap("a", "k", "v") + "---\napiVersion: v1\nmetadata:\n  name: nokind\n"})
	writeFiles(t, broken, map[string]string{"kustomization.yaml": "resources: [missing.yaml]\n"})
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n"), sopstest.Options{EncryptedRegex: "^stringData$"}, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, encrypted, map[string]string{"s.enc.yaml": string(enc)})
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"missing dir":      {[]string{filepath.Join(invalid, "nope")}, "nope"},
		"invalid manifest": {[]string{invalid}, "kind"},
		"render error":     {[]string{broken}, "missing.yaml"},
		"no key":           {[]string{encrypted}, "--age-key-file"},
		"unknown output":   {[]string{invalid, "-o", "table"}, `output format "table" not supported`},
		"no source":        {nil, "no source"},
	} {
		for _, format := range []string{outputYAML, outputJSON} {
			r := gitsync(t, append([]string{"build", "-o", format}, tc.args...)...)
			wantCode(t, r, exitError)
			if r.stdout != "" {
				t.Errorf("%s -o %s: want nothing on stdout:\n%s", name, format, r)
			}
			if !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%s -o %s: want an error naming %q:\n%s", name, format, tc.want, r)
			}
		}
	}
}

// TestBuildPrintsWhatApplyApplies: for each test chart (podinfo, Traefik
// with its CRD and custom resource) and a kustomize overlay, build prints
// exactly the objects apply then applies, and every field it printed holds
// the same value in the live object, owner labels included.
//
// Checked: with build not stamping --name's owner labels, every object's
// metadata.labels differ from the live ones.
func TestBuildPrintsWhatApplyApplies(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		path  string
		flags []string
	}{"overlay": {nullOverlay, "overlay", nil}}
	for _, name := range testcharts.Names() {
		cases[name] = struct {
			files map[string]string
			path  string
			flags []string
		}{testcharts.Files(name, "chart"), "chart", []string{"--helm-set", "replicaCount=2"}}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			t.Cleanup(func() { deleteTestCRDs(t, ns) })
			dir := t.TempDir()
			git(t, dir, "init", "-q")
			writeFiles(t, dir, tc.files)
			args := append([]string{filepath.Join(dir, tc.path), "--name", name}, tc.flags...)
			r := gitsync(t, append([]string{"build", "-o", "json", "-n", ns}, args...)...) // no cluster
			wantCode(t, r, 0)
			built := builtObjects(t, r.stdout, outputJSON)
			if len(built) == 0 {
				t.Fatalf("build printed no objects:\n%s", r)
			}
			applied := gitsyncIn(t, ns, append([]string{"apply", "-o", "json"}, args...)...)
			wantCode(t, applied, 0)
			var items []applyItem
			if err := json.Unmarshal([]byte(applied.stdout), &items); err != nil {
				t.Fatalf("apply -o json: %v\n%s", err, applied)
			}
			var appliedSubjects []string
			for _, it := range items {
				appliedSubjects = append(appliedSubjects, it.Subject)
			}
			gotSubjects := subjects(t, built, ns)
			slices.Sort(gotSubjects)
			slices.Sort(appliedSubjects)
			if d := cmp.Diff(appliedSubjects, gotSubjects); d != "" {
				t.Errorf("built objects (-applied +built):\n%s", d)
			}
			wantLiveMatches(t, built, ns)
		})
	}
}

// gitSyncOfChart is the GitSync ns/name of the chart at deploy/ of url,
// released into target with replicaCount 3.
func gitSyncOfChart(ns, name, url, target string) *gitsyncv1.GitSync {
	return gitsynctest.New(ns, name, url, func(g *gitsyncv1.GitSync) {
		g.Spec.TargetNamespace = target
		g.Spec.Helm = &gitsyncv1.HelmSpec{Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicaCount":3}`)}}
	})
}

// TestBuildGitSyncPrintsWhatTheAgentApplies: build --gitsync renders the
// GitSync's chart at its spec (spec.helm.values, release name, target
// namespace) as the agent does: after the agent applied it, every object
// build printed is live with every printed field, the GitSync's owner
// labels and namespace included; a checkout given as DIR prints the same.
//
// Checked: with gitSyncObjects returning the desired objects unplaced
// (no a.Prepared), the owner labels and namespaces differ from the live
// objects'.
func TestBuildGitSyncPrintsWhatTheAgentApplies(t *testing.T) {
	ns, target := env.Namespace(t), env.Namespace(t)
	startRun(t, ns, "--leader-elect=false")
	c := gitsyncClient(t)
	dir := newRunRepo(t)
	commit := commitFiles(t, dir, testcharts.Files(testcharts.Podinfo, "deploy"))
	gs := gitSyncOfChart(ns, "web", "file://"+dir, target)
	poll(t, "create GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, gs.DeepCopy()) == nil, nil
	})
	waitApplied(t, c, client.ObjectKeyFromObject(gs), commit)

	r := gitsync(t, "build", "--gitsync", ns+"/web", "--kubeconfig", env.Kubeconfig, "-o", "json")
	wantCode(t, r, 0)
	built := builtObjects(t, r.stdout, outputJSON)
	if len(built) == 0 {
		t.Fatalf("build printed no objects:\n%s", r)
	}
	owner := object.GitSyncOwner(ns, "web")
	for _, obj := range built {
		if !owner.Owns(obj.GetLabels()) {
			t.Errorf("%s: want the owner labels of GitSync %s/web, got %v", object.IDOf(obj), ns, obj.GetLabels())
		}
		if obj.GetNamespace() != target {
			t.Errorf("%s: want namespace %s (spec.targetNamespace)", object.IDOf(obj), target)
		}
		if obj.GetKind() == "Deployment" && obj.GetName() == "web-podinfo" {
			if n, _, _ := unstructured.NestedFloat64(obj.Object, "spec", "replicas"); n != 3 {
				t.Errorf("Deployment web-podinfo: replicas %v, want 3 (spec.helm.values)", n)
			}
		}
	}
	wantLiveMatches(t, built, target)

	checkout := gitsync(t, "build", "--gitsync", ns+"/web", dir, "--kubeconfig", env.Kubeconfig, "-o", "json")
	wantCode(t, checkout, 0)
	if !bytes.Equal([]byte(checkout.stdout), []byte(r.stdout)) {
		t.Errorf("build --gitsync of a checkout differs from its spec's source:\n%s\n%s", checkout.stdout, r.stdout)
	}
}

// TestBuildChartNeedsNoCluster: a chart directory builds without a cluster
// too, its templates seeing Helm's default capabilities (as helm template
// does); diff and apply, which have a cluster, show it the cluster's.
//
// Checked: with build keeping the cluster's capabilities, it exits 2 naming
// the kubeconfig it cannot read.
func TestBuildChartNeedsNoCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n" +
			"  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}\n",
	})
	r := gitsync(t, "build", dir, "-o", outputJSON)
	wantCode(t, r, 0)
	objs := builtObjects(t, r.stdout, outputJSON)
	if len(objs) != 1 {
		t.Fatalf("want one ConfigMap, got %d:\n%s", len(objs), r)
	}
	got, _, _ := unstructured.NestedString(objs[0].Object, "data", "kubeVersion")
	if got != helm.DefaultKubeVersion {
		t.Errorf("the chart saw kubeVersion %q, want Helm's default %q", got, helm.DefaultKubeVersion)
	}
}
