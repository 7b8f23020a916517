package health_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/object"
)

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME, namespace: NS}
spec:
  replicas: 2
  progressDeadlineSeconds: DEADLINE
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      NODESELECTOR
      containers: [{name: web, image: nginx}]
`

func create(t *testing.T, ns, name, deadline, nodeSelector string) *unstructured.Unstructured {
	t.Helper()
	r := strings.NewReplacer("NAME", name, "NS", ns, "DEADLINE", deadline, "NODESELECTOR", nodeSelector)
	u := parse(t, r.Replace(deployment))
	if err := env.Client.Patch(context.Background(), u, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestWaitDeploymentBecomesAvailable(t *testing.T) {
	ns := env.Namespace(t)
	d := create(t, ns, "web", "600", "nodeSelector: {}")
	cm := parse(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: `+ns+`}}`)
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	ids := []object.ID{object.IDOf(d), object.IDOf(cm)}
	results, err := health.Wait(context.Background(), env.Config, ids, health.WaitOptions{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	for _, r := range results {
		if r.Status != health.Current {
			t.Errorf("%s is %s (%s), want Current", r.ID, r.Status, r.Message)
		}
	}
	// Wait returned Current, so the Deployment really is Available.
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(d.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), live); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(live.Object, "status", "availableReplicas"); n != 2 {
		t.Errorf("availableReplicas = %d, want 2", n)
	}
}

func TestWaitReturnsFailedWithoutWaitingForTheTimeout(t *testing.T) {
	ns := env.Namespace(t)
	ok := create(t, ns, "fine", "600", "nodeSelector: {}")
	// No node matches: Pods stay Pending, the 1s progress deadline passes and
	// the controller marks the rollout ProgressDeadlineExceeded.
	stuck := create(t, ns, "stuck", "1", "nodeSelector: {nowhere: \"true\"}")
	ids := []object.ID{object.IDOf(ok), object.IDOf(stuck)}
	// The timeout is far longer than the test could run: a timeout here
	// would mean Wait did not return on the failure.
	results, err := health.Wait(context.Background(), env.Config, ids, health.WaitOptions{Timeout: 10 * time.Minute})
	var fe *health.FailedError
	if !errors.As(err, &fe) {
		t.Fatalf("Wait error %v, want *FailedError (results %+v)", err, results)
	}
	if len(fe.Failed) != 1 || fe.Failed[0].ID != object.IDOf(stuck) {
		t.Errorf("failed %+v, want only %s", fe.Failed, object.IDOf(stuck))
	}
	if !strings.Contains(err.Error(), "Deployment/"+ns+"/stuck failed") {
		t.Errorf("error %q should name the object", err)
	}
}

func TestWaitTimesOutNamingPendingObjects(t *testing.T) {
	ns := env.Namespace(t)
	missing := object.ID{Kind: "ConfigMap", Namespace: ns, Name: "never-created"}
	results, err := health.Wait(context.Background(), env.Config, []object.ID{missing}, health.WaitOptions{Timeout: time.Second})
	var te *health.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait error %v, want *TimeoutError", err)
	}
	if results[0].Status != health.NotFound || len(te.Pending) != 1 {
		t.Errorf("results %+v, pending %+v: want the ConfigMap NotFound and pending", results, te.Pending)
	}
}
