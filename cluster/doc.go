// Package cluster owns the clusters GitSyncs write to: one Target per
// GitSync (its applier, an uncached client and the watch cache live objects
// are read from), the connections every target of one cluster shares (one
// REST mapper, one request budget, one HTTP client and pair of uncached
// clients per identity), and the remote clusters tenants name in
// spec.kubeConfig. What a cluster serves, as Helm templates see it
// (Target.Capabilities, ReadCapabilities), is read from its discovery once
// and again only after a CustomResourceDefinition or APIService of it
// changes (a metadata watch; a minute's TTL where it may not watch).
//
// A tenant's kubeconfig is read by the agent with its own identity and file
// system, so it must carry its credentials as data: anything that would
// make the agent read a file, run a program (unless the operator allows
// exec plugins) or connect through a proxy is refused, and so is a server
// the egress policy denies (a *KubeconfigError naming the field). A remote
// cluster's replies never reach a message in its own words: failures are
// rewritten to their code, verb and path, and a successful reply that is
// not a Kubernetes object becomes a 502.
//
// Contract: a target is rebuilt only when what it was built from changed
// (identity, default namespace, force, the kubeconfig's name, key or
// resourceVersion), and the kubeconfig Secret is read only when the caller
// asks for a refresh, so a converged GitSync costs no request here.
//
// It never decides which identity a GitSync writes as or what its errors
// mean (package controller does), never reads a Secret but through the
// reader its caller passes, and never follows a kubeconfig to the agent's
// disk or credentials.
package cluster
