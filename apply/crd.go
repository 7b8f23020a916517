package apply

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"gitsync.dev/gitsync/internal/objwatch"
	"gitsync.dev/gitsync/object"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// settleCRDs runs between the stages: it waits (by watch) until every CRD of
// the first stage is Established and its kind is served by discovery. It
// returns the kinds whose CRD failed, mapped to the CRD's subject; their
// custom resources are skipped. A CRD that does not become Established within
// CRDTimeout fails its entry.
func (r *run) settleCRDs(ctx context.Context, idx []int) (map[schema.GroupKind]string, error) {
	blocked := map[schema.GroupKind]string{}
	pending := map[string]int{} // CRD name → index in objs
	for _, i := range idx {
		obj, e := r.objs[i], &r.entries[i]
		if obj.GroupVersionKind().GroupKind() != object.CRDKind {
			continue
		}
		if e.Action == Created && !r.a.opts.DryRun {
			r.freshKinds[crdKind(obj)] = true
		}
		switch {
		case e.Action == Failed || e.Action == Skipped:
			blocked[crdKind(obj)] = e.Subject
		case r.a.opts.DryRun:
			r.newKinds[crdKind(obj)] = r.results[i] == nil
		case !established(r.results[i]):
			pending[obj.GetName()] = i
		}
	}
	if len(pending) == 0 {
		return blocked, nil
	}
	failures, err := r.a.waitEstablished(ctx, pending)
	if err != nil {
		return nil, err
	}
	for name, i := range pending {
		e, obj := &r.entries[i], r.objs[i]
		if err := failures[name]; err == nil {
			err = r.a.waitServed(ctx, obj)
			if err == nil {
				continue
			}
			failures[name] = err
		}
		e.Action, e.Err = Failed, fmt.Errorf("%s apply failed: %w", e.Subject, failures[name])
		blocked[crdKind(obj)] = e.Subject
	}
	return blocked, nil
}

// waitEstablished watches CRDs until every name in pending is Established or
// was rejected, or CRDTimeout passes. It returns the per-name failures; the
// error is for the whole run (context cancelled).
func (a *Applier) waitEstablished(ctx context.Context, pending map[string]int) (map[string]error, error) {
	wctx, cancel := context.WithTimeout(ctx, a.opts.CRDTimeout)
	defer cancel()
	left := make(map[string]bool, len(pending))
	for name := range pending {
		left[name] = true
	}
	failures := map[string]error{}
	observe := func(u *unstructured.Unstructured) {
		if !left[u.GetName()] {
			return
		}
		if established(u) {
			delete(left, u.GetName())
		} else if msg, rejected := namesRejected(u); rejected {
			delete(left, u.GetName())
			failures[u.GetName()] = fmt.Errorf("names not accepted: %s", msg)
		}
	}
	var name string
	if len(pending) == 1 {
		for name = range pending {
		}
	}
	_, err := watchtools.UntilWithSync(wctx, objwatch.ListWatch(a.dyn.Resource(crdGVR), name), &unstructured.Unstructured{},
		func(store cache.Store) (bool, error) {
			for _, o := range store.List() {
				observe(o.(*unstructured.Unstructured))
			}
			return len(left) == 0, nil
		},
		func(ev watch.Event) (bool, error) {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Deleted {
				observe(u)
			}
			return len(left) == 0, nil
		})
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for name := range left {
		failures[name] = fmt.Errorf("not Established within %s", a.opts.CRDTimeout)
	}
	return failures, nil
}

// waitServed waits until discovery serves the CRD's kind, which can lag
// behind the Established condition; only right after a CRD was created or
// changed.
func (a *Applier) waitServed(ctx context.Context, crd *unstructured.Unstructured) error {
	return WaitServed(ctx, a.mapper, crdKind(crd), a.opts.CRDTimeout, servedVersions(crd)...)
}

// NotServedError is a kind discovery did not serve within the wait.
type NotServedError struct {
	// Kind is the kind waited for.
	Kind schema.GroupKind
	// Err is the last mapping error (a NoMatch, or a failed discovery of the
	// group) joined with the wait's own.
	Err error
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("kind %s not served by discovery: %v", e.Kind, e.Err)
}

func (e *NotServedError) Unwrap() error { return e.Err }

// WaitServed waits until mapper maps kind (in one of versions, the
// preferred one when none is given), that is until discovery serves it, or
// timeout passes. Discovery lags behind a CRD's Established condition, more
// on a loaded apiserver, and cannot be watched, so this is the one place
// that retries: with exponential backoff from 10 ms to 1 s, asking the
// mapper, which re-discovers a group it does not know. A NoMatch or a
// failed discovery of the group is waited out; any other error ends the
// wait at once. It fails with *NotServedError.
func WaitServed(ctx context.Context, mapper meta.RESTMapper, kind schema.GroupKind, timeout time.Duration, versions ...string) error {
	backoff := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: math.MaxInt32, Cap: time.Second} // timeout bounds it
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.ExponentialBackoffWithContext(wctx, backoff, func(context.Context) (bool, error) {
		_, last = mapper.RESTMapping(kind, versions...)
		if last != nil && !meta.IsNoMatchError(last) {
			var discovery *apiutil.ErrResourceDiscoveryFailed
			if !errors.As(last, &discovery) {
				return false, last
			}
		}
		return last == nil, nil
	})
	if err != nil {
		if errors.Is(err, last) {
			last = nil // said once
		}
		return &NotServedError{Kind: kind, Err: errors.Join(err, last)}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	return conditionStatus(crd, "Established") == "True"
}

func namesRejected(crd *unstructured.Unstructured) (string, bool) {
	if conditionStatus(crd, "NamesAccepted") != "False" {
		return "", false
	}
	for _, c := range conditions(crd) {
		if c["type"] == "NamesAccepted" {
			msg, _ := c["message"].(string)
			return msg, true
		}
	}
	return "", true
}

func conditionStatus(obj *unstructured.Unstructured, typ string) string {
	for _, c := range conditions(obj) {
		if c["type"] == typ {
			s, _ := c["status"].(string)
			return s
		}
	}
	return ""
}

func conditions(obj *unstructured.Unstructured) []map[string]any {
	if obj == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	out := make([]map[string]any, 0, len(list))
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func servedVersions(crd *unstructured.Unstructured) []string {
	list, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range list {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			if name, _ := m["name"].(string); name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}
