package sandbox_test

import (
	"context"
	"testing"

	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sandbox"
	"gitsync.dev/gitsync/source/sandbox/sandboxtest"
)

// BenchmarkChildRender is the cost of rendering a small chart in a child
// (start, limits, request, render, answer, reaping) beside the same render
// in-process: ms/op, and the child's CPU and peak RSS.
func BenchmarkChildRender(b *testing.B) {
	files := chart("charts/web", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Values.n }}\ndata:\n  v: x\n")
	files["charts/web/values.yaml"] = "n: 1\n"
	repo := writeRepo(&testing.T{}, files)
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := render.Render(context.Background(), repo, "charts/web", render.DefaultOptions()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("child", func(b *testing.B) {
		var cpu, rss, n int64
		opts := sandbox.DefaultOptions()
		opts.Executable = sandboxtest.Child(b)
		opts.Finished = func(s sandbox.Stats) { cpu += int64(s.CPU); rss = max(rss, s.PeakRSS); n++ }
		s, err := sandbox.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Render(context.Background(), repo, "charts/web", render.DefaultOptions()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpu)/float64(n)/1e6, "child-cpu-ms/op")
		b.ReportMetric(float64(rss)/(1<<20), "child-peak-rss-MiB")
	})
	_ = budget.Limits{}
}
