package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
)

// waitHealthy waits until every applied object is kstatus Current, reading
// from the watch cache (so waiting costs no requests), until ctx ends.
//
// It is a stand-in for health.Wait until package health lands.
func waitHealthy(ctx context.Context, live client.Reader, objs []*unstructured.Unstructured, cs *apply.ChangeSet) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for i, e := range cs.Entries {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(objs[i].GroupVersionKind())
			if err := live.Get(ctx, client.ObjectKey{Namespace: e.ID.Namespace, Name: e.ID.Name}, u); err != nil {
				last = fmt.Sprintf("%s: %v", e.Subject, err)
				return false, nil
			}
			res, err := status.Compute(u)
			if err != nil {
				return false, err
			}
			if res.Status != status.CurrentStatus {
				last = fmt.Sprintf("%s is %s: %s", e.Subject, res.Status, res.Message)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && last != "" {
		return fmt.Errorf("health check failed: %s: %w", last, err)
	}
	return err
}
