//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/testenv"
)

// TestNodeRunsPods proves the node is real: a pod built from a program here
// runs as non-root with a read-only root filesystem, reaches the apiserver
// through the `kubernetes` Service's ClusterIP (kube-proxy's rules, the CNI
// bridge), verifies it with the CA and authenticates with the token its
// ServiceAccount volume holds, and its log is read back through the
// apiserver from the kubelet. StartNode's cleanup then checks the machine is
// left exactly as found (sysctls, iptables, mounts, links, cgroups, paths,
// processes).
func TestNodeRunsPods(t *testing.T) {
	env := testenv.StartNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := env.Namespace(t)

	image := "gitsync.test/probe:e2e"
	importProgram(t, env, "./testdata/probe", image)
	waitDefaultServiceAccount(t, env, ns)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr.To(true),
					RunAsUser:                ptr.To[int64](65532),
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create probe pod: %v", err)
	}
	dumpOnFailure(t, env, ns)
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		t.Fatalf("probe pod never finished: %v (phase %s)", err, pod.Status.Phase)
	}
	logs := podLogs(t, env, ns, pod.Name, "probe")
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("probe pod %s; its log:\n%s", pod.Status.Phase, logs)
	}
	want := "reached 10.0.0.1:443 as system:serviceaccount:" + ns + ":default"
	if !strings.Contains(logs, want) {
		t.Fatalf("probe log = %q, want it to say %q", logs, want)
	}
}

// importProgram builds the Go program in dir statically and imports it into
// the node as a one-layer image named image.
func importProgram(t *testing.T, env *testenv.Env, dir, image string) {
	t.Helper()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, filepath.Base(dir))
	cmd := exec.Command("go", "build", "-o", bin, dir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", dir, err, out)
	}
	archive := filepath.Join(tmp, "image.tar")
	name := filepath.Base(dir)
	if err := testenv.WriteProgramImage(archive, image, map[string]string{name: bin}, []string{"/" + name}); err != nil {
		t.Fatal(err)
	}
	if err := env.ImportImage(context.Background(), archive); err != nil {
		t.Fatal(err)
	}
}

// waitDefaultServiceAccount waits for the controller-manager to give a new
// namespace its default ServiceAccount; the ServiceAccount admission plugin
// refuses pods until then.
func waitDefaultServiceAccount(t *testing.T, env *testenv.Env, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var sa corev1.ServiceAccount
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &sa) == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s never got its default ServiceAccount: %v", ns, err)
	}
}

func podLogs(t *testing.T, env *testenv.Env, ns, pod, container string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	data, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(context.Background())
	if err != nil {
		return fmt.Sprintf("(no log for %s/%s: %v)", pod, container, err)
	}
	return string(data)
}

// dumpOnFailure logs, when the test has failed, the pods and events of ns and
// the tails of the node's logs, before the node is stopped and its logs go.
func dumpOnFailure(t *testing.T, env *testenv.Env, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err == nil {
			for _, p := range pods.Items {
				t.Logf("pod %s: phase %s, conditions %v, containers %+v", p.Name, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
			}
		}
		var events corev1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err == nil {
			for _, e := range events.Items {
				t.Logf("event %s %s: %s %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		for _, name := range []string{"kubelet", "containerd", "kube-proxy"} {
			t.Logf("--- last lines of %s ---\n%s", name, env.NodeLog(name, 40))
		}
	})
}
