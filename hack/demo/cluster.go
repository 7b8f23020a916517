package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
)

// cluster is the story's view of the demo control plane.
type cluster struct{ c client.Client }

func newCluster(ctx context.Context, kubeconfig string) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, gitsyncv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &cluster{c: c}, nil
}

// createGitSync installs the CRD (gitsync run does too; whoever is first wins),
// the webhook Secret and the GitSync.
func (c *cluster) createGitSync(ctx context.Context, url string) error {
	crd, err := gitsyncv1.CRD()
	if err != nil {
		return err
	}
	if err := c.c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("install GitSync CRD: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var got apiextensionsv1.CustomResourceDefinition
		if err := c.c.Get(ctx, client.ObjectKeyFromObject(crd), &got); err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("GitSync CRD not established: %w", err)
	}
	// Discovery lags behind Established; this client maps GitSync through it.
	gk := gitsyncv1.GroupVersion.WithKind("GitSync").GroupKind()
	if err := apply.WaitServed(ctx, c.c.RESTMapper(), gk, time.Minute, gitsyncv1.GroupVersion.Version); err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "guestbook-webhook", Namespace: demoNamespace},
			StringData: map[string]string{"token": webhookSecret},
		},
		&gitsyncv1.GitSync{
			ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: demoNamespace},
			Spec: gitsyncv1.GitSyncSpec{
				Source:          gitsyncv1.GitSource{URL: url, Ref: gitsyncv1.GitRef{Branch: "main"}},
				Interval:        metav1.Duration{Duration: time.Minute},
				Prune:           true,
				Wait:            true,
				TargetNamespace: demoNamespace,
				Webhook:         &gitsyncv1.WebhookSpec{SecretRef: gitsyncv1.LocalObjectReference{Name: "guestbook-webhook"}},
			},
		},
	}
	for _, o := range objs {
		if err := c.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// waitApplied waits until the GitSync is Ready at commit.
func (c *cluster) waitApplied(ctx context.Context, commit string, timeout time.Duration) error {
	var gs gitsyncv1.GitSync
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: demoNamespace, Name: "guestbook"}, &gs); err != nil {
			return false, nil
		}
		ready := meta.IsStatusConditionTrue(gs.Status.Conditions, gitsyncv1.ConditionReady)
		return ready && gs.Status.ObservedGeneration == gs.Generation && strings.Contains(gs.Status.LastAppliedRevision, commit), nil
	})
	if err != nil {
		return fmt.Errorf("GitSync %s/guestbook not Ready at %s (status: %+v): %w", demoNamespace, short(commit), gs.Status.Conditions, err)
	}
	return nil
}

// waitDeployment waits until the Deployment wants and has n available replicas.
func (c *cluster) waitDeployment(ctx context.Context, name string, n int32, timeout time.Duration) error {
	var d appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: demoNamespace, Name: name}, &d); err != nil {
			return false, nil
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == n && d.Status.AvailableReplicas == n, nil
	})
	if err != nil {
		return fmt.Errorf("Deployment %s/%s never had %d available replicas (status %+v): %w", demoNamespace, name, n, d.Status, err)
	}
	return nil
}

// waitGone waits until Service name no longer exists.
func (c *cluster) waitGone(ctx context.Context, name string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.c.Get(ctx, client.ObjectKey{Namespace: demoNamespace, Name: name}, &corev1.Service{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("Service %s/%s was not pruned: %w", demoNamespace, name, err)
	}
	return nil
}
