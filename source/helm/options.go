package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"

	"gitsync.dev/gitsync/source/budget"
)

// Files reads a repository for a render, confined to its root. Paths are
// "/"-separated and relative to the repository root.
type Files interface {
	// ReadDir lists dir's entries sorted by name.
	ReadDir(dir string) ([]fs.DirEntry, error)
	// Stat follows symlinks that stay inside the root and fails on others;
	// a missing file's error satisfies errors.Is(err, fs.ErrNotExist).
	Stat(name string) (fs.FileInfo, error)
	// ReadFile reads a regular file, charging it against the render's caps.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// Charge counts size bytes of name, a file that is not read through
	// ReadFile (a member of a chart archive), against the render's caps.
	Charge(name string, size int64) error
	// Archive reads a downloaded chart archive from a.File, charged against
	// the render's caps as a file of the repository named name would be.
	Archive(ctx context.Context, name string, a Archive) ([]byte, error)
}

// DefaultKubeVersion is the Kubernetes version templates see in
// .Capabilities.KubeVersion when no cluster is known (a CLI render without
// one): the version of the client libraries gitsync is built with.
const DefaultKubeVersion = "v1.37.0"

// Capabilities are what templates see of the cluster they render for, as
// `helm install` shows them: .Capabilities.KubeVersion and
// .Capabilities.APIVersions. They are plain data, so they cross into a
// render child with the rest of Options.
type Capabilities struct {
	// KubeVersion is .Capabilities.KubeVersion (the cluster's /version
	// gitVersion) and what Chart.yaml's kubeVersion constraint is checked
	// against; DefaultKubeVersion if empty.
	KubeVersion string
	// APIVersions is .Capabilities.APIVersions: every group/version the
	// cluster serves and every group/version/Kind ("v1", "apps/v1",
	// "apps/v1/Deployment"), sorted. Nil means Helm's own list (the
	// group/versions client-go knows), as `helm template` uses.
	APIVersions []string `json:",omitempty"`
}

// Options says how to render one chart.
type Options struct {
	// ReleaseName is .Release.Name; charts name objects after it. Empty
	// means the chart's name (the agent passes the GitSync's name).
	ReleaseName string
	// Namespace is .Release.Namespace; empty means "default", as for Helm.
	Namespace string
	// ValuesFiles are values files relative to the repository root, merged
	// in order over the chart's values.yaml; they are read through Files,
	// so a file outside the repository is refused like any path.
	ValuesFiles []string
	// Values are merged last, over ValuesFiles (spec.helm.values).
	Values map[string]any
	// IncludeCRDs adds the files under the chart's (and subcharts') crds/.
	IncludeCRDs bool
	// Capabilities are the target cluster's; the zero value renders as for
	// no cluster (DefaultKubeVersion, Helm's API list).
	Capabilities
	// Dependencies are archives the caller downloaded for Chart.yaml
	// dependencies that charts/ does not hold (see Needs); each is added as
	// charts/<name>-<version>.tgz, as `helm dependency build` would. They
	// are in Digest by name, version and digest, so a render is keyed by
	// what the dependencies resolved to.
	Dependencies []Archive `json:",omitempty"`
	// Chart, when set, is the chart to render, downloaded by the caller
	// (spec.helm.chart), in place of a chart directory at the render's
	// path: the path then holds only what the values files need. It is in
	// Digest by name, version and digest, as Dependencies are.
	Chart *Archive `json:",omitempty"`
	// Budget is charged with each rendered document as the output is split,
	// so a template cannot turn a small repository into an unbounded render;
	// nil charges nothing. It is not a setting: Digest leaves it out.
	Budget *budget.Budget `json:"-"`
}

// DefaultOptions renders with CRDs and the default Kubernetes version.
func DefaultOptions() Options {
	return Options{IncludeCRDs: true, Capabilities: Capabilities{KubeVersion: DefaultKubeVersion}}
}

// Digest names the options for cache keys: equal options give equal digests
// (values are hashed in canonical JSON, so key order does not matter). The
// values files' contents are not included: they are in the repository tree.
// The capabilities are, so a chart renders again when its cluster starts or
// stops serving an API.
func (o Options) Digest() string {
	b, _ := json.Marshal(struct {
		R, N, K string
		F       []string
		V       map[string]any
		C       bool
		A       []string
		D       []string `json:",omitempty"`
		H       string   `json:",omitempty"`
	}{o.ReleaseName, o.Namespace, o.KubeVersion, o.ValuesFiles, o.Values, o.IncludeCRDs, o.APIVersions, o.dependencyKeys(), o.chartKey()})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// Manifest is one rendered YAML document, or one file of the chart's crds/.
type Manifest struct {
	// Path names where it came from: the template's (or CRD file's) path in
	// the repository when the chart is a directory; inside a packaged
	// subchart, the path it would have if unpacked.
	Path string
	// Data is what Helm hands to the cluster, as `helm template` prints it:
	// for a template, one document, without separators, trimmed and ended
	// by one newline; for a CRD file, the whole file as it is (it may hold
	// several "---"-separated documents), ended by a newline.
	Data []byte
}

// chartKey names Chart for Digest; "" without one.
func (o Options) chartKey() string {
	if o.Chart == nil {
		return ""
	}
	return o.Chart.Key()
}

// Key names the archive by what renders: name, version and digest, not
// where it lies on disk. It is how a revision names the chart it renders
// with (git.Revision.Chart).
func (a Archive) Key() string { return a.Name + "@" + a.Version + "@" + a.Digest }

// dependencyKeys name the dependencies for Digest; where an archive lies
// on disk is not part of what renders.
func (o Options) dependencyKeys() []string {
	var out []string
	for _, a := range o.Dependencies {
		out = append(out, a.Key())
	}
	return out
}
