package main

import (
	"strings"
	"testing"
)

const waveDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example.com/web:1.0.0}]
`

// TestApplyWaitsBetweenWaves: with --wait, the ConfigMap of wave 1 is
// applied only once the Deployment of wave 0 is ready. No
// controller-manager runs here, so it never is: the apply fails naming the
// wave and the object, and the ConfigMap is not created. Without --wait
// both waves are applied (in order, without waiting).
func TestApplyWaitsBetweenWaves(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	after := strings.Replace(configMap("after", "k", "v"), "metadata:\n", "metadata:\n  annotations: {gitsync.dev/wave: \"1\"}\n", 1)
	writeFiles(t, dir, map[string]string{"web.yaml": waveDeployment, "after.yaml": after})

	r := gitsyncIn(t, ns, "apply", dir, "--wait", "--timeout", "2s")
	wantCode(t, r, 1)
	if !strings.Contains(r.stderr, "wave 0 not ready, so wave 1 and later were not applied") || !strings.Contains(r.stderr, "Deployment/"+ns+"/web") {
		t.Errorf("apply --wait with wave 0 never ready:\n%s", r)
	}
	if !strings.Contains(r.stdout, "ConfigMap/"+ns+"/after not applied (an earlier wave is not ready)") {
		t.Errorf("apply --wait: the held ConfigMap's line is missing:\n%s", r)
	}
	if exists(t, ns, "after") {
		t.Fatal("ConfigMap of wave 1 applied although wave 0 never became ready")
	}

	r = gitsyncIn(t, ns, "apply", dir)
	wantCode(t, r, 0)
	if !exists(t, ns, "after") {
		t.Errorf("apply without --wait: ConfigMap of wave 1 not applied:\n%s", r)
	}
}
