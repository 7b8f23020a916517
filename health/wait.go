package health

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"gitsync.dev/gitsync/internal/objwatch"
	"gitsync.dev/gitsync/object"
)

// WaitOptions configures one Wait.
type WaitOptions struct {
	// Timeout bounds the wait; Wait then returns a *TimeoutError naming the
	// objects that are not Current.
	Timeout time.Duration
	// Rules judge the kinds they cover in place of kstatus; nil for none.
	// A rule that fails to evaluate ends the wait with its *RuleError.
	Rules Rules
}

// DefaultWaitOptions returns a five-minute timeout, long enough for a rollout
// on a healthy cluster.
func DefaultWaitOptions() WaitOptions {
	return WaitOptions{Timeout: 5 * time.Minute}
}

// Waiter waits for objects to become Current by watching them. Build one per
// process and reuse it: its REST mapper caches discovery.
type Waiter struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// NewWaiter returns a Waiter reading through cfg.
func NewWaiter(cfg *rest.Config) (*Waiter, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("health: http client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("health: rest mapper: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("health: dynamic client: %w", err)
	}
	return &Waiter{dyn: dyn, mapper: mapper}, nil
}

// Wait is NewWaiter(cfg) followed by its Wait, for one-shot use.
func Wait(ctx context.Context, cfg *rest.Config, ids []object.ID, opts WaitOptions) ([]Result, error) {
	w, err := NewWaiter(cfg)
	if err != nil {
		return nil, err
	}
	return w.Wait(ctx, ids, opts)
}

// Wait watches the objects until all are Current (nil error), one has Failed
// (*FailedError), or opts.Timeout passes (*TimeoutError). It returns the last
// result per object, in the order of ids. It never polls: one list+watch per
// resource and namespace (restricted by name when there is one object) feeds
// kstatus (or opts.Rules) on every change. A rule that fails to evaluate
// ends the wait with its *RuleError.
func (w *Waiter) Wait(ctx context.Context, ids []object.ID, opts WaitOptions) ([]Result, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultWaitOptions().Timeout
	}
	results := make([]Result, len(ids))
	groups := map[watchKey][]int{}
	for i, id := range ids {
		results[i] = Result{ID: id, Status: Unknown}
		mapping, err := w.mapper.RESTMapping(id.GroupKind())
		if err != nil {
			return results, fmt.Errorf("%s health check failed: %w", id, err)
		}
		k := watchKey{gvr: mapping.Resource, namespace: id.Namespace}
		groups[k] = append(groups[k], i)
	}
	if len(ids) == 0 {
		return results, nil
	}
	wctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	events := make(chan event)
	for k, idx := range groups {
		go w.watch(wctx, k, idx, ids, events)
	}
	for {
		if done, err := settled(results); done {
			return results, err
		}
		select {
		case ev := <-events:
			if err := ev.apply(ctx, results, opts.Rules); err != nil {
				return results, err
			}
		case <-wctx.Done():
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			return results, &TimeoutError{Timeout: opts.Timeout, Pending: notCurrent(results)}
		}
	}
}

// watchKey groups the objects one watch covers.
type watchKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// event is a change seen by one watch: obj nil means the object at index is
// gone (or, after the initial list, was never there).
type event struct {
	index int
	obj   *unstructured.Unstructured
}

// apply records the event's object's health; it returns the error of a
// health rule that failed to evaluate (the wait cannot judge the object).
func (ev event) apply(ctx context.Context, results []Result, rules Rules) error {
	r := &results[ev.index]
	if ev.obj == nil {
		r.Status, r.Message = NotFound, "not found"
		return nil
	}
	got, err := CheckWith(ctx, ev.obj, rules)
	r.Status, r.Message = got.Status, got.Message
	var re *RuleError
	if errors.As(err, &re) {
		r.Message = err.Error()
		return err
	}
	if err != nil {
		r.Message = err.Error()
	}
	return nil
}

// watch runs an informer for one group of objects and sends their changes.
func (w *Waiter) watch(ctx context.Context, k watchKey, idx []int, ids []object.ID, events chan<- event) {
	byName := make(map[string]int, len(idx))
	for _, i := range idx {
		byName[ids[i].Name] = i
	}
	send := func(o any, gone bool) {
		if d, isTomb := o.(cache.DeletedFinalStateUnknown); isTomb {
			o = d.Obj
		}
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return
		}
		i, want := byName[u.GetName()]
		if !want {
			return
		}
		ev := event{index: i, obj: u}
		if gone {
			ev.obj = nil
		}
		select {
		case events <- ev:
		case <-ctx.Done():
		}
	}
	ri := w.dyn.Resource(k.gvr).Namespace(k.namespace)
	var name string
	if len(idx) == 1 {
		name = ids[idx[0]].Name
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: objwatch.ListWatch(ri, name),
		ObjectType:    &unstructured.Unstructured{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { send(o, false) },
			UpdateFunc: func(_, o any) { send(o, false) },
			DeleteFunc: func(o any) { send(o, true) },
		},
	})
	go ctrl.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
		return
	}
	for n, i := range byName {
		if _, exists, _ := store.GetByKey(storeKey(k.namespace, n)); !exists {
			select {
			case events <- event{index: i}:
			case <-ctx.Done():
				return
			}
		}
	}
}

func storeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// settled reports whether the wait is over: one object Failed, or all Current.
func settled(results []Result) (bool, error) {
	var failed []Result
	for _, r := range results {
		if r.Status == Failed {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		return true, &FailedError{Failed: failed}
	}
	return Aggregate(results) == Current, nil
}

func notCurrent(results []Result) []Result {
	var out []Result
	for _, r := range results {
		if r.Status != Current {
			out = append(out, r)
		}
	}
	return out
}
