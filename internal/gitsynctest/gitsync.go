package gitsynctest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// New returns the GitSync ns/name of url's branch main at path deploy,
// polled hourly (so a test's changes arrive by trigger, not by poll) and
// pruning, changed by each mutate in order.
func New(ns, name, url string, mutate ...func(*v1.GitSync)) *v1.GitSync {
	gs := &v1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.GitSyncSpec{
			Source:   v1.GitSource{URL: url, Ref: v1.GitRef{Branch: "main"}, Path: "deploy"},
			Interval: metav1.Duration{Duration: time.Hour},
			Prune:    true,
		},
	}
	for _, m := range mutate {
		m(gs)
	}
	return gs
}
