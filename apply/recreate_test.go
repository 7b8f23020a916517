package apply_test

import (
	"errors"
	"strings"
	"testing"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
)

// immutableChanges are, per kind, an object and a change to it that the
// apiserver refuses as a change to an immutable field; each kind words the
// refusal differently ("field is immutable", "may not change once set",
// "spec is immutable after creation").
var immutableChanges = []struct {
	name  string
	field string // the field the ImmutableError names
	// manifest has OLD replaced by before and after.
	manifest      string
	before, after string
	// deletable says the test control plane can delete the object (a PVC
	// keeps its protection finalizer without a controller-manager).
	deletable bool
}{
	{name: "Service clusterIP", field: "spec.clusterIPs[0]", deletable: true, before: `""`, after: "None", manifest: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: NS}
spec: {clusterIP: OLD, ports: [{port: 80}], selector: {app: web}}
`},
	{name: "Job template", field: "spec.template", deletable: true, before: "busybox:1.36", after: "busybox:1.37", manifest: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: NS}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: migrate, image: "OLD"}]}
`},
	{name: "Deployment selector", field: "spec.selector", deletable: true, before: "one", after: "two", manifest: strings.ReplaceAll(deployment, "SEL", "OLD")},
	{name: "StatefulSet volumeClaimTemplates", field: "spec.volumeClaimTemplates", deletable: true, before: "1Gi", after: "2Gi", manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: NS}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: OLD}}}
`},
	{name: "PersistentVolumeClaim spec", field: "spec", before: "ReadWriteOnce", after: "ReadOnlyMany", manifest: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: NS}
spec: {accessModes: [OLD], resources: {requests: {storage: 1Gi}}}
`},
}

// TestImmutableChangeOnAnyKind: for every kind, a change to an immutable
// field is refused without opt-in (an *ImmutableError naming the field and
// saying how to opt in, the object untouched), previewed as a recreation by
// a dry run with Force (the object untouched), and recreated (a new UID)
// with the recreate annotation.
func TestImmutableChangeOnAnyKind(t *testing.T) {
	for _, tt := range immutableChanges {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			v1 := obj(t, ns, strings.ReplaceAll(tt.manifest, "OLD", tt.before))
			f := newFixture(t, apply.DefaultOptions())
			f.apply(t, v1)
			f.waitCached(t, v1)
			oldUID := getLive(t, v1).GetUID()
			v2 := obj(t, ns, strings.ReplaceAll(tt.manifest, "OLD", tt.after))

			e := f.apply(t, v2).Entries[0]
			var ie *apply.ImmutableError
			if e.Action != apply.Failed || !errors.As(e.Err, &ie) || !slicesContain(ie.Fields, tt.field) {
				t.Fatalf("without opt-in: %s, %v (%T); want failed with an *ImmutableError on %s", e.Action, e.Err, errors.Unwrap(e.Err), tt.field)
			}
			for _, hint := range []string{"--force", gitsyncv1.AnnotationRecreate + ": enabled"} {
				if !strings.Contains(e.Err.Error(), hint) {
					t.Errorf("error %q does not say %q", e.Err, hint)
				}
			}
			if getLive(t, v1).GetUID() != oldUID {
				t.Fatal("recreated without opt-in")
			}

			opts := apply.DefaultOptions()
			opts.DryRun, opts.Force = true, true
			e = newFixture(t, opts).apply(t, v2).Entries[0]
			if e.Action != apply.Configured || !e.Recreated || e.Err != nil {
				t.Errorf("dry run with force: %s, recreated %v, err %v; want a configure that recreates", e.Action, e.Recreated, e.Err)
			}
			if getLive(t, v1).GetUID() != oldUID {
				t.Fatal("a dry run recreated the object")
			}

			if !tt.deletable {
				return
			}
			v2.SetAnnotations(map[string]string{gitsyncv1.AnnotationRecreate: "enabled"})
			e = f.apply(t, v2).Entries[0]
			live := getLive(t, v2)
			if e.Action != apply.Configured || !e.Recreated || live.GetUID() == oldUID || e.UID != live.GetUID() {
				t.Errorf("with the annotation: %s (err %v), recreated %v, old UID %s, live UID %s, entry UID %s",
					e.Action, e.Err, e.Recreated, oldUID, live.GetUID(), e.UID)
			}
		})
	}
}
