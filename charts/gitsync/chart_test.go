package chart_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	fullValues        = "testdata/full-values.yaml"
	multiTenantValues = "../../examples/multi-tenant/agent-values.yaml"
)

func TestLint(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// wantErr is a fragment of helm's complaint; empty means lint passes.
		wantErr string
	}{
		{name: "defaults"},
		{name: "defaults strict", args: []string{"--strict"}},
		{name: "full values strict", args: []string{"--strict", "-f", fullValues}},
		{name: "watch namespace strict", args: []string{"--strict", "--set", "agent.watchNamespace=apps"}},
		{name: "no rbac strict", args: []string{"--strict", "--set", "rbac.create=false"}},
		{name: "multi-tenant example strict", args: []string{"--strict", "-f", multiTenantValues}},
		{name: "unknown key", args: []string{"--set", "rbac.clusteradmin=true"}, wantErr: "clusteradmin"},
		{name: "zero concurrency", args: []string{"--set", "agent.concurrent=0"}, wantErr: "concurrent"},
		{name: "bad namespace", args: []string{"--set", "rbac.gitSyncNamespaces={Not_A_Namespace}"}, wantErr: "gitSyncNamespaces"},
		{name: "gitsync without source", args: []string{"--set", "gitSyncs[0].name=x,gitSyncs[0].spec.interval=5m"}, wantErr: "source"},
		{name: "opt-ins strict", args: []string{"--strict", "--set", "networkPolicy.enabled=true,networkPolicy.apiServer.cidrs={10.0.0.1/32}," +
			"ingress.enabled=true,metrics.serviceMonitor.enabled=true,metrics.podMonitor.enabled=true,metrics.prometheusRule.enabled=true," +
			"metrics.grafanaDashboard.enabled=true"}},
		{name: "bad cidr", args: []string{"--set", "networkPolicy.git.cidrs={github.com}"}, wantErr: "cidrs"},
		{name: "bad alert duration", args: []string{"--set", "metrics.prometheusRule.notReadyFor=ten"}, wantErr: "notReadyFor"},
		{name: "otlp endpoint with credentials", args: []string{"--set", "agent.otlpEndpoint=http://u:p@collector:4318"}, wantErr: "otlpEndpoint"},
		{name: "crds unknown key", args: []string{"--set", "crds.keep=false"}, wantErr: "keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "."}, tc.args...)...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("helm lint %v: %v\n%s", tc.args, err, lines(out))
			case tc.wantErr == "" && (strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERROR]")):
				t.Errorf("helm lint %v is not clean:\n%s", tc.args, lines(out))
			case tc.wantErr != "" && err == nil:
				t.Errorf("helm lint %v passed, want it to refuse %q:\n%s", tc.args, tc.wantErr, lines(out))
			case tc.wantErr != "" && !strings.Contains(out, tc.wantErr):
				t.Errorf("helm lint %v failed without naming %q:\n%s", tc.args, tc.wantErr, lines(out))
			}
		})
	}
}

func TestTemplate(t *testing.T) {
	const ns = "gitsync-system"
	base := []string{
		"CustomResourceDefinition/gitsyncs.gitsync.dev",
		"ServiceAccount/gitsync-system/gs-gitsync",
		"Role/gitsync-system/gs-gitsync-leader-election", "RoleBinding/gitsync-system/gs-gitsync-leader-election",
		"Role/gitsync-system/gs-gitsync-namespace", "RoleBinding/gitsync-system/gs-gitsync-namespace",
		"Service/gitsync-system/gs-gitsync", "Deployment/gitsync-system/gs-gitsync",
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "defaults",
			want: append(slices.Clone(base), "ClusterRole/gs-gitsync", "ClusterRoleBinding/gs-gitsync"),
		},
		{
			name: "watch namespace",
			args: []string{"--set", "agent.watchNamespace=apps"},
			want: append(slices.Clone(base),
				"Role/apps/gs-gitsync", "RoleBinding/apps/gs-gitsync",
				"Role/apps/gs-gitsync-namespace", "RoleBinding/apps/gs-gitsync-namespace"),
		},
		{
			name: "full values",
			args: []string{"-f", fullValues},
			want: append(slices.Clone(base),
				"ClusterRole/gs-gitsync", "ClusterRoleBinding/gs-gitsync",
				"ClusterRole/gs-gitsync-apply", "ClusterRoleBinding/gs-gitsync-apply",
				"ClusterRoleBinding/gs-gitsync-cluster-admin",
				"Role/tenant-apps/gs-gitsync-namespace", "RoleBinding/tenant-apps/gs-gitsync-namespace",
				"Role/tenant-b/gs-gitsync-namespace", "RoleBinding/tenant-b/gs-gitsync-namespace",
				"Secret/gitsync-system/guestbook-repo", "Secret/tenant-apps/tenant-repo",
				"GitSync.gitsync.dev/gitsync-system/guestbook", "GitSync.gitsync.dev/tenant-apps/tenant"),
		},
		{
			name: "no rbac",
			args: []string{"--set", "rbac.create=false"},
			want: []string{
				"CustomResourceDefinition/gitsyncs.gitsync.dev", "ServiceAccount/gitsync-system/gs-gitsync",
				"Service/gitsync-system/gs-gitsync", "Deployment/gitsync-system/gs-gitsync",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantSubjects(t, template(t, "gs", ns, tc.args...), tc.want...)
		})
	}
}

