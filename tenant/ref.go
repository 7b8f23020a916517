package tenant

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Kinds a GitSync may name.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// Ref is one object a GitSync names: its kind, its name in the GitSync's
// namespace (a GitSync cannot name another namespace), and the spec field
// that names it, for messages.
type Ref struct {
	Kind  string
	Name  string
	Field string
}

func (r Ref) String() string { return fmt.Sprintf("%s %s (%s)", r.Kind, r.Name, r.Field) }

// RefsOf returns every object gs names, in spec order. It is the one list:
// a reference the API gains is added here, and the reader then watches,
// checks and releases it like the others. A GitSync being deleted names
// nothing (its watches are released).
func RefsOf(gs *v1.GitSync) []Ref {
	if gs.DeletionTimestamp != nil {
		return nil
	}
	var out []Ref
	secret := func(name, field string) { out = append(out, Ref{Kind: KindSecret, Name: name, Field: field}) }
	if ref := gs.Spec.Source.SecretRef; ref != nil {
		secret(ref.Name, "spec.source.secretRef")
	}
	if v := gs.Spec.Source.Verify; v != nil {
		secret(v.SecretRef.Name, "spec.source.verify.secretRef")
	}
	if kc := gs.Spec.KubeConfig; kc != nil {
		secret(kc.SecretRef.Name, "spec.kubeConfig.secretRef")
	}
	if wh := gs.Spec.Webhook; wh != nil {
		secret(wh.SecretRef.Name, "spec.webhook.secretRef")
	}
	if cs := gs.Spec.CommitStatus; cs != nil {
		secret(cs.SecretRef.Name, "spec.commitStatus.secretRef")
	}
	for i, n := range gs.Spec.Notifications {
		secret(n.SecretRef.Name, NotificationField(i))
	}
	for i, ref := range gs.Spec.SubstituteFrom {
		out = append(out, Ref{Kind: ref.Kind, Name: ref.Name, Field: fmt.Sprintf("spec.substituteFrom[%d]", i)})
	}
	if d := gs.Spec.Decryption; d != nil {
		secret(d.SecretRef.Name, "spec.decryption.secretRef")
	}
	if h := gs.Spec.Helm; h != nil {
		for i, repo := range h.Repositories {
			if repo.SecretRef != nil {
				secret(repo.SecretRef.Name, fmt.Sprintf("spec.helm.repositories[%d].secretRef", i))
			}
			if repo.Verify != nil {
				secret(repo.Verify.SecretRef.Name, fmt.Sprintf("spec.helm.repositories[%d].verify.secretRef", i))
			}
		}
	}
	return out
}

// NotificationField is the field path of spec.notifications[i]'s Secret.
func NotificationField(i int) string {
	return fmt.Sprintf("spec.notifications[%d].secretRef", i)
}

// keysOf returns the objects of kind gs names, as watch keys.
func keysOf(gs *v1.GitSync, kind string) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	for _, ref := range RefsOf(gs) {
		if ref.Kind == kind {
			out[types.NamespacedName{Namespace: gs.Namespace, Name: ref.Name}] = true
		}
	}
	return out
}
