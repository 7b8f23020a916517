// Package testenv starts a real Kubernetes control plane for tests: etcd and
// kube-apiserver always, plus kube-controller-manager, kube-scheduler and kwok
// (which fakes a Node and its kubelet) when a test needs Pods to become Ready.
//
// The binaries are built from pinned module sources by hack/tools/build.sh into
// a cache outside the work tree. A package starts the control plane once in
// TestMain and gives each test its own namespace.
package testenv
