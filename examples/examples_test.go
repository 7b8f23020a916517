package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"gitsync.dev/gitsync/apply"
)

func TestGuestbook(t *testing.T) {
	objs := render(t, "examples/guestbook")
	wantSubjects(t, objs,
		"Deployment/frontend", "Deployment/redis-follower", "Deployment/redis-leader",
		"Service/frontend", "Service/redis-follower", "Service/redis-leader")
	for _, o := range objs {
		if o.GetNamespace() != "" {
			t.Errorf("%s names namespace %q; the example must follow the GitSync's targetNamespace", o.GetName(), o.GetNamespace())
		}
	}

	ns := env.Namespace(t)
	mustApply(t, ns, objs)

	// make demo edits exactly this line (replicas 2 -> 3).
	d := get(t, deploymentGVK, ns, "frontend")
	if got := field(t, d, "spec", "replicas"); got != int64(2) {
		t.Errorf("frontend replicas = %v, want 2 (make demo scales 2 -> 3)", got)
	}
	s := get(t, serviceGVK, ns, "frontend")
	sel := field(t, s, "spec", "selector").(map[string]any)
	labels := field(t, d, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("Service frontend selects %s=%v, which the frontend Pods lack", k, v)
		}
	}
	get(t, serviceGVK, ns, "redis-follower") // make demo prunes this one
}

func TestKustomizeOverlays(t *testing.T) {
	for _, tc := range []struct {
		env, logLevel, memoryLimit string
		replicas                   int64
		spread                     bool
	}{
		{env: "dev", replicas: 1, logLevel: "debug"},
		{env: "prod", replicas: 3, logLevel: "info", memoryLimit: "256Mi", spread: true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			objs := render(t, "examples/kustomize/overlays/"+tc.env)
			prefix := tc.env + "-"
			var cmName string
			for _, o := range objs {
				if o.GetKind() == "ConfigMap" {
					cmName = o.GetName()
				}
				if !strings.HasPrefix(o.GetName(), prefix) {
					t.Errorf("%s %s lacks the overlay's name prefix %q", o.GetKind(), o.GetName(), prefix)
				}
				if o.GetLabels()["env"] != tc.env {
					t.Errorf("%s %s has env=%q, want %q", o.GetKind(), o.GetName(), o.GetLabels()["env"], tc.env)
				}
			}
			if !strings.HasPrefix(cmName, prefix+"hello-config-") {
				t.Fatalf("generated ConfigMap = %q, want %shello-config-<hash>", cmName, prefix)
			}
			wantSubjects(t, objs, "ConfigMap/"+cmName, "Deployment/"+prefix+"hello", "Service/"+prefix+"hello")

			ns := env.Namespace(t)
			mustApply(t, ns, objs)

			d := get(t, deploymentGVK, ns, prefix+"hello")
			if got := field(t, d, "spec", "replicas"); got != tc.replicas {
				t.Errorf("replicas = %v, want %d", got, tc.replicas)
			}
			c := field(t, d, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
			envFrom := c["envFrom"].([]any)[0].(map[string]any)
			if got := envFrom["configMapRef"].(map[string]any)["name"]; got != cmName {
				t.Errorf("Deployment reads ConfigMap %v, want the generated %s", got, cmName)
			}
			limit, _, _ := unstructured.NestedString(c, "resources", "limits", "memory")
			if limit != tc.memoryLimit {
				t.Errorf("memory limit = %q, want %q", limit, tc.memoryLimit)
			}
			_, spread, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "topologySpreadConstraints")
			if spread != tc.spread {
				t.Errorf("topologySpreadConstraints set = %v, want %v", spread, tc.spread)
			}

			cm := get(t, configMapGVK, ns, cmName)
			data := field(t, cm, "data").(map[string]any)
			if data["LOG_LEVEL"] != tc.logLevel || data["GREETING"] != "hello" {
				t.Errorf("ConfigMap data = %v, want LOG_LEVEL=%s and the base's GREETING=hello", data, tc.logLevel)
			}
			svc := get(t, serviceGVK, ns, prefix+"hello")
			sel := field(t, svc, "spec", "selector").(map[string]any)
			if sel["component"] != "web" || sel["app.kubernetes.io/name"] != "hello" {
				t.Errorf("Service selector = %v, want component=web and app.kubernetes.io/name=hello", sel)
			}
		})
	}
}

func TestCRDAndCR(t *testing.T) {
	objs := render(t, "examples/crd-and-cr")
	wantSubjects(t, objs, "CustomResourceDefinition/greetings.examples.gitsync.dev", "Greeting.examples.gitsync.dev/hello-world")

	ns := env.Namespace(t)
	// One Apply with both: the applier must establish the CRD before it sends
	// the Greeting, whatever the order in the repository.
	mustApply(t, ns, objs)

	g := get(t, schema.GroupVersionKind{Group: "examples.gitsync.dev", Version: "v1", Kind: "Greeting"}, ns, "hello-world")
	if got := field(t, g, "spec", "message"); got != "Hello from Git" {
		t.Errorf("Greeting message = %v", got)
	}
	if got := field(t, g, "spec", "repeat"); got != int64(2) {
		t.Errorf("Greeting repeat = %v, want 2", got)
	}

	// The CRD's schema is real: a Greeting without a message is refused.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "examples.gitsync.dev/v1", "kind": "Greeting",
		"metadata": map[string]any{"name": "empty"},
		"spec":     map[string]any{"repeat": int64(1)},
	}}
	cs := tryApply(t, env.Config, ns, []*unstructured.Unstructured{bad})
	if cs.Err() == nil || !strings.Contains(cs.Err().Error(), "message") {
		t.Errorf("Greeting without spec.message: err = %v, want a validation error naming message", cs.Err())
	}
}

