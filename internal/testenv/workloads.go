package testenv

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FakeNodeName is the Node kwok pretends to run; every Pod lands there.
const FakeNodeName = "kwok-node-0"

// kwokNodeSelector is the annotation kwok manages Nodes by, so it never
// touches a real Node of a shared cluster.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

func (e *Env) startWorkloads(ctx context.Context, opts Options) error {
	common := []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--authentication-kubeconfig=" + e.Kubeconfig,
		"--authorization-kubeconfig=" + e.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
	}
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	kcm, err := e.start("kube-controller-manager", append(common,
		"--secure-port="+strconv.Itoa(kcmPort),
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--kube-api-qps=500", "--kube-api-burst=1000",
	)...)
	if err != nil {
		return err
	}
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	sched, err := e.start("kube-scheduler", append(common, "--secure-port="+strconv.Itoa(schedPort))...)
	if err != nil {
		return err
	}
	kwokPort, err := freePort()
	if err != nil {
		return err
	}
	kwok, err := e.start("kwok",
		"--kubeconfig="+e.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
		"--cidr=10.244.0.0/16",
		"--node-ip=10.200.0.1",
		"--node-lease-duration-seconds=40",
		"--server-address=127.0.0.1:"+strconv.Itoa(kwokPort),
	)
	if err != nil {
		return err
	}
	if err := kcm.waitHealthy(ctx, kcmPort, opts.StartTimeout); err != nil {
		return err
	}
	if err := sched.waitHealthy(ctx, schedPort, opts.StartTimeout); err != nil {
		return err
	}
	if err := e.createFakeNode(ctx); err != nil {
		return kwok.failure(err)
	}
	if err := e.waitNodeReady(ctx, kwok, opts.StartTimeout); err != nil {
		return err
	}
	return nil
}

func (e *Env) start(name string, args ...string) (*process, error) {
	p, err := startProcess(e.dir, e.BinDir, name, args...)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, p)
	return p, nil
}

// createFakeNode registers a roomy Node for kwok to keep Ready.
func (e *Env) createFakeNode(ctx context.Context) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        FakeNodeName,
			Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"kubernetes.io/hostname": FakeNodeName, "kubernetes.io/os": "linux", "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if err := e.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("create fake Node %s: %w", FakeNodeName, err)
	}
	// Node status given at create time may be kept or dropped depending on the
	// apiserver version; set it explicitly, racing kwok's own status writes.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		return e.Client.Status().Update(ctx, node)
	})
	if err != nil {
		return fmt.Errorf("set fake Node %s capacity: %w", FakeNodeName, err)
	}
	return nil
}

// waitNodeReady waits until kwok has marked the fake Node Ready.
func (e *Env) waitNodeReady(ctx context.Context, kwok *process, timeout time.Duration) error {
	if err := e.waitNodeCondition(ctx, FakeNodeName, []*process{kwok}, timeout); err != nil {
		return kwok.failure(fmt.Errorf("fake Node %s never became Ready: %w", FakeNodeName, err))
	}
	return nil
}

// waitNodeCondition waits until Node name is Ready, failing early when one
// of the programs that make it Ready exits.
func (e *Env) waitNodeCondition(ctx context.Context, name string, procs []*process, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if done, err := p.exited(); done {
				return false, p.failure(fmt.Errorf("exited early: %v", err))
			}
		}
		var nd corev1.Node
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, &nd); err != nil {
			return false, nil
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
