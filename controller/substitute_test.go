package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

const substituteManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  env: "${ENV}"
  host: "${DB_HOST:=localhost}"
  password: "${DB_PASSWORD}"
  literal: "$${ENV}"
  script: "echo ${1} $HOME"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: raw
  annotations:
    gitsync.dev/substitute: disabled
data:
  template: "${NOT_DEFINED}"
`

func createVariables(t *testing.T, c client.Client, ns string, cm map[string]string, secret map[string]string) {
	t.Helper()
	ctx := context.Background()
	if cm != nil {
		if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vars", Namespace: ns}, Data: cm}); err != nil {
			t.Fatal(err)
		}
	}
	if secret != nil {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-vars", Namespace: ns}, StringData: secret}); err != nil {
			t.Fatal(err)
		}
	}
}

func withVariables(inline map[string]string) func(*v1.GitSync) {
	return func(g *v1.GitSync) {
		g.Spec.Substitute = inline
		g.Spec.SubstituteFrom = []v1.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}, {Kind: "Secret", Name: "secret-vars"}}
	}
}

// waitData waits until ConfigMap ns/name holds want.
func waitData(t *testing.T, c client.Client, ns, name string, want map[string]string) {
	t.Helper()
	eventually(t, "ConfigMap "+ns+"/"+name+" data", func(ctx context.Context) (bool, error) {
		cm, err := getCM(t, c, ns, name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for k, v := range want {
			if cm.Data[k] != v {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestSubstitution: variables come from spec.substituteFrom (later wins)
// and spec.substitute (wins over all); defaults, the $${ escape, shell
// forms and the opt-out annotation behave as documented. Two GitSyncs of
// one repository path share the render cache and still get their own
// values. A change of the referenced ConfigMap is applied at once (its
// watch), with the interval an hour away.
//
// Checked: with the ConfigMap watch's event handler not requeueing, the
// last wait fails.
func TestSubstitution(t *testing.T) {
	c := setup(t)
	ns, nsA, nsB := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	createVariables(t, c, ns, map[string]string{"ENV": "from-configmap", "DB_HOST": "db.internal", "not-a-name": "x"},
		map[string]string{"DB_PASSWORD": "pw-from-secret"})
	r := newRepo(t)
	r.commit(map[string]string{"deploy/app.yaml": substituteManifest})
	ctx := context.Background()
	for target, env := range map[string]string{nsA: "prod", nsB: "staging"} {
		gs := newGitSync(ns, "app-"+env, r.url(), withVariables(map[string]string{"ENV": env}), func(g *v1.GitSync) {
			g.Spec.TargetNamespace = target
		})
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"env": "prod", "host": "db.internal", "password": "pw-from-secret",
		"literal": "${ENV}", "script": "echo ${1} $HOME"}
	waitData(t, c, nsA, "settings", want)
	want["env"] = "staging"
	waitData(t, c, nsB, "settings", want)
	waitData(t, c, nsA, "raw", map[string]string{"template": "${NOT_DEFINED}"})

	vars := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vars"}, vars); err != nil {
		t.Fatal(err)
	}
	vars.Data["DB_HOST"] = "db2.internal"
	if err := c.Update(ctx, vars); err != nil {
		t.Fatal(err)
	}
	waitData(t, c, nsA, "settings", map[string]string{"host": "db2.internal"})
}

// TestSubstitutionFailures: an undefined variable in strict mode and a
// missing substituteFrom object stall the GitSync with SubstitutionFailed,
// naming the variable and object, and apply nothing; creating the missing
// object makes it Ready without waiting for the interval.
//
// Checked: with the strict check off (Options.Strict false) the first wait
// fails (the GitSync becomes Ready).
func TestSubstitutionFailures(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	r.commit(map[string]string{"deploy/app.yaml": substituteManifest, "deploy/other.yaml": configMap("other", "1")})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.Substitute = map[string]string{"ENV": "prod"}
	})
	ctx := context.Background()
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitReason(t, c, key, v1.ReasonSubstitutionFailed, `variable "DB_PASSWORD"`, "ConfigMap/settings", "data.password")
	if _, err := getCM(t, c, ns, "other"); err == nil {
		t.Error("an object was applied although substitution failed")
	}

	if err := c.Get(ctx, key, gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.SubstituteFrom = []v1.SubstituteReference{{Kind: "Secret", Name: "secret-vars"}}
	if err := c.Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	waitReason(t, c, key, v1.ReasonSubstitutionFailed, "Secret/"+ns+"/secret-vars", "not found")
	createVariables(t, c, ns, nil, map[string]string{"DB_PASSWORD": "pw"})
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	waitData(t, c, ns, "settings", map[string]string{"password": "pw"})
}

// waitReason waits until gs's Ready is False with reason and a message
// holding every word.
func waitReason(t *testing.T, c client.Client, key client.ObjectKey, reason string, words ...string) *v1.GitSync {
	t.Helper()
	return waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		ready := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		if ready.Reason != reason {
			return false
		}
		for _, w := range words {
			if !strings.Contains(ready.Message, w) {
				return false
			}
		}
		return true
	})
}

// TestSubstitutedSecretValueNotShown: a value from a Secret substituted into
// a ConfigMap label the apiserver refuses (it quotes the invalid value,
// escaping quotes, newlines and backslashes) does not appear in the
// condition, the Events or the agent's log, neither whole nor the parts
// around an escape; the message shows *** in its place.
//
// Checked: with the sync's redactor masking raw values only (forms
// returning just v), the values with a quote, a newline or a backslash
// leak, escaped, into all three.
func TestSubstitutedSecretValueNotShown(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	logs := &syncBuffer{}
	startAgent(t, agentOptions{namespace: ns, logger: zap.New(zap.UseDevMode(true), zap.WriteTo(logs))})
	values := map[string]string{ // none is a valid label value
		"SPACE":     "s3cret value!",
		"QUOTE":     `first-half"second-half`,
		"NEWLINE":   "line-number-one\nline-number-two",
		"BACKSLASH": `C:\secrets\token-value`,
		"UNICODE":   "pässwörd-with-ümlauts",
	}
	createVariables(t, c, ns, map[string]string{}, values)
	r := newRepo(t)
	manifests := map[string]string{}
	for name := range values {
		lower := strings.ToLower(name)
		manifests["deploy/"+lower+".yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + lower + "\n  labels:\n    token: \"${" + name + "}\"\n"
	}
	r.commit(manifests)
	gs := newGitSync(ns, "app", r.url(), withVariables(nil))
	ctx := context.Background()
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitReason(t, c, key, v1.ReasonApplyFailed, "***")
	everything := []string{}
	for _, cond := range got.Status.Conditions {
		everything = append(everything, "condition "+cond.Type+": "+cond.Message)
	}
	eventually(t, "warning Event", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool { return e.Reason == v1.ReasonApplyFailed }), nil
	})
	evs := &corev1.EventList{}
	if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		everything = append(everything, "Event "+e.Reason+": "+e.Message)
	}
	everything = append(everything, "agent log: "+logs.String())
	leaks := []string{"s3cret value!", "first-half", "second-half", "line-number-one", "line-number-two", "token-value", "with-ümlauts", `\"second`}
	for _, msg := range everything {
		for _, leak := range leaks {
			if strings.Contains(msg, leak) {
				t.Errorf("%q of a Secret's value leaked into %s", leak, msg)
			}
		}
	}
}
