package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/budget"
)

// Error is a chart that cannot be rendered. Errors from Files pass through
// unchanged (they carry the caller's classes); this type is for what Helm
// refuses.
type Error struct {
	// Path is the chart directory or the file at fault, repository-relative.
	Path string
	// Detail says what is wrong in words a chart author can act on.
	Detail string
	// Err is Helm's own error, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s: %s", e.Path, e.Detail)
	}
	return fmt.Sprintf("%s: %s: %v", e.Path, e.Detail, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsChart reports whether dir holds a Chart.yaml file.
func IsChart(files Files, dir string) bool {
	fi, err := files.Stat(path.Join(dir, ChartFile))
	return err == nil && fi.Mode().IsRegular()
}

// Render renders the chart at dir (repository-relative, "/"-separated) like
// `helm template`, returning its manifests in a fixed order: CRDs first (if
// asked), then templates by path, documents in file order.
func Render(ctx context.Context, files Files, dir string, opts Options) ([]Manifest, error) {
	opts = opts.withDefaults()
	vals, err := readValues(ctx, files, opts)
	if err != nil {
		return nil, err
	}
	var c *chart.Chart
	if opts.Chart != nil {
		c, err = loadDownloaded(ctx, files, dir, *opts.Chart)
	} else {
		c, err = load(ctx, files, dir, opts.Dependencies)
	}
	if err != nil {
		return nil, err
	}
	if opts.ReleaseName == "" {
		opts.ReleaseName = c.Name()
	}
	if err := chartutil.ValidateReleaseName(opts.ReleaseName); err != nil {
		return nil, &Error{Path: dir, Detail: fmt.Sprintf("release name %q is invalid", opts.ReleaseName), Err: err}
	}
	caps, err := capabilities(opts.Capabilities)
	if err != nil {
		return nil, &Error{Path: dir, Detail: "kube version", Err: err}
	}
	if kv := c.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, &Error{Path: path.Join(dir, ChartFile), Detail: fmt.Sprintf("chart requires kubeVersion %s, templates see %s", kv, caps.KubeVersion.String())}
	}
	if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
		return nil, &Error{Path: dir, Detail: "dependencies", Err: err}
	}
	release := chartutil.ReleaseOptions{Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true}
	// Helm's own schema validation is replaced by validateValues: Helm's loads
	// $ref from file:// and http(s):// URLs, which a repository must not make
	// the agent read.
	top, err := chartutil.ToRenderValuesWithSchemaValidation(c, vals, release, caps, true)
	if err != nil {
		return nil, &Error{Path: dir, Detail: "values", Err: err}
	}
	if coalesced, ok := asMap(top["Values"]); ok {
		if err := validateValues(c, coalesced); err != nil {
			return nil, &Error{Path: dir, Detail: "values", Err: err}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The zero Engine has no cluster client (lookup returns nothing) and no DNS.
	rendered, err := engine.Engine{}.Render(c, top)
	if err != nil {
		return nil, &Error{Path: dir, Detail: "template failed", Err: err}
	}
	out := &output{dir: dir, budget: opts.Budget}
	if opts.IncludeCRDs {
		for _, crd := range c.CRDObjects() {
			if err := out.addCRDFile(crd.Filename, crd.File.Data); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		if isNotObject(name) {
			continue
		}
		if err := out.addTemplate(name, rendered[name]); err != nil {
			return nil, err
		}
	}
	return out.manifests, nil
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.KubeVersion == "" {
		o.KubeVersion = d.KubeVersion
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	return o
}

// capabilities are Helm's defaults with c's Kubernetes version and, when
// given, its API list.
func capabilities(c Capabilities) (*chartutil.Capabilities, error) {
	kv, err := chartutil.ParseKubeVersion(c.KubeVersion)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	// The version as the cluster says it ("v1.33.2+k3s1"), as `helm
	// install` shows it; the parse only checked it and gave Major and Minor.
	caps.KubeVersion.Version = c.KubeVersion
	if c.APIVersions != nil {
		caps.APIVersions = chartutil.VersionSet(slices.Clone(c.APIVersions))
	}
	return caps, nil
}

// isNotObject reports whether a rendered template is never a manifest:
// NOTES.txt, and partials (names starting with "_").
func isNotObject(name string) bool {
	base := path.Base(name)
	return base == "NOTES.txt" || strings.HasPrefix(base, "_")
}

// output collects manifests, charging each to the render's budget.
type output struct {
	dir       string
	budget    *budget.Budget
	manifests []Manifest
}

// addTemplate splits one rendered template (named "<chart>/..." as Helm
// names it) into documents the way Helm does, test hooks dropped. Helm trims
// each document and writes it followed by one newline (`helm template`, and
// the release manifest `helm install` applies), so a block scalar that ends
// the file keeps its final line break: each document gets that newline too.
func (o *output) addTemplate(name, content string) error {
	if strings.TrimSpace(content) == "" {
		return nil
	}
	p := o.repoPath(name)
	docs := releaseutil.SplitManifests(content)
	for _, k := range slices.SortedFunc(maps.Keys(docs), compareSplitKeys) {
		doc := docs[k]
		if isTestHook(doc) {
			continue
		}
		if err := o.add(p, []byte(doc+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// addCRDFile adds a file of the chart's crds/ directory whole: Helm applies
// it as it is (it is not a template, so neither split nor trimmed, and
// never a hook); `helm template --include-crds` prints it followed by a
// newline, which is added when missing.
func (o *output) addCRDFile(name string, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(slices.Clip(data), '\n')
	}
	return o.add(o.repoPath(name), data)
}

// add appends one manifest, charged to the render's budget.
func (o *output) add(p string, data []byte) error {
	if err := o.budget.Charge(budget.StageHelm, int64(len(data))); err != nil {
		return &Error{Path: p, Detail: "rendered manifests too large", Err: err}
	}
	o.manifests = append(o.manifests, Manifest{Path: p, Data: data})
	return nil
}

// repoPath maps Helm's "<chart name>/templates/x.yaml" to the file's path in
// the repository.
func (o *output) repoPath(name string) string {
	_, rest, ok := strings.Cut(name, "/")
	if !ok {
		rest = name
	}
	return path.Join(o.dir, rest)
}

// compareSplitKeys orders SplitManifests' "manifest-N" keys by N.
func compareSplitKeys(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// isTestHook reports whether a document is a Helm test hook: every event in
// its helm.sh/hook annotation is "test" (or Helm 2's "test-success").
func isTestHook(doc string) bool {
	var head struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal([]byte(doc), &head) != nil {
		return false // not ours to judge: the decoder reports it with its position
	}
	hook, ok := head.Metadata.Annotations["helm.sh/hook"]
	if !ok {
		return false
	}
	for ev := range strings.SplitSeq(hook, ",") {
		if ev = strings.TrimSpace(ev); ev != "test" && ev != "test-success" {
			return false
		}
	}
	return true
}

// readValues reads and merges the values files, then the inline values.
func readValues(ctx context.Context, files Files, opts Options) (map[string]any, error) {
	vals := map[string]any{}
	for _, f := range opts.ValuesFiles {
		clean := path.Clean(f)
		if !fs.ValidPath(clean) || clean == "." {
			return nil, &Error{Path: f, Detail: "values file must be a path inside the repository"}
		}
		data, err := files.ReadFile(ctx, clean)
		if err != nil {
			return nil, err
		}
		v, err := chartutil.ReadValues(data)
		if err != nil {
			return nil, &Error{Path: clean, Detail: "values file is not a YAML map", Err: err}
		}
		vals = mergeValues(vals, v)
	}
	if opts.Values != nil {
		vals = mergeValues(vals, chartutil.Values(opts.Values))
	}
	return vals, nil
}

// mergeValues merges src into dst, maps recursively, src winning: the way
// `helm template -f a.yaml -f b.yaml` layers files.
func mergeValues(dst, src map[string]any) map[string]any {
	out := make(map[string]any, len(dst)+len(src))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if sm, ok := asMap(v); ok {
			if dm, ok := asMap(out[k]); ok {
				out[k] = mergeValues(dm, sm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case chartutil.Values:
		return m, true
	}
	return nil, false
}

// isNotExist reports whether err says a file does not exist.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
