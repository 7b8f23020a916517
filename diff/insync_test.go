package diff_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/diff"
)

// crds are custom resource definitions exercising what the API server does
// to custom resources: defaults (also on list-map keys), int-or-string, set,
// map and atomic lists, preserved unknown fields, a status subresource, and
// (gadgets) status as an ordinary field.
const crds = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.test.gitsync.dev}
spec:
  group: test.gitsync.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              replicas: {type: integer, default: 1}
              ratio: {type: number}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: set}
              args: {type: array, items: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name, protocol]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    protocol: {type: string, default: TCP}
                    port: {type: integer}
              labels: {type: object, additionalProperties: {type: string}}
              selector: {type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}
              empty: {type: object, x-kubernetes-preserve-unknown-fields: true}
              emptyList: {type: array, items: {type: string}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties: {phase: {type: string}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.test.gitsync.dev}
spec:
  group: test.gitsync.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// afterApply are valid inputs that, applied by gitsync, must diff as in sync.
var afterApply = []struct{ name, manifest string }{
	{"widget with defaults, int-or-string, lists and status", `
apiVersion: test.gitsync.dev/v1
kind: Widget
metadata: {name: w, namespace: NS}
spec:
  size: "0.5"
  ratio: 1.5
  tags: [b, a]
  args: [x, x, "y"]
  ports: [{name: http, port: 80}, {name: dns, protocol: UDP, port: 53}]
  labels: {}
  selector: {app: w}
  empty: {}
  emptyList: []
  extra: {nested: {deep: [1, 2.5, "3", true, null]}}
status: {phase: Ready}
`},
	{"gadget with status as a field", `
apiVersion: test.gitsync.dev/v1
kind: Gadget
metadata: {name: g, namespace: NS}
spec: {anything: [1, {a: b}]}
status: {phase: Declared}
`},
	{"kubectl-generated deployment with defaulted fields and quantities", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS, creationTimestamp: null, labels: {}}
spec:
  selector: {matchLabels: {app: web}}
  strategy: {}
  template:
    metadata: {creationTimestamp: null, labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: "0.5", memory: 1024Mi}, limits: {cpu: 1, memory: 2e9}}
        ports: [{containerPort: 8080, name: http}]
        readinessProbe: {httpGet: {port: http, path: /}}
        livenessProbe: {tcpSocket: {port: 8080}}
        env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        volumeMounts: [{name: cfg, mountPath: /cfg}]
      volumes: [{name: cfg, configMap: {name: cfg}}]
      tolerations: [{key: k, operator: Exists}]
      securityContext: {}
status: {replicas: 5, readyReplicas: 5}
`},
	{"nodeport service with named target ports", `
apiVersion: v1
kind: Service
metadata: {name: np, namespace: NS}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: http, name: http}, {port: 443, targetPort: 8443, name: https, protocol: TCP}]
`},
	{"secret with stringData, data and a type", `
apiVersion: v1
kind: Secret
metadata: {name: basic, namespace: NS}
type: kubernetes.io/basic-auth
stringData: {username: admin, password: s3cret}
data: {extra: ZXh0cmE=}
`},
	{"secret with the same key in data and stringData", `
apiVersion: v1
kind: Secret
metadata: {name: both, namespace: NS}
stringData: {key: from-string-data}
data: {key: ZnJvbS1kYXRh}
`},
	{"configmap with binary data, empty maps and immutable", `
apiVersion: v1
kind: ConfigMap
metadata: {name: bin, namespace: NS, annotations: {}}
immutable: true
data: {}
binaryData: {blob: AAEC}
`},
	{"bare namespace: no fields of its own, no owner labels", `
apiVersion: v1
kind: Namespace
metadata: {name: bare-NS}
`},
	{"bare service account", `
apiVersion: v1
kind: ServiceAccount
metadata: {name: bare, namespace: NS}
`},
	{"cluster role (cluster-scoped, atomic rules)", `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gitsync-test-NS}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