// TestTemplateRefuses: values that cannot work are refused when rendered,
// naming the value, not installed to fail at run time.
func TestTemplateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, set, want string
	}{
		{"default account without impersonation", "agent.defaultServiceAccount=deployer,rbac.impersonate=false", "agent.defaultServiceAccount needs rbac.impersonate"},
		{"no account name", "serviceAccount.create=false", "serviceAccount.name is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, "template", "gs", ".", "--set", tc.set)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("helm template --set %s: err %v, want a refusal naming %q:\n%s", tc.set, err, tc.want, lines(out))
			}
		})
	}
}

// TestDefaultRulesAreLeastPrivilege reads every rule the default chart grants:
// nothing is a wildcard, Secrets are only read (never written), and no rule
// reaches beyond the kinds the agent itself needs.
func TestDefaultRulesAreLeastPrivilege(t *testing.T) {
	allowed := map[string][]string{ // "group/resource" -> verbs at most
		"gitsync.dev/gitsyncs":            {"get", "list", "watch", "patch", "update"},
		"gitsync.dev/gitsyncs/status":     {"get", "patch", "update"},
		"gitsync.dev/gitsyncs/finalizers": {"update"},
		"/events":                         {"create", "patch"},
		"events.k8s.io/events":            {"create", "patch"},
		"coordination.k8s.io/leases":      {"get", "list", "watch", "create", "update", "patch", "delete"},
		"/secrets":                        {"get", "list", "watch"}, // one field-selected watch per named Secret
		"/configmaps":                     {"get", "list", "watch"}, // the same per ConfigMap named in spec.substituteFrom
		"/serviceaccounts":                {"impersonate"},
		// metadata watches: tenant read answers are renewed on RBAC changes
		"rbac.authorization.k8s.io/roles":               {"list", "watch"},
		"rbac.authorization.k8s.io/rolebindings":        {"list", "watch"},
		"rbac.authorization.k8s.io/clusterroles":        {"list", "watch"},
		"rbac.authorization.k8s.io/clusterrolebindings": {"list", "watch"},
		// metadata watches: Helm capabilities are read again when what the cluster serves changes
		"apiextensions.k8s.io/customresourcedefinitions": {"list", "watch"},
		"apiregistration.k8s.io/apiservices":             {"list", "watch"},
	}
	for _, o := range template(t, "gs", "gitsync-system") {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole // Role and ClusterRole share the rules field
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("%s %s: unexpected rule %+v", o.GetKind(), o.GetName(), r)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					max, ok := allowed[g+"/"+res]
					if !ok {
						t.Errorf("%s %s grants %s/%s, which the agent does not need by default", o.GetKind(), o.GetName(), g, res)
						continue
					}
					for _, v := range r.Verbs {
						if !slices.Contains(max, v) {
							t.Errorf("%s %s grants %s on %s/%s", o.GetKind(), o.GetName(), v, g, res)
						}
					}
				}
			}
		}
	}
}

