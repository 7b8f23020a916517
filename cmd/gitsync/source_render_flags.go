package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/cluster"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/ignore"
	"gitsync.dev/gitsync/source/postrender"
	sourcerender "gitsync.dev/gitsync/source/render"
)

// renderFlags are the CLI's spec.helm, spec.ignore and post-render changes:
// how a chart directory renders, which files are left out, and what is
// changed after the render.
type renderFlags struct {
	// HelmValues are values files merged in order over the chart's own. A
	// local source takes them as paths on disk (inside the render's root); a
	// remote one as paths in the repository, as spec.helm.valuesFiles.
	HelmValues []string
	// HelmSet are key=value pairs in `helm --set` syntax, merged last.
	HelmSet []string
	// ReleaseName is .Release.Name; empty means the --name inventory's, else
	// the chart's name.
	ReleaseName string
	// Ignore are extra ignore rules, one per flag, as spec.ignore lines.
	Ignore []string
	// PostRender is a YAML file of post-render changes in the GitSync's
	// shape (patches, images, commonMetadata), made after any render.
	PostRender string
	// Limits are the render budget, as gitsync run's.
	Limits renderLimitFlags
	// HelmRepos locate the Helm configuration whose credentials chart
	// dependencies are downloaded with.
	HelmRepos helmRepoFlags

	// defaultRelease and namespace are set by the command: its --name and the
	// namespace objects without one go to (.Release.Namespace).
	defaultRelease, namespace string
	// capabilities, set by a command that has a cluster, read what a chart's
	// templates see of it; nil renders with Helm's defaults.
	capabilities func(context.Context) (helm.Capabilities, error)
	// spec, when set, are a GitSync's settings, used instead of the flags.
	spec *sourcerender.Settings
	// chart is the GitSync's spec.helm.chart (prepare.HelmChart): a chart
	// downloaded from a repository renders the path's values, as the agent
	// renders them.
	chart *helm.Need
}

// AddFlags registers --helm-values, --helm-set, --release-name, --ignore
// and --post-render.
func (o *renderFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.HelmValues, "helm-values", nil, "Values file for a Helm chart directory, merged over the chart's values.yaml (repeatable; a path inside the repository with --url).")
	fs.StringArrayVar(&o.HelmSet, "helm-set", nil, "Value for a Helm chart directory in helm --set syntax, e.g. image.tag=1.2 (repeatable; wins over --helm-values).")
	fs.StringVar(&o.ReleaseName, "release-name", "", "Release name a Helm chart directory's templates see (default: --name, else the chart's name).")
	fs.StringArrayVar(&o.Ignore, "ignore", nil, "Extra ignore rule in .gitignore syntax, from the repository root (repeatable), as spec.ignore; .gitsyncignore files are read too.")
	fs.StringVar(&o.PostRender, "post-render", "", "YAML file of changes made after the render, as a GitSync's spec: patches, images and commonMetadata keys.")
	o.HelmRepos.AddFlags(fs)
	o.Limits.AddFlags(fs, false)
}

// settings turns the flags into render settings. root is the confinement
// root of a local render ("" for a repository checkout), in which
// --helm-values paths must lie.
func (o *renderFlags) settings(root string) (sourcerender.Settings, error) {
	if o.spec != nil {
		return *o.spec, nil
	}
	h := helm.DefaultOptions()
	h.ReleaseName = o.ReleaseName
	if h.ReleaseName == "" {
		h.ReleaseName = o.defaultRelease
	}
	h.Namespace = o.namespace
	for _, f := range o.HelmValues {
		p, err := valuesPath(root, f)
		if err != nil {
			return sourcerender.Settings{}, err
		}
		h.ValuesFiles = append(h.ValuesFiles, p)
	}
	if len(o.HelmSet) > 0 {
		h.Values = map[string]any{}
		for _, s := range o.HelmSet {
			if err := strvals.ParseInto(s, h.Values); err != nil {
				return sourcerender.Settings{}, fmt.Errorf("--helm-set %s: %w", s, err)
			}
		}
	}
	pr, err := readPostRender(o.PostRender)
	if err != nil {
		return sourcerender.Settings{}, err
	}
	return sourcerender.Settings{Helm: &h, Ignore: ignore.Options{Extra: strings.Join(o.Ignore, "\n")}, PostRender: pr}, nil
}

// maxPostRenderFile caps --post-render's file: 64 patches of 64 KiB each,
// the API's caps, and room for the rest.
const maxPostRenderFile = 5 << 20