`},
	{"network policy with defaulted protocol in an atomic list", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: NS}
spec:
  podSelector: {}
  ingress: [{ports: [{port: 80}, {port: dns, protocol: UDP}]}]
`},
	{"hpa v2 with metrics", `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: NS}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
`},
	{"job with generated selector", `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: NS}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: [sh, -c, "true"]}]
`},
	{"ingress", `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: NS}
spec:
  rules:
  - host: web.example
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
`},
}

func TestDiffAfterApplyIsInSync(t *testing.T) {
	installCRDs(t)
	for _, tt := range afterApply {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			desired := decode(t, tt.manifest, ns)
			live := applyAs(t, desired, "gitsync")
			d, ct := differ(t, diff.Options{FieldManager: "gitsync", Text: true, MemoSize: 10})

			res, requests := diffCounted(t, d, ct, desired, live)
			if res.Verdict != diff.InSync {
				t.Fatalf("Diff after apply = %s, want in-sync; text:\n%s", res.Verdict, res.Text)
			}
			t.Logf("decided by dry-run: %v (%d requests)", res.DryRun, requests)
			res, requests = diffCounted(t, d, ct, desired, live)
			if res.Verdict != diff.InSync || requests != 0 {
				t.Errorf("second Diff = %+v with %d requests, want in-sync without requests", res, requests)
			}
		})
	}
}

// installCRDs creates the test CRDs and waits until they are established.
func installCRDs(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, m := range strings.Split(crds, "\n---\n") {
		obj := decode(t, m, "")
		applyAs(t, obj, "test-setup")
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: obj.GetName()}, crd); err != nil {
				return false, err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", obj.GetName(), err)
		}
	}
}

func TestDiffCustomResourceChanges(t *testing.T) {
	installCRDs(t)
	widget := afterApply[0].manifest
	tests := []struct{ name, from, to string }{
		{"set element removed", "tags: [b, a]", "tags: [b]"},
		{"atomic list item changed", `args: [x, x, "y"]`, `args: [x, "y"]`},
		{"list-map item with a defaulted key changed", "{name: http, port: 80}", "{name: http, port: 81}"},
		{"list-map key default made explicit as another value", "{name: http, port: 80}", "{name: http, protocol: UDP, port: 80}"},
		{"int-or-string changed type and value", `size: "0.5"`, "size: 1"},
		{"preserved unknown field changed", "deep: [1, 2.5", "deep: [1, 2.25"},
		{"empty map filled", "empty: {}", "empty: {k: v}"},
		{"defaulted field set to another value", "ratio: 1.5", "ratio: 1.5\n  replicas: 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			live := applyAs(t, decode(t, widget, ns), "gitsync")
			if !strings.Contains(widget, tt.from) {
				t.Fatalf("fixture lacks %q", tt.from)
			}
			desired := decode(t, strings.Replace(widget, tt.from, tt.to, 1), ns)
			d, ct := differ(t, diff.Options{FieldManager: "gitsync", Text: true})

			res, _ := diffCounted(t, d, ct, desired, live)
			if res.Verdict != diff.Drifted || res.Text == "" {
				t.Errorf("Diff = %s, text %q; want drifted with a diff", res.Verdict, res.Text)
			}
		})
	}
}

func TestDiffDryRunRejected(t *testing.T) {
	ns := env.Namespace(t)
	live := applyAs(t, decode(t, configMap, ns), "gitsync")
	invalid := decode(t, strings.Replace(configMap, `a: "1"`, "a: 1", 1), ns)
	d, ct := differ(t, diff.DefaultOptions())
	before := ct.All.Load()

	_, err := d.Diff(context.Background(), invalid, live)
	var dre *diff.DryRunError
	if !errors.As(err, &dre) || dre.ID.Name != "cm" {
		t.Fatalf("Diff error = %v, want a DryRunError for the ConfigMap", err)
	}
	if want := "ConfigMap/" + ns + "/cm dry-run failed: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if ct.All.Load() == before {
		t.Error("no dry-run request was made")
	}
}