func TestInstallFullValues(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"tenant-apps", "tenant-b"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	ns := env.Namespace(t)
	objs := template(t, "full", ns, "-f", fullValues)
	install(t, objs)

	t.Run("deployment", func(t *testing.T) {
		var d appsv1.Deployment
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "full-gitsync"}, &d); err != nil {
			t.Fatal(err)
		}
		checkDeployment(t, &d, ns, []string{
			"run", "--shards=auto", "--leader-elect=false", "--metrics-addr=:8080", "--health-addr=:8081",
			"--webhook-addr=:9292", "--concurrent=8", "--cache-dir=/var/cache/gitsync", "--log-format=json", "-v",
			"--otlp-endpoint=http://otel-collector.monitoring:4318",
			"--shard=gitsync.dev/shard=blue", "--default-service-account=deployer",
		})
		if got := ptr.Deref(d.Spec.Replicas, 0); got != 2 {
			t.Errorf("replicas = %d, want 2 (each owns a share of the GitSyncs)", got)
		}
	})

	t.Run("service", func(t *testing.T) {
		var s corev1.Service
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "full-gitsync"}, &s); err != nil {
			t.Fatal(err)
		}
		ports := map[string]int32{}
		for _, p := range s.Spec.Ports {
			ports[p.Name] = p.Port
		}
		if diff := cmp.Diff(map[string]int32{"webhook": 9292, "metrics": 8080}, ports); diff != "" {
			t.Errorf("Service ports (-want +got):\n%s", diff)
		}
		want := map[string]string{"app.kubernetes.io/name": "gitsync", "app.kubernetes.io/instance": "full"}
		if diff := cmp.Diff(want, s.Spec.Selector); diff != "" {
			t.Errorf("Service selector (-want +got):\n%s", diff)
		}
	})

	t.Run("rbac", func(t *testing.T) {
		var crb rbacv1.ClusterRoleBinding
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "full-gitsync-cluster-admin"}, &crb); err != nil {
			t.Fatal(err)
		}
		if crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 1 || crb.Subjects[0].Namespace != ns {
			t.Errorf("cluster-admin binding = %+v %+v", crb.RoleRef, crb.Subjects)
		}
		for _, key := range []client.ObjectKey{
			{Name: "full-gitsync"}, {Name: "full-gitsync-apply"},
		} {
			if err := env.Client.Get(ctx, key, &rbacv1.ClusterRole{}); err != nil {
				t.Errorf("ClusterRole %s: %v", key.Name, err)
			}
		}
		for _, key := range []client.ObjectKey{
			{Namespace: ns, Name: "full-gitsync-leader-election"},
			{Namespace: ns, Name: "full-gitsync-namespace"},
			{Namespace: "tenant-apps", Name: "full-gitsync-namespace"},
			{Namespace: "tenant-b", Name: "full-gitsync-namespace"},
		} {
			if err := env.Client.Get(ctx, key, &rbacv1.RoleBinding{}); err != nil {
				t.Errorf("RoleBinding %s: %v", key, err)
			}
		}
		sa := "system:serviceaccount:" + ns + ":full-gitsync"
		if !allowed(t, sa, authz{verb: "create", group: "apps", resource: "deployments", namespace: "kube-system"}) {
			t.Errorf("with rbac.clusterAdmin the agent cannot create Deployments")
		}
	})

	t.Run("secrets and gitsyncs", func(t *testing.T) {
		var s corev1.Secret
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "tenant-apps", Name: "tenant-repo"}, &s); err != nil {
			t.Fatal(err)
		}
		if string(s.Data["bearerToken"]) != "not-a-real-token" {
			t.Errorf("Secret tenant-repo keys: %v", slices.Sorted(maps.Keys(s.Data)))
		}
		for _, key := range []client.ObjectKey{{Namespace: ns, Name: "guestbook"}, {Namespace: "tenant-apps", Name: "tenant"}} {
			gs := &unstructured.Unstructured{}
			gs.SetGroupVersionKind(schema.GroupVersionKind{Group: "gitsync.dev", Version: "v1alpha1", Kind: "GitSync"})
			if err := env.Client.Get(ctx, key, gs); err != nil {
				t.Fatalf("GitSync %s: %v", key, err)
			}
			// Defaults come from the CRD's schema: proof the object went through it.
			if p, _, _ := unstructured.NestedString(gs.Object, "spec", "deletionPolicy"); p != "Delete" {
				t.Errorf("GitSync %s deletionPolicy = %q, want the CRD default Delete", key, p)
			}
		}
	})

	t.Run("invalid gitsync refused", func(t *testing.T) {
		bad := template(t, "bad", ns, "--set", "gitSyncs[0].name=bad,gitSyncs[0].spec.source.url=https://example.com/r,gitSyncs[0].spec.source.path=../etc")
		gs := find(t, bad, "GitSync", ns, "bad")
		err := env.Client.Patch(ctx, gs, client.Apply, client.FieldOwner("chart-test"))
		if err == nil || !strings.Contains(err.Error(), "..") {
			t.Errorf("GitSync with path ../etc: err = %v, want the CRD to refuse it", err)
		}
	})
}

