#!/usr/bin/env bash
# Builds the control-plane programs gitsync's tests and demo run, from the module
# versions pinned in this folder, into a cache outside the work tree. A program
# that is already there is left alone, so a second checkout on the same machine
# only pays for what is missing. Prints the directory holding the binaries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="k8s-v1.37.2-etcd-v3.7.3-kwok-v0.7.0"
k8s_version=v1.37.2
bindir="${GITSYNC_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/gitsync/testbin/$version}"
mkdir -p "$bindir"

# name|module dir|package. kubelet, kube-proxy, containerd, its shim, ctr and
# pause only run on the end-to-end node (internal/testenv Options.Node) and are
# built only when asked for.
programs=(
  "etcd|$here|go.etcd.io/etcd/server/v3/etcdmain"
  "kube-apiserver|$here|k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager|$here|k8s.io/kubernetes/cmd/kube-controller-manager"
  "kube-scheduler|$here|k8s.io/kubernetes/cmd/kube-scheduler"
  "kubectl|$here|k8s.io/kubernetes/cmd/kubectl"
  "kwok|$here/kwok|sigs.k8s.io/kwok/cmd/kwok"
  "helm|$here/helm|helm.sh/helm/v3/cmd/helm"
  "cosign|$here/cosign|github.com/sigstore/cosign/v2/cmd/cosign"
  "kubelet|$here|k8s.io/kubernetes/cmd/kubelet"
  "kube-proxy|$here|k8s.io/kubernetes/cmd/kube-proxy"
  "containerd|$here/containerd|github.com/containerd/containerd/v2/cmd/containerd"
  "containerd-shim-runc-v2|$here/containerd|github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
  "ctr|$here/containerd|github.com/containerd/containerd/v2/cmd/ctr"
  "pause|$here|./pause"
)

# stamped reports whether a built program says the release it was built
# from: Kubernetes' programs only (see the ldflags below), the others always.
stamped() {
  case "$2" in
  k8s.io/kubernetes/cmd/kubectl) "$bindir/$1" version --client 2>/dev/null | grep -q "Client Version: $k8s_version" ;;
  k8s.io/kubernetes/*) "$bindir/$1" --version 2>/dev/null | grep -q "Kubernetes $k8s_version" ;;
  *) return 0 ;;
  esac
}

# No argument: the control plane (make test). "node": that and the node's
# programs (make e2e). Otherwise the programs named.
node_programs=" kubelet kube-proxy containerd containerd-shim-runc-v2 ctr pause "
want="${*:-}"
for entry in "${programs[@]}"; do
  IFS='|' read -r name dir pkg <<<"$entry"
  if [[ -z "$want" && "$node_programs" == *" $name "* ]]; then
    continue
  fi
  if [[ -n "$want" && "$want" != node && " $want " != *" $name "* ]]; then
    continue
  fi
  if [[ -x "$bindir/$name" ]] && stamped "$name" "$pkg"; then
    continue
  fi
  echo "building $name (first time on this machine: minutes, later only a link)" >&2
  start=$(date +%s)
  # etcdmain is a library package; its main lives beside it as etcd's own
  # server/main.go, so build the etcd server module's root package instead.
  if [[ "$name" == etcd ]]; then
    pkg="go.etcd.io/etcd/server/v3"
  fi
  ldflags=-s
  tags=""
  case "$name" in
  # Kubernetes' programs report their release, as a released build does: the
  # kubelet's is checked for skew, and Helm charts see the apiserver's
  # (.Capabilities.KubeVersion, a chart's kubeVersion constraint). Built
  # from module sources they would say v0.0.0-master. A program built before
  # it was stamped is built again (the check above).
  kube-*|kubelet|kubectl) ldflags="-s -X k8s.io/component-base/version.gitVersion=$k8s_version" ;;
  # Snapshotters needing cgo or kernel features the node does not use.
  containerd*|ctr) tags="no_btrfs no_devmapper no_zfs" ;;
  esac
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags="$tags" -ldflags="$ldflags" -o "$bindir/$name.tmp" "$pkg")
  mv "$bindir/$name.tmp" "$bindir/$name"
  echo "built $name in $(( $(date +%s) - start ))s" >&2
done
echo "$bindir"
