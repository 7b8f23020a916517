package testenv_test

import (
	"context"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Workloads: true}, &env))
}

// TestDeploymentBecomesAvailable proves the whole control plane is wired: the
// Deployment is server-side applied, the controller-manager creates its Pods,
// the scheduler binds them to the kwok Node, and kwok makes them Ready, so the
// Deployment reports Available. Without any of the three it never does.
func TestDeploymentBecomesAvailable(t *testing.T) {
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	labels := map[string]string{"app": "smoke"}
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}}},
			},
		},
	}
	if err := env.Client.Patch(ctx, deploy, client.Apply, client.FieldOwner("gitsync-smoke"), client.ForceOwnership); err != nil {
		t.Fatalf("server-side apply Deployment: %v", err)
	}

	cs := kubernetes.NewForConfigOrDie(env.Config)
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "smoke").String()
			return cs.AppsV1().Deployments(ns).List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "smoke").String()
			return cs.AppsV1().Deployments(ns).Watch(ctx, o)
		},
	}
	last, err := watchtools.UntilWithSync(ctx, lw, &appsv1.Deployment{}, nil, func(ev watch.Event) (bool, error) {
		d, ok := ev.Object.(*appsv1.Deployment)
		return ok && available(d) && d.Status.ReadyReplicas == 2, nil
	})
	if err != nil {
		t.Fatalf("Deployment never became Available with 2 ready replicas: %v (last seen: %+v)", err, last)
	}

	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != testenv.FakeNodeName {
			t.Errorf("Pod %s scheduled to %q, want the kwok node %q", p.Name, p.Spec.NodeName, testenv.FakeNodeName)
		}
	}
	if len(pods.Items) != 2 {
		t.Errorf("got %d Pods, want 2", len(pods.Items))
	}
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
