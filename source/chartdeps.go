package source

import (
	"context"

	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
)

// ChartDependencies is the DependencyResolver of chart repositories: it
// reads a chart's needs with the render's caps (render.ChartNeeds) and
// downloads them with the Fetcher.
type ChartDependencies struct {
	// Fetcher downloads and stores the charts. Required.
	Fetcher *chartrepo.Fetcher
	// Render bounds the reads of Chart.yaml, Chart.lock and charts/.
	Render render.Options
}

var _ DependencyResolver = ChartDependencies{}

func (d ChartDependencies) Needs(ctx context.Context, root, path string) ([]helm.Need, error) {
	return render.ChartNeeds(ctx, root, path, d.Render)
}

func (d ChartDependencies) Resolve(ctx context.Context, needs []helm.Need, s render.Settings) (render.Settings, error) {
	archives, err := d.Fetcher.Resolve(ctx, needs, s.Charts)
	if err != nil {
		return s, err
	}
	h := helm.DefaultOptions()
	if s.Helm != nil {
		h = *s.Helm
	}
	h.Dependencies = archives
	s.Helm = &h
	return s, nil
}
