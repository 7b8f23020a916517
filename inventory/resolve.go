package inventory

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resolver turns inventory entries into the GroupVersionKind and resource
// needed to read, delete or patch them.
type resolver struct {
	mapper meta.RESTMapper // may be nil
}

// newResolver uses mapper, else the client's own RESTMapper when c has one.
func newResolver(mapper meta.RESTMapper, c any) resolver {
	if mapper == nil {
		if m, ok := c.(interface{ RESTMapper() meta.RESTMapper }); ok {
			mapper = m.RESTMapper()
		}
	}
	return resolver{mapper: mapper}
}

// mapping is what a resolver knows about one entry's kind.
type mapping struct {
	GVK        schema.GroupVersionKind
	Resource   schema.GroupVersionResource
	Namespaced bool
}

// resolve returns the mapping of e. An error matching meta.IsNoMatchError
// means the kind is no longer served (so no such object can exist).
func (r resolver) resolve(e Entry) (mapping, error) {
	gk := e.ID.GroupKind()
	if r.mapper == nil {
		if e.Version == "" {
			return mapping{}, fmt.Errorf("no RESTMapper and no recorded version for %s", gk)
		}
		return mapping{GVK: gk.WithVersion(e.Version), Namespaced: e.ID.Namespace != ""}, nil
	}
	var versions []string
	if e.Version != "" {
		versions = []string{e.Version}
	}
	m, err := r.mapper.RESTMapping(gk, versions...)
	if err != nil && len(versions) > 0 && meta.IsNoMatchError(err) {
		m, err = r.mapper.RESTMapping(gk) // the recorded version may no longer be served
	}
	if err != nil {
		return mapping{}, err
	}
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced != (e.ID.Namespace != "") {
		return mapping{}, fmt.Errorf("%s is %s but the inventory records namespace %q", gk, scopeWord(namespaced), e.ID.Namespace)
	}
	return mapping{GVK: m.GroupVersionKind, Resource: m.Resource, Namespaced: namespaced}, nil
}

func scopeWord(namespaced bool) string {
	if namespaced {
		return "namespaced"
	}
	return "cluster-scoped"
}
