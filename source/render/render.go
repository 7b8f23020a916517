package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/source/budget"
)

// Options bounds what one Render may read. The caps exist because the
// repository is input from whoever can push to it: a sparse 2 GiB file, a
// million tiny files or a YAML alias bomb must fail fast, not exhaust the agent.
type Options struct {
	// MaxFileBytes refuses any single file larger than this, judged from its
	// stat before a byte is read.
	MaxFileBytes int64
	// MaxTotalBytes caps the sum of all files read by one render.
	MaxTotalBytes int64
	// MaxFiles caps how many files one render reads (manifests, kustomizations,
	// patches, generator inputs).
	MaxFiles int
	// MaxYAMLNodes caps the number of YAML nodes one document may expand to
	// through anchors and aliases, so a few hundred bytes cannot decode into
	// gigabytes.
	MaxYAMLNodes int
	// MaxObjects caps the objects one render yields, counted while documents
	// are decoded, so a repository of millions of tiny documents fails at
	// the first one over the cap with bounded memory (see render_limit.go).
	MaxObjects int
	// Settings are the source's own render choices (spec.helm, spec.ignore).
	Settings Settings
	// Budget is charged with every byte the render's stages produce (decoded
	// documents, kustomize and Helm output) as they produce it; nil means a
	// fresh one with budget.DefaultLimits. Memory, CPU and wall time are not
	// enforced here: Go cannot stop a running template, so package sandbox
	// runs renders that template in a child process it can stop.
	Budget *budget.Budget `json:"-"`
	// PlainOnly refuses, with ErrNeedsEngine and before running either, a
	// path that needs kustomize or Helm (at its top or below it), so a caller
	// can render plain YAML in its own process and the rest where it can be
	// stopped.
	PlainOnly bool
	// Origins records where each object came from (Rendered.Origins), for
	// gitsync trace; the agent does not ask, so its cache holds none.
	Origins bool

	// objects is the count of this render, set by Render.
	objects *objectBudget
}

// DefaultOptions returns caps that fit any sane repository path:
// 4 MiB per file, 64 MiB in total, 10,000 files, 250,000 nodes per document,
// 10,000 objects.
func DefaultOptions() Options {
	return Options{
		MaxFileBytes:  4 << 20,
		MaxTotalBytes: 64 << 20,
		MaxFiles:      10_000,
		MaxYAMLNodes:  250_000,
		MaxObjects:    DefaultMaxObjects,
	}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = d.MaxFileBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = d.MaxTotalBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = d.MaxFiles
	}
	if o.MaxYAMLNodes <= 0 {
		o.MaxYAMLNodes = d.MaxYAMLNodes
	}
	if o.MaxObjects <= 0 {
		o.MaxObjects = d.MaxObjects
	}
	return o
}

// ErrNeedsEngine is returned, unwrapped, by a Render with
// Options.PlainOnly of a path that needs kustomize or Helm, or of any path
// with post-render changes (Settings.PostRender).
var ErrNeedsEngine = errors.New("path needs kustomize or Helm")

// kustomizationFileNames are the names kustomize recognises, in its order.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Render turns path, relative to the checkout directory root, into validated
// Kubernetes objects: with kustomize when path holds a kustomization file,
// otherwise by reading every .yaml, .yml and .json file below it. Nothing is
// read from outside root, nothing from the network. Objects are sorted by
// group, kind, namespace and name; Digest is a sha256 over their canonical
// JSON, so the same objects give the same digest whatever the file layout.
//
// On error the result is nil and the error is an *Error (callers branch on
// ErrOutsideRoot and ErrTooLarge with errors.Is; the other classes show in
// its message), or ctx's error if it was cancelled. More than MaxObjects objects is
// ErrTooLarge with an *ObjectLimitError cause.
func Render(ctx context.Context, root, path string, opts Options) (*Rendered, error) {
	opts = opts.withDefaults()
	rel, err := localPath(path)
	if err != nil {
		return nil, err
	}
	repo, err := openRepoRoot(root, opts)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	return renderRepo(ctx, repo, rel, opts)
}

