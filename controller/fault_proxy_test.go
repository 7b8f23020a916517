package controller_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/testenv"
)

// TestFaultProxy proves the harness the fault tests stand on: each fault
// reaches a client-go client as the apiserver would send it (a Status the
// client decodes, a 429 it retries after Retry-After, a broken
// connection), rules act only on what they match and only Times times,
// watches stream through, and clients keep working across an apiserver
// restart.
func TestFaultProxy(t *testing.T) {
	setup(t)
	ns := env.Namespace(t)
	p := env.NewFaultProxy(t)
	c, err := client.NewWithWatch(p.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
	}
	path := "^/api/v1/namespaces/" + ns + "/configmaps$"

	for name, tc := range map[string]struct {
		fault testenv.Fault
		check func(error) bool
	}{
		"500 is an internal error": {testenv.Fault{Status: http.StatusInternalServerError, Times: 1}, apierrors.IsInternalError},
		"409 is a conflict":        {testenv.Fault{Status: http.StatusConflict, Times: 1}, apierrors.IsConflict},
		"503 is unavailable":       {testenv.Fault{Status: http.StatusServiceUnavailable, Times: 1}, apierrors.IsServiceUnavailable},
		"drop is no answer": {testenv.Fault{Drop: true, Times: 1}, func(err error) bool {
			_, isStatus := err.(apierrors.APIStatus)
			return err != nil && !isStatus
		}},
	} {
		t.Run(name, func(t *testing.T) {
			tc.fault.Method, tc.fault.Path = http.MethodPost, path
			rule := p.MustInject(t, tc.fault)
			defer rule.Clear()
			if err := c.Create(ctx, cm("x")); !tc.check(err) {
				t.Fatalf("create through the fault: %v (%T)", err, err)
			}
			if err := c.Create(ctx, cm("x")); err != nil {
				t.Fatalf("create after the rule's one time: %v", err)
			}
			if rule.Matched() != 1 {
				t.Errorf("rule matched %d requests, want 1", rule.Matched())
			}
			if err := c.Delete(ctx, cm("x")); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("429 is retried after Retry-After", func(t *testing.T) {
		rule := p.MustInject(t, testenv.Fault{Method: http.MethodPost, Path: path, Status: http.StatusTooManyRequests, RetryAfter: time.Second, Times: 2})
		defer rule.Clear()
		if err := c.Create(ctx, cm("y")); err != nil {
			t.Fatalf("client-go retries a 429 with Retry-After: %v", err)
		}
		if rule.Matched() != 2 {
			t.Errorf("rule matched %d requests, want 2", rule.Matched())
		}
	})

	t.Run("watch streams and survives a restart", func(t *testing.T) {
		w, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if err := env.Client.Create(ctx, cm("z")); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, w, "z")
		if err := env.RestartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, cm("z")); err != nil {
			t.Errorf("delete through the proxy after a restart: %v", err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "y"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the env's own client after a restart: %v", err)
		}
	})
}

// waitEvent waits for an event about ConfigMap name on w.
func waitEvent(t *testing.T, w watch.Interface, name string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if o, ok := ev.Object.(client.Object); ok && o.GetName() == name {
				return
			}
		case <-timeout:
			t.Fatalf("no watch event for %s through the proxy", name)
		}
	}
}