// TestInstallDefaults installs the chart as it comes and asks the apiserver
// what its ServiceAccount may do: enough to run, nothing more.
func TestInstallDefaults(t *testing.T) {
	ns := env.Namespace(t)
	other := env.Namespace(t)
	install(t, template(t, "dflt", ns))

	var d appsv1.Deployment
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "dflt-gitsync"}, &d); err != nil {
		t.Fatal(err)
	}
	checkDeployment(t, &d, ns, []string{
		"run", "--shards=auto", "--leader-elect=false", "--metrics-addr=:8080", "--health-addr=:8081",
		"--webhook-addr=:9292", "--concurrent=4", "--cache-dir=/var/cache/gitsync", "--log-format=json",
	})

	sa := "system:serviceaccount:" + ns + ":dflt-gitsync"
	for _, tc := range []struct {
		a    authz
		want bool
	}{
		{authz{verb: "watch", group: "gitsync.dev", resource: "gitsyncs"}, true},
		{authz{verb: "patch", group: "gitsync.dev", resource: "gitsyncs", namespace: other}, true},
		{authz{verb: "update", group: "gitsync.dev", resource: "gitsyncs", subresource: "status", namespace: other}, true},
		{authz{verb: "update", group: "gitsync.dev", resource: "gitsyncs", subresource: "finalizers", namespace: other}, true},
		{authz{verb: "create", resource: "events", namespace: other}, true},
		{authz{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns}, true},
		{authz{verb: "get", resource: "secrets", namespace: ns}, true},
		{authz{verb: "impersonate", resource: "serviceaccounts", namespace: ns}, true},

		{authz{verb: "delete", group: "gitsync.dev", resource: "gitsyncs", namespace: other}, false},
		{authz{verb: "watch", resource: "secrets", namespace: ns}, true},
		{authz{verb: "watch", resource: "configmaps", namespace: ns}, true}, // spec.substituteFrom
		{authz{verb: "create", resource: "secrets", namespace: ns}, false},
		{authz{verb: "list", resource: "secrets", namespace: other}, false},
		{authz{verb: "get", resource: "secrets", namespace: other}, false},
		{authz{verb: "impersonate", resource: "serviceaccounts", namespace: other}, false},
		{authz{verb: "impersonate", resource: "users"}, false},
		{authz{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: other}, false},
		{authz{verb: "create", group: "apps", resource: "deployments", namespace: ns}, false},
		{authz{verb: "create", resource: "configmaps", namespace: other}, false},
		{authz{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"}, false},
	} {
		if got := allowed(t, sa, tc.a); got != tc.want {
			t.Errorf("%s may %s: %v, want %v", sa, tc.a, got, tc.want)
		}
	}
}

// checkDeployment asserts the hardening and wiring every install must have.
func checkDeployment(t *testing.T, d *appsv1.Deployment, ns string, wantArgs []string) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != d.Name {
		t.Errorf("serviceAccountName = %q, want %q", pod.ServiceAccountName, d.Name)
	}
	psc := pod.SecurityContext
	if psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot and seccomp RuntimeDefault", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("container has no securityContext")
	case !ptr.Deref(sc.ReadOnlyRootFilesystem, false):
		t.Error("readOnlyRootFilesystem is not set")
	case ptr.Deref(sc.AllowPrivilegeEscalation, true):
		t.Error("allowPrivilegeEscalation is not false")
	case !ptr.Deref(sc.RunAsNonRoot, false):
		t.Error("container runAsNonRoot is not set")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities = %+v, want drop ALL and add nothing", sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("container seccompProfile = %+v, want RuntimeDefault", sc.SeccompProfile)
	}
	for probe, want := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe for %s = %+v, want GET %s on the health port", want, probe, want)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if diff := cmp.Diff(map[string]int32{"metrics": 8080, "health": 8081, "webhook": 9292}, ports); diff != "" {
		t.Errorf("container ports (-want +got):\n%s", diff)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %+v, want cpu and memory requests and a memory limit", c.Resources)
	}
	// Every writable path is an emptyDir: /tmp and the Git cache.
	emptyDirs := map[string]bool{}
	for _, v := range pod.Volumes {
		emptyDirs[v.Name] = v.EmptyDir != nil
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if !emptyDirs[m.Name] {
			t.Errorf("mount %s (%s) is not an emptyDir", m.Name, m.MountPath)
		}
		mounts[m.MountPath] = m.Name
	}
	var cacheDir string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--cache-dir="); ok {
			cacheDir = v
		}
	}
	if mounts["/tmp"] == "" || cacheDir == "" || mounts[cacheDir] == "" {
		t.Errorf("mounts = %v, --cache-dir = %q: want emptyDirs on /tmp and on the Git cache directory", mounts, cacheDir)
	}
}
