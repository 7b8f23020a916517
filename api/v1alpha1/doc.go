// Package v1alpha1 holds the GitSync custom resource (gitsync.dev/v1alpha1):
// where to read manifests from, how to sync them, and the observed status.
//
// +kubebuilder:object:generate=true
// +groupName=gitsync.dev
package v1alpha1
