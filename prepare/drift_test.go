package prepare

import (
	"errors"
	"testing"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

func TestDriftRules(t *testing.T) {
	gs := &v1.GitSync{Spec: v1.GitSyncSpec{Drift: &v1.DriftSpec{Mode: v1.DriftModeDetect, Ignore: []v1.DriftIgnoreRule{
		{Target: &v1.DriftTarget{Kind: "Deployment", LabelSelector: "app=web"}, Paths: []string{"/spec/replicas"}},
	}}}}
	rules, err := DriftRules(gs)
	if err != nil || len(rules) != 1 || rules[0].Source != "spec.drift.ignore[0]" || rules[0].Target.Labels == nil {
		t.Fatalf("DriftRules = %+v, %v", rules, err)
	}
	if !DetectsDrift(gs) {
		t.Error("mode Detect: DetectsDrift is false")
	}
	for _, bad := range []v1.DriftIgnoreRule{
		{Paths: []string{"spec/replicas"}},
		{Paths: []string{"/metadata/labels/gitsync.dev~1name"}},
		{Target: &v1.DriftTarget{LabelSelector: "app in (("}, Paths: []string{"/spec"}},
	} {
		gs.Spec.Drift.Ignore = []v1.DriftIgnoreRule{{Paths: []string{"/data/a"}}, bad}
		_, err := DriftRules(gs)
		var se *SpecError
		if !errors.As(err, &se) || se.Field != "spec.drift.ignore[1]" {
			t.Errorf("%+v: err = %v, want a *SpecError for spec.drift.ignore[1]", bad, err)
		}
	}
	if DetectsDrift(&v1.GitSync{}) {
		t.Error("no spec.drift: DetectsDrift is true")
	}
}