// RenderFS is Render of path in fsys, a repository tree held in memory that
// has no symlinks (one Git tree, read by the fetcher instead of written
// out): plain YAML only, as with Options.PlainOnly, so a path that needs
// kustomize or Helm is ErrNeedsEngine and is rendered from a checkout. The
// result, errors and caps are Render's of a checkout of the same files.
func RenderFS(ctx context.Context, fsys fs.FS, path string, opts Options) (*Rendered, error) {
	opts = opts.withDefaults()
	opts.PlainOnly = true
	rel, err := localPath(path)
	if err != nil {
		return nil, err
	}
	return renderRepo(ctx, fsRepoRoot(fsys, opts), rel, opts)
}

// renderRepo is Render of rel (local) in repo.
func renderRepo(ctx context.Context, repo *repoRoot, rel string, opts Options) (*Rendered, error) {
	opts.objects = newObjectBudget(opts.MaxObjects)
	if opts.Budget == nil {
		opts.Budget = budget.New(budget.DefaultLimits())
	}
	rel, err := repo.resolve(rel)
	if err != nil {
		return nil, err
	}

	var docs []decodedObject
	switch {
	case opts.PlainOnly && (opts.Settings.DownloadedChart() || isKustomizeDir(repo, rel) || isChartDir(repo, rel) || !opts.Settings.PostRender.IsZero()):
		return nil, ErrNeedsEngine // post-render changes are tenant input run where they can be stopped
	case opts.Settings.DownloadedChart():
		docs, err = renderHelm(ctx, repo, rel, opts) // the chart of spec.helm.chart over rel's values
	case isKustomizeDir(repo, rel):
		docs, err = renderKustomize(ctx, repo, rel, opts)
	case isChartDir(repo, rel):
		docs, err = renderHelm(ctx, repo, rel, opts) // helm.go
	default:
		docs, err = renderPlain(ctx, repo, rel, opts)
	}
	var origins map[object.ID]string
	if err == nil && opts.Origins {
		origins = originsOf(docs)
	}
	if err == nil {
		docs, err = postRender(rel, docs, opts) // postrender.go
	}
	if err != nil {
		return nil, err
	}
	out, err := finish(docs)
	if out != nil {
		out.SOPS = repo.sops.files()
		if opts.Origins {
			out.Origins = make([]string, len(out.Objects))
			for i, o := range out.Objects {
				if out.Origins[i] = origins[object.IDOf(o)]; out.Origins[i] == "" {
					out.Origins[i] = filepath.ToSlash(rel) + " (made or renamed by post-render changes)"
				}
			}
		}
	}
	return out, err
}

// originsOf says where each decoded object is defined, by its identity as
// decoded (before post-render changes, which may rename it).
func originsOf(docs []decodedObject) map[object.ID]string {
	out := make(map[object.ID]string, len(docs))
	for _, d := range docs {
		if m, ok := d.Object.(map[string]any); ok {
			id := object.IDOf(&unstructured.Unstructured{Object: m})
			if _, seen := out[id]; !seen {
				out[id] = itemLocation(d)
			}
		}
	}
	return out
}

// isKustomizeDir reports whether rel is a directory holding a kustomization file.
func isKustomizeDir(repo *repoRoot, rel string) bool {
	for _, name := range kustomizationFileNames {
		if fi, err := repo.files.Lstat(filepath.Join(rel, name)); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// finish validates, de-duplicates, sorts and digests decoded objects.
func finish(docs []decodedObject) (*Rendered, error) {
	objs, err := validateObjects(docs)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(objs, compareObjects)
	digest, err := digestObjects(objs)
	if err != nil {
		return nil, err
	}
	return &Rendered{Objects: objs, Digest: digest}, nil
}

// compareObjects orders by group, kind, namespace, name (and version, which
// validation guarantees cannot differ for equal IDs).
func compareObjects(a, b *unstructured.Unstructured) int {
	ia, ib := object.IDOf(a), object.IDOf(b)
	for _, c := range [][2]string{{ia.Group, ib.Group}, {ia.Kind, ib.Kind}, {ia.Namespace, ib.Namespace}, {ia.Name, ib.Name}} {
		if r := strings.Compare(c[0], c[1]); r != 0 {
			return r
		}
	}
	return strings.Compare(a.GetAPIVersion(), b.GetAPIVersion())
}

// digestObjects hashes the canonical JSON of each object (encoding/json sorts
// map keys), one per line.
func digestObjects(objs []*unstructured.Unstructured) (string, error) {
	h := sha256.New()
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			return "", fmt.Errorf("%s digest failed: %w", object.IDOf(o), err)
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
