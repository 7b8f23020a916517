package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderBudgetInTheCLI: gitsync diff (against a cluster, whose
// capabilities the chart sees) and gitsync build (without one) render a
// chart in a render child with the same budget as the agent, and its
// flags: the repeat bomb stops at the memory budget, the range bomb at
// --render-timeout, a chart larger than --render-output-bytes at the output
// budget; each exits 2 naming the budget and the flag that raises it.
//
// Checked by rendering in-process (sourcerender.Render in
// renderLimitFlags.render): the bombs then exhaust the machine instead.
func TestRenderBudgetInTheCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	files := map[string]string{
		"repeat/Chart.yaml":          "apiVersion: v2\nname: repeat\nversion: 0.1.0\n",
		"repeat/templates/main.yaml": `{{ repeat 400 (repeat 1048576 "x") }}`,
		"range/Chart.yaml":           "apiVersion: v2\nname: range\nversion: 0.1.0\n",
		"range/templates/main.yaml":  `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`,
	}
	for k, v := range guestbookChart {
		files[k] = v
	}
	writeFiles(t, dir, files)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "repeat bomb", args: []string{filepath.Join(dir, "repeat")}, want: "render exceeded its memory budget (128 MiB, --render-memory)"},
		// The spinning bomb's lists per step may outgrow 128 MiB before its
		// deadline on a quick machine: room, so it is the deadline that stops it.
		{name: "range bomb", args: []string{filepath.Join(dir, "range"), "--render-timeout", "2s", "--render-memory", "1Gi"}, want: "render exceeded its deadline (2s, --render-timeout)"},
		{name: "output", args: []string{filepath.Join(dir, "charts", "web"), "--render-output-bytes", "200"}, want: "exceeded its output size budget (200 bytes, --render-output-bytes)"},
	}
	ns := env.Namespace(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []result{gitsyncIn(t, ns, append([]string{"diff"}, tt.args...)...), gitsync(t, append([]string{"build"}, tt.args...)...)} {
				wantCode(t, r, 2)
				if !strings.Contains(r.stderr, tt.want) {
					t.Errorf("want %q on stderr:\n%s", tt.want, r)
				}
			}
		})
	}
}