// readPostRender reads a --post-render file: the patches, images and
// commonMetadata of a GitSync's spec, strictly (an unknown key is an
// error), translated as the agent translates a spec.
func readPostRender(file string) (postrender.Options, error) {
	if file == "" {
		return postrender.Options{}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return postrender.Options{}, fmt.Errorf("--post-render: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPostRenderFile+1))
	if err != nil {
		return postrender.Options{}, fmt.Errorf("--post-render %s: %w", file, err)
	}
	if len(data) > maxPostRenderFile {
		return postrender.Options{}, fmt.Errorf("--post-render %s is larger than %d bytes", file, maxPostRenderFile)
	}
	var spec struct {
		Patches        []gitsyncv1.Patch         `json:"patches"`
		Images         []gitsyncv1.Image         `json:"images"`
		CommonMetadata *gitsyncv1.CommonMetadata `json:"commonMetadata"`
	}
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		return postrender.Options{}, fmt.Errorf("--post-render %s: want patches, images and commonMetadata as in a GitSync's spec: %w", file, err)
	}
	gs := &gitsyncv1.GitSync{Spec: gitsyncv1.GitSyncSpec{Patches: spec.Patches, Images: spec.Images, CommonMetadata: spec.CommonMetadata}}
	return prepare.PostRender(gs), nil
}

// valuesPath maps a --helm-values file to a path relative to root; with no
// root (a repository) it is already one.
func valuesPath(root, f string) (string, error) {
	if root == "" {
		return filepath.ToSlash(f), nil
	}
	abs, err := filepath.Abs(f)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("--helm-values %s: %w", f, err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("--helm-values %s lies outside %s, the directory nothing is read from outside of (--root sets it)", f, root)
	}
	return filepath.ToSlash(rel), nil
}

// given reports whether any of the flags was set.
func (o *renderFlags) given() bool {
	return len(o.HelmValues) > 0 || len(o.HelmSet) > 0 || o.ReleaseName != "" || len(o.Ignore) > 0 || o.PostRender != ""
}

// useTarget takes the release defaults from the command: its --name and the
// namespace objects without one go to; and the capabilities a chart sees:
// the version and served APIs of t's cluster, as `helm install` sees them.
func (o *renderFlags) useTarget(name string, t *targetOptions) {
	o.defaultRelease = name
	if ns, err := t.Namespace(); err == nil {
		o.namespace = ns
	}
	o.capabilities = func(ctx context.Context) (helm.Capabilities, error) {
		tgt, err := t.Connect()
		if err != nil {
			return helm.Capabilities{}, err
		}
		return cluster.ReadCapabilities(ctx, tgt.Discovery)
	}
}

// render renders path of root with the flags' limits; a chart directory
// gets the cluster's capabilities first, when the command has a cluster
// (its discovery is read only then: a plain path asks nothing).
func (o *renderFlags) render(ctx context.Context, root, path string, ropts sourcerender.Options) (*sourcerender.Rendered, error) {
	if o.chart == nil && !isChartDir(filepath.Join(root, path)) {
		return o.Limits.render(ctx, root, path, ropts)
	}
	h := helm.DefaultOptions()
	if ropts.Settings.Helm != nil {
		h = *ropts.Settings.Helm
	}
	if o.capabilities != nil {
		caps, err := o.capabilities(ctx)
		if err != nil {
			return nil, fmt.Errorf("helm capabilities of the cluster: %w", err)
		}
		h.Capabilities = caps
	}
	// Dependencies charts/ does not hold, or spec.helm.chart, are
	// downloaded here, in this process; the render (a child) only reads
	// the archives.
	var err error
	if o.chart != nil {
		h.Chart, err = o.HelmRepos.chart(ctx, *o.chart, ropts.MaxFileBytes)
	} else {
		h, err = o.HelmRepos.dependencies(ctx, root, path, ropts, h)
	}
	if err != nil {
		return nil, err
	}
	ropts.Settings.Helm = &h
	return o.Limits.render(ctx, root, path, ropts)
}

// isChartDir reports whether dir holds a Chart.yaml file.
func isChartDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, helm.ChartFile))
	return err == nil && fi.Mode().IsRegular()
}

// renderOptionsIn are renderOptions with the flags' settings; root is the
// confinement root of a local render, "" for a repository checkout.
func (o *sourceOptions) renderOptionsIn(root string) (sourcerender.Options, error) {
	ropts := o.renderOptions()
	s, err := o.Rendering.settings(root)
	if err != nil {
		return ropts, err
	}
	ropts.Settings = s
	return ropts, nil
}

// useGitSync renders with gs's spec.helm, spec.ignore and post-render
// changes, as the agent does (prepare.Settings); the flags may not change
// them.
func (o *renderFlags) useGitSync(gs *gitsyncv1.GitSync) error {
	if o.given() {
		return errors.New("--helm-values, --helm-set, --release-name, --ignore and --post-render do not apply with --gitsync: it renders with the GitSync's spec.helm, spec.ignore, spec.patches, spec.images and spec.commonMetadata")
	}
	s, err := prepare.Settings(gs)
	if err != nil {
		return err
	}
	o.spec = &s
	if need, ok := prepare.HelmChart(gs); ok {
		o.chart = &need
	}
	return nil
}
