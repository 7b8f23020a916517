package tenant_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/tenant"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{}, &env)) }

// countingReviewer is the agent's reviewer, counting the reviews it sends.
type countingReviewer struct {
	tenant.Reviewer
	n atomic.Int64
}

func (c *countingReviewer) Review(ctx context.Context, user string, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	c.n.Add(1)
	return c.Reviewer.Review(ctx, user, attrs)
}

// fixture is a Reader started against the test apiserver, with the
// GitSyncs of a real informer.
type fixture struct {
	reader   *tenant.Reader
	reviews  *countingReviewer
	c        client.Client
	requeued chan string
}

func newFixture(t *testing.T, clk clock.Clock, defaultSA string) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	installCRD(t)
	gitsyncs, err := cache.New(env.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := gitsyncs.GetInformer(ctx, &v1.GitSync{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gitsyncs.Start(ctx) }()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	md := metadata.NewForConfigOrDie(env.Config)
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{reviews: &countingReviewer{Reviewer: tenant.NewReviewer(env.Config)}, c: c, requeued: make(chan string, 100)}
	f.reader, err = tenant.New(tenant.Options{
		Clientset: cs, APIReader: c, GitSyncs: inf, Reviewer: f.reviews, Metadata: md, Clock: clk,
		RunContext: func() context.Context { return ctx }, DefaultServiceAccount: defaultSA,
		Requeue: func(key types.NamespacedName) { f.requeued <- key.String() },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func installCRD(t *testing.T) {
	t.Helper()
	crd, err := v1.CRD()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = v1.AddToScheme(scheme)
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "GitSyncs are served", func() bool { return c.List(context.Background(), &v1.GitSyncList{}) == nil })
}

// grant lets ServiceAccount sa of ns get the Secrets names (a resourceNames
// grant, as a tenant's Role would be written) and returns the binding.
func grant(t *testing.T, ns, sa string, names ...string) *rbacv1.RoleBinding {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa + "-reads", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, ResourceNames: names, Verbs: []string{"get"}},
	}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa + "-reads", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}
	for _, o := range []client.Object{role, rb} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return rb
}

func createSecret(t *testing.T, ns, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func gitSync(ns, sa string, refs ...string) *v1.GitSync {
	gs := &v1.GitSync{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}
	gs.Spec.ServiceAccountName = sa
	gs.Spec.Interval = metav1.Duration{Duration: time.Minute}
	for _, r := range refs {
		gs.Spec.SubstituteFrom = append(gs.Spec.SubstituteFrom, v1.SubstituteReference{Kind: "Secret", Name: r})
	}
	return gs
}

// eventually polls cond until it holds, failing after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
