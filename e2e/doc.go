// Package e2e runs gitsync as users run it: the image `make image` builds,
// installed with the Helm chart onto a real node (kubelet, containerd,
// kube-proxy from internal/testenv) and pointed at a Git server on the host.
// It needs root and the node's binaries and packages (`make e2e` provides
// them); elsewhere its tests skip and say why.
package e2e
