package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}

func installCRD(t *testing.T) client.Client {
	t.Helper()
	ctx := context.Background()
	crd, err := v1.CRD()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD not established: %v", err)
	}
	if err := v1.AddToScheme(env.Scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCRDValidation proves the schema in the generated CRD rejects the specs
// the controller could never act on and accepts a plain one, with defaults.
func TestCRDValidation(t *testing.T) {
	c := installCRD(t)
	ns := env.Namespace(t)
	ctx := context.Background()

	good := func() *v1.GitSync {
		return &v1.GitSync{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "gs-", Namespace: ns},
			Spec: v1.GitSyncSpec{
				Source: v1.GitSource{URL: "https://example.com/repo.git", Ref: v1.GitRef{Branch: "main"}, Path: "apps/web"},
			},
		}
	}
	tests := []struct {
		name    string
		mutate  func(*v1.GitSync)
		wantErr string // empty: accepted
	}{
		{name: "good", mutate: func(*v1.GitSync) {}},
		{name: "ref defaults to main", mutate: func(g *v1.GitSync) { g.Spec.Source.Ref = v1.GitRef{} }},
		{name: "path with dots inside a name", mutate: func(g *v1.GitSync) { g.Spec.Source.Path = "a/..b/c.." }},
		{name: "two refs", mutate: func(g *v1.GitSync) { g.Spec.Source.Ref.Tag = "v1" }, wantErr: "exactly one of branch, tag, semver, commit or digest"},
		{name: "absolute path", mutate: func(g *v1.GitSync) { g.Spec.Source.Path = "/etc" }, wantErr: "path must be relative"},
		{name: "parent path", mutate: func(g *v1.GitSync) { g.Spec.Source.Path = "../x" }, wantErr: "'..' segments"},
		{name: "parent inside path", mutate: func(g *v1.GitSync) { g.Spec.Source.Path = "a/../../x" }, wantErr: "'..' segments"},
		{name: "zero retry interval", mutate: func(g *v1.GitSync) { g.Spec.RetryInterval = &metav1.Duration{} }, wantErr: "retryInterval must be between"},
		{name: "huge timeout", mutate: func(g *v1.GitSync) { g.Spec.Timeout = &metav1.Duration{Duration: 48 * time.Hour} }, wantErr: "timeout must be between"},
		{name: "short commit", mutate: func(g *v1.GitSync) { g.Spec.Source.Ref = v1.GitRef{Commit: "abc123"} }, wantErr: "spec.source.ref.commit"},
		{name: "verify a branch's commit", mutate: func(g *v1.GitSync) {
			g.Spec.Source.Verify = &v1.GitVerification{SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}},
		{name: "verify a tag", mutate: func(g *v1.GitSync) {
			g.Spec.Source.Ref = v1.GitRef{Tag: "v1.2.0"}
			g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyTagAndHEAD, SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}},
		{name: "verify a branch's tag", mutate: func(g *v1.GitSync) {
			g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyTag, SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}, wantErr: "verify.mode Tag and TagAndHEAD need ref.tag or ref.semver"},
		{name: "unknown verify mode", mutate: func(g *v1.GitSync) {
			g.Spec.Source.Verify = &v1.GitVerification{Mode: "Any", SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}, wantErr: "spec.source.verify.mode"},
		{name: "oci artifact by tag", mutate: func(g *v1.GitSync) {
			g.Spec.Source.URL, g.Spec.Source.Ref = "oci://registry.example/team/app", v1.GitRef{Tag: "v1"}
		}},
		{name: "oci artifact by digest, cosign-verified", mutate: func(g *v1.GitSync) {
			g.Spec.Source.URL, g.Spec.Source.Ref = "oci://registry.example/team/app", v1.GitRef{Digest: "sha256:" + strings.Repeat("ab", 32)}
			g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}},
		{name: "oci artifact of a branch", mutate: func(g *v1.GitSync) { g.Spec.Source.URL = "oci://registry.example/team/app" },
			wantErr: "an oci:// source follows ref.tag, ref.semver or ref.digest"},
		{name: "digest of a Git source", mutate: func(g *v1.GitSync) {
			g.Spec.Source.Ref = v1.GitRef{Digest: "sha256:" + strings.Repeat("ab", 32)}
		}, wantErr: "ref.digest is for an oci:// source"},
		{name: "short digest", mutate: func(g *v1.GitSync) {
			g.Spec.Source.URL, g.Spec.Source.Ref = "oci://registry.example/team/app", v1.GitRef{Digest: "sha256:abc"}
		}, wantErr: "spec.source.ref.digest"},
		{name: "oci artifact verified as Git", mutate: func(g *v1.GitSync) {
			g.Spec.Source.URL, g.Spec.Source.Ref = "oci://registry.example/team/app", v1.GitRef{Tag: "v1"}
			g.Spec.Source.Verify = &v1.GitVerification{SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}, wantErr: "an oci:// source verifies with verify.mode Cosign"},
		{name: "Git verified with cosign", mutate: func(g *v1.GitSync) {
			g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}, wantErr: "and Git with HEAD, Tag or TagAndHEAD"},
		{name: "chart of a Helm repository verified by provenance", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "https://charts.example.com", Chart: "podinfo", Ref: v1.GitRef{Semver: "6.x"},
				Verify: &v1.GitVerification{Mode: v1.VerifyProvenance, SecretRef: v1.LocalObjectReference{Name: "keys"}}}
		}},
		{name: "chart of a Helm repository verified with cosign", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "https://charts.example.com", Chart: "podinfo", Ref: v1.GitRef{Semver: "6.x"},
				Verify: &v1.GitVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "keys"}}}
		}, wantErr: "a chart of an http(s):// repository with Provenance"},
		{name: "Git verified by provenance", mutate: func(g *v1.GitSync) {
			g.Spec.Source.Verify = &v1.GitVerification{Mode: v1.VerifyProvenance, SecretRef: v1.LocalObjectReference{Name: "keys"}}
		}, wantErr: "and Git with HEAD, Tag or TagAndHEAD"},
		{name: "chart repositories verified", mutate: func(g *v1.GitSync) {
			g.Spec.Helm = &v1.HelmSpec{Repositories: []v1.HelmRepository{
				{URL: "https://charts.example.com", Verify: &v1.ChartVerification{Mode: v1.VerifyProvenance, SecretRef: v1.LocalObjectReference{Name: "keys"}}},
				{URL: "oci://ghcr.io/org", Verify: &v1.ChartVerification{Mode: v1.VerifyCosign, SecretRef: v1.LocalObjectReference{Name: "keys"}}},
			}}
		}},
		{name: "oci chart repository verified by provenance", mutate: func(g *v1.GitSync) {
			g.Spec.Helm = &v1.HelmSpec{Repositories: []v1.HelmRepository{
				{URL: "oci://ghcr.io/org", Verify: &v1.ChartVerification{Mode: v1.VerifyProvenance, SecretRef: v1.LocalObjectReference{Name: "keys"}}},
			}}
		}, wantErr: "charts of an oci:// registry verify with verify.mode Cosign"},
		{name: "chart of a Helm repository", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "https://charts.example.com", Chart: "podinfo", Ref: v1.GitRef{Semver: "6.x"}}
		}},
		{name: "chart of an OCI registry", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "oci://ghcr.io/org/charts", Chart: "podinfo", Ref: v1.GitRef{Tag: "6.5.0"}}
		}},
		{name: "chart of a branch", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "https://charts.example.com", Chart: "podinfo", Ref: v1.GitRef{Branch: "main"}}
		}, wantErr: "a chart source follows ref.tag (a version) or ref.semver"},
		{name: "chart with a path", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "https://charts.example.com", Chart: "podinfo", Ref: v1.GitRef{Tag: "1.0.0"}, Path: "x"}
		}, wantErr: "path is for Git and artifact sources"},
		{name: "chart over ssh", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "ssh://git@example.com/charts", Chart: "podinfo", Ref: v1.GitRef{Tag: "1.0.0"}}
		}, wantErr: "a chart source's url is a Helm repository"},
		{name: "helm.chart over a Git path", mutate: func(g *v1.GitSync) {
			g.Spec.Helm = &v1.HelmSpec{Chart: &v1.HelmChartRef{Repository: "@stable", Name: "podinfo", Version: "6.x"}}
		}},
		{name: "helm.chart of a chart source", mutate: func(g *v1.GitSync) {
			g.Spec.Source = v1.GitSource{URL: "https://charts.example.com", Chart: "podinfo", Ref: v1.GitRef{Tag: "1.0.0"}}
			g.Spec.Helm = &v1.HelmSpec{Chart: &v1.HelmChartRef{Repository: "https://charts.example.com", Name: "podinfo", Version: "1.0.0"}}
		}, wantErr: "helm.chart renders a chart from a repository with values files of a Git source"},
		{name: "helm.chart from a repository with credentials in its URL", mutate: func(g *v1.GitSync) {
			g.Spec.Helm = &v1.HelmSpec{Chart: &v1.HelmChartRef{Repository: "https://u:p@charts.example.com", Name: "podinfo", Version: "1.0.0"}}
		}, wantErr: "spec.helm.chart.repository"},
		{name: "named chart repository without credentials", mutate: func(g *v1.GitSync) {
			g.Spec.Helm = &v1.HelmSpec{Repositories: []v1.HelmRepository{{Name: "stable", URL: "https://charts.example.com"}}}
		}},
		{name: "chart repository entry naming nothing", mutate: func(g *v1.GitSync) {
			g.Spec.Helm = &v1.HelmSpec{Repositories: []v1.HelmRepository{{URL: "https://charts.example.com"}}}
		}, wantErr: "a repository entry names the repository (name), its credentials (secretRef), the keys its charts are signed with (verify), or several"},
		{name: "unknown deletion policy", mutate: func(g *v1.GitSync) { g.Spec.DeletionPolicy = "Keep" }, wantErr: "spec.deletionPolicy"},
		{name: "notifications", mutate: func(g *v1.GitSync) {
			g.Spec.Notifications = []v1.NotificationSpec{
				{Provider: "webhook", SecretRef: v1.LocalObjectReference{Name: "hook"}},
				{Provider: "slack", SecretRef: v1.LocalObjectReference{Name: "slack"}, Events: []v1.NotificationEvent{v1.NotifyFailed, v1.NotifyRecovered}},
			}
		}},
		{name: "unknown notification provider", mutate: func(g *v1.GitSync) {
			g.Spec.Notifications = []v1.NotificationSpec{{Provider: "pager", SecretRef: v1.LocalObjectReference{Name: "p"}}}
		}, wantErr: "spec.notifications[0].provider"},
		{name: "unknown notification event", mutate: func(g *v1.GitSync) {
			g.Spec.Notifications = []v1.NotificationSpec{{Provider: "teams", SecretRef: v1.LocalObjectReference{Name: "t"}, Events: []v1.NotificationEvent{"Deleted"}}}
		}, wantErr: "spec.notifications[0].events[0]"},
		{name: "notification event twice", mutate: func(g *v1.GitSync) {
			g.Spec.Notifications = []v1.NotificationSpec{{Provider: "discord", SecretRef: v1.LocalObjectReference{Name: "d"}, Events: []v1.NotificationEvent{v1.NotifyFailed, v1.NotifyFailed}}}
		}, wantErr: "events lists each event once"},
		{name: "notification without a Secret", mutate: func(g *v1.GitSync) {
			g.Spec.Notifications = []v1.NotificationSpec{{Provider: "slack"}}
		}, wantErr: "spec.notifications[0].secretRef.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gs := good()
			tt.mutate(gs)
			err := c.Create(ctx, gs)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("rejected a valid spec: %v", err)
				}
				if gs.Spec.Interval.Duration != 5*time.Minute || gs.Spec.DeletionPolicy != v1.DeletionPolicyDelete || gs.Spec.Source.Ref == (v1.GitRef{}) {
					t.Errorf("defaults not applied: interval %v, deletionPolicy %q, ref %+v", gs.Spec.Interval, gs.Spec.DeletionPolicy, gs.Spec.Source.Ref)
				}
				return
			}
			if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want Invalid containing %q", err, tt.wantErr)
			}
		})
	}

	// An explicit zero interval, as a kubectl user would write it (the Go
	// type omits a zero interval, so it is sent as unstructured).
	for _, interval := range []string{"0s", "0", "-5m", "soon"} {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gitsync.dev/v1alpha1", "kind": "GitSync",
			"metadata": map[string]any{"generateName": "gs-", "namespace": ns},
			"spec": map[string]any{
				"source":   map[string]any{"url": "https://example.com/repo.git"},
				"interval": interval,
			},
		}}
		if err := c.Create(ctx, u); err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.interval") {
			t.Errorf("interval %q: got error %v, want Invalid on spec.interval", interval, err)
		}
	}
}
