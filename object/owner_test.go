package object

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

func TestOwnerOf(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   Owner
		ok     bool
	}{
		{"no labels", nil, Owner{}, false},
		{"gitsync", OwnerLabels("web", "prod"), GitSyncOwner("prod", "web"), true},
		{"cli", CLIOwner("prod", "web").Labels(), CLIOwner("prod", "web"), true},
		{"name without namespace is an unknown namespace", map[string]string{v1.LabelName: "web"}, Owner{Namespace: "<none>", Name: "web"}, true},
		{"unknown kind value is a gitsync", map[string]string{v1.LabelName: "web", v1.LabelNamespace: "prod", v1.LabelOwnerKind: "other"}, GitSyncOwner("prod", "web"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := OwnerOf(tt.labels)
			if ok != tt.ok {
				t.Fatalf("OwnerOf(%v) ok = %v, want %v", tt.labels, ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OwnerOf(%v) (-want +got):\n%s", tt.labels, diff)
			}
		})
	}
}

// The CLI's `--name web -n prod` and the GitSync prod/web never own each
// other's objects.
func TestOwnersOfTheSameNameStayApart(t *testing.T) {
	cli, gs := CLIOwner("prod", "web"), GitSyncOwner("prod", "web")
	if cli.Owns(gs.Labels()) || gs.Owns(cli.Labels()) {
		t.Fatalf("CLI and GitSync owners of the same name own each other's labels: cli=%v gs=%v", cli.Labels(), gs.Labels())
	}
	if !cli.Owns(cli.Labels()) || !gs.Owns(gs.Labels()) {
		t.Fatal("an owner does not own its own labels")
	}
	if got, want := cli.String(), "gitsync apply --name web -n prod"; got != want {
		t.Errorf("cli.String() = %q, want %q", got, want)
	}
	if got, want := gs.String(), "GitSync prod/web"; got != want {
		t.Errorf("gs.String() = %q, want %q", got, want)
	}
}

// Objects a CLI inventory recorded before the kind label existed carry only
// name and namespace; with the recorded UID they stay the CLI's.
func TestCLIOwnsItsRecordedLegacyObjects(t *testing.T) {
	legacy := OwnerLabels("web", "prod")
	if !CLIOwner("prod", "web").OwnsRecorded(legacy) {
		t.Error("CLI owner does not own its recorded legacy-labelled object")
	}
	if GitSyncOwner("prod", "web").OwnsRecorded(CLIOwner("prod", "web").Labels()) {
		t.Error("GitSync owner owns a CLI-labelled object")
	}
	if CLIOwner("prod", "web").OwnsRecorded(OwnerLabels("web", "other")) {
		t.Error("CLI owner owns another namespace's legacy object")
	}
}