func TestMultiTenant(t *testing.T) {
	installGitSyncCRD(t)
	platform := render(t, "examples/multi-tenant/platform")
	wantSubjects(t, platform,
		"GitSync.gitsync.dev/team-a/app", "Namespace/team-a", "ResourceQuota/team-a/team-a",
		"Role/team-a/gitsync-tenant", "RoleBinding/team-a/gitsync-tenant", "ServiceAccount/team-a/gitsync-tenant")
	mustApply(t, "", platform)

	gs := get(t, gitSyncGVK, "team-a", "app")
	sa := field(t, gs, "spec", "serviceAccountName").(string)
	path := field(t, gs, "spec", "source", "path").(string)
	get(t, schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "team-a", sa)

	// What the agent does for this GitSync: impersonate its ServiceAccount.
	tenant := rest.CopyConfig(env.Config)
	tenant.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:team-a:" + sa}

	t.Run("tenant applies its path in its namespace", func(t *testing.T) {
		objs := render(t, path)
		wantSubjects(t, objs, "ConfigMap/shop", "Deployment/shop", "Service/shop")
		cs := tryApply(t, tenant, "team-a", objs)
		if err := cs.Err(); err != nil {
			t.Fatalf("apply as %s: %v", sa, err)
		}
		for _, e := range cs.Entries {
			if e.Action != apply.Created {
				t.Errorf("%s: %s, want created", e.Subject, e.Action)
			}
		}
		get(t, deploymentGVK, "team-a", "shop")
	})

	t.Run("tenant is confined", func(t *testing.T) {
		other := env.Namespace(t)
		outside := render(t, path)
		roleBinding := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": "grab-admin", "namespace": "team-a"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": "team-a"}},
		}}
		ownGitSync := gs.DeepCopy()
		unstructured.RemoveNestedField(ownGitSync.Object, "spec", "serviceAccountName")
		ownGitSync.SetResourceVersion("")
		ownGitSync.SetManagedFields(nil)
		for name, objs := range map[string][]*unstructured.Unstructured{
			"another namespace":                outside,
			"a RoleBinding in its namespace":   {roleBinding},
			"its GitSync's serviceAccountName": {ownGitSync},
		} {
			ns := other
			if name != "another namespace" {
				ns = "team-a"
			}
			cs := tryApply(t, tenant, ns, objs)
			for _, e := range cs.Entries {
				if e.Action != apply.Failed || !forbidden(e.Err) {
					t.Errorf("%s: %s as %s: %s (%v), want failed: forbidden", name, e.Subject, sa, e.Action, e.Err)
				}
			}
		}
	})
}

// forbidden reports whether err is the apiserver refusing on RBAC grounds.
func forbidden(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || strings.Contains(err.Error(), "forbidden"))
}

// TestGitSyncManifests applies every example GitSync, so each validates
// against the CRD, and checks that the path it names renders, belongs to a
// documented example, and does not contain the GitSync itself.
func TestGitSyncManifests(t *testing.T) {
	installGitSyncCRD(t)
	ctx := context.Background()
	sys := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitsync-system"}}
	if err := env.Client.Create(ctx, sys); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	objs := render(t, "examples/gitsyncs")
	wantSubjects(t, objs,
		"GitSync.gitsync.dev/gitsync-system/platform", "GitSync.gitsync.dev/greetings/greetings",
		"GitSync.gitsync.dev/guestbook/guestbook", "GitSync.gitsync.dev/hello-dev/hello",
		"GitSync.gitsync.dev/hello-prod/hello",
		"Namespace/greetings", "Namespace/guestbook", "Namespace/hello-dev", "Namespace/hello-prod")
	mustApply(t, "", objs)

	gitSyncs := slices.Concat(objs, render(t, "examples/multi-tenant/platform"))
	for _, o := range gitSyncs {
		if o.GetKind() != "GitSync" {
			continue
		}
		t.Run(o.GetNamespace()+"/"+o.GetName(), func(t *testing.T) {
			live := get(t, gitSyncGVK, o.GetNamespace(), o.GetName())
			if got := field(t, live, "spec", "deletionPolicy"); got != "Delete" {
				t.Errorf("deletionPolicy = %v, want the CRD default Delete (was the object validated by the CRD?)", got)
			}
			path := field(t, live, "spec", "source", "path").(string)
			dir := strings.Join(strings.Split(path, "/")[:2], "/")
			if _, err := os.Stat(filepath.Join(repoRoot(t), dir, "README.md")); err != nil {
				t.Errorf("path %s: example %s has no README.md", path, dir)
			}
			for _, r := range render(t, path) {
				p, _, _ := unstructured.NestedString(r.Object, "spec", "source", "path")
				if r.GetKind() == "GitSync" && p == path {
					t.Errorf("path %s holds GitSync %s/%s syncing that same path", path, r.GetNamespace(), r.GetName())
				}
			}
		})
	}
}
