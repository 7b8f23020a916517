package versions_test

import (
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"gitsync.dev/gitsync/internal/versions"
)

func TestHighest(t *testing.T) {
	for _, tc := range []struct {
		names []string
		rng   string
		want  string
	}{
		{[]string{"v1.0.0", "v1.2.0", "v2.0.0", "latest"}, "~1", "v1.2.0"},
		{[]string{"1.2.0", "v1.2.0"}, ">=1", "1.2.0"},
		{[]string{"v1.2.0", "1.2.0"}, ">=1", "1.2.0"},
		{[]string{"1.3.0-rc.1", "1.2.0"}, "~1", "1.2.0"},
		{[]string{"1.3.0-rc.1", "1.2.0"}, ">=1.3.0-0", "1.3.0-rc.1"},
		{[]string{"main", "x"}, "*", ""},
		{nil, "*", ""},
	} {
		c, err := semver.NewConstraint(tc.rng)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if i := versions.Highest(tc.names, c, nil); i >= 0 {
			got = tc.names[i]
		}
		if got != tc.want {
			t.Errorf("Highest(%v, %q) = %q, want %q", tc.names, tc.rng, got, tc.want)
		}
	}
	c, _ := semver.NewConstraint("^1")
	names := []string{"1.0.0_build.1", "1.1.0_build.2"}
	if i := versions.Highest(names, c, func(s string) string { return strings.ReplaceAll(s, "_", "+") }); i != 1 {
		t.Errorf("with a version func: index %d, want 1", i)
	}
}
