package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"
)

// Files named by Helm beside Chart.yaml.
const (
	LockFile             = "Chart.lock"
	requirementsFile     = "requirements.yaml" // apiVersion v1 charts
	requirementsLockFile = "requirements.lock"
	chartsDir            = "charts"
)

// Need is one Chart.yaml dependency that charts/ does not hold and that
// comes from a chart repository: what the agent downloads before the
// render, as `helm dependency build` would.
type Need struct {
	// Name is the chart's name in its repository (not its alias).
	Name string
	// Repository is the dependency's repository: an http(s):// Helm
	// repository or an oci:// registry path.
	Repository string
	// Version is the locked version when Locked, else Chart.yaml's semver
	// constraint, resolved against the repository (highest match), as
	// `helm dependency update` does.
	Version string
	// Locked says Version came from Chart.lock.
	Locked bool
}

// Needs reads the chart at dir (its Chart.yaml, Chart.lock and the names
// under charts/) and returns the dependencies to download: those charts/
// does not hold whose repository is a chart repository. A dependency held
// in charts/ (a directory whose Chart.yaml names it, or a
// <name>-<version>.tgz as `helm dependency build` writes) is used as it
// is, and nothing is fetched for it; a file:// dependency is read from the
// repository by the render. When something is to be downloaded and the
// chart has a lock, the lock must match Chart.yaml (Helm's digest over
// both), else Needs refuses it naming the lock file; without a lock each
// dependency's constraint is returned for resolution.
//
// Needs reads only small files through files and unpacks nothing, so the
// agent may call it outside a render child.
func Needs(ctx context.Context, files Files, dir string) ([]Need, error) {
	meta, lock, lockPath, err := readDependencies(ctx, files, dir)
	if err != nil || len(meta.Dependencies) == 0 {
		return nil, err
	}
	held, err := vendored(ctx, files, dir)
	if err != nil {
		return nil, err
	}
	var out []Need
	for i, d := range meta.Dependencies {
		if d == nil || held.has(d) || !downloaded(d.Repository) {
			continue
		}
		n := Need{Name: d.Name, Repository: strings.TrimSuffix(d.Repository, "/"), Version: d.Version}
		if lock != nil {
			l := lock.Dependencies[i]
			n.Version, n.Locked = l.Version, true
		}
		out = append(out, n)
	}
	if len(out) > 0 && lock != nil {
		if err := checkLock(meta, lock); err != nil {
			return nil, &Error{Path: lockPath, Detail: err.Error()}
		}
	}
	return out, nil
}

// RepositoryAlias returns NAME when repo names a repository by alias:
// "@NAME" or "alias:NAME", as Helm reads a repository added with `helm
// repo add NAME URL`.
func RepositoryAlias(repo string) (string, bool) {
	for _, p := range []string{"@", "alias:"} {
		if name, ok := strings.CutPrefix(repo, p); ok && name != "" {
			return name, true
		}
	}
	return "", false
}

// downloaded reports whether repo names a repository a dependency is
// downloaded from: a chart repository's URL or an alias of one.
func downloaded(repo string) bool {
	_, alias := RepositoryAlias(repo)
	return alias || IsChartRepository(repo)
}

// IsChartRepository reports whether repo names a chart repository the
// agent downloads from: http(s):// or oci://.
func IsChartRepository(repo string) bool {
	for _, p := range []string{"https://", "http://", "oci://"} {
		if strings.HasPrefix(repo, p) {
			return true
		}
	}
	return false
}

// readDependencies parses dir's Chart.yaml (requirements.yaml for an
// apiVersion v1 chart) and its lock, if any. A lock whose entries do not
// pair with Chart.yaml's is refused here.
func readDependencies(ctx context.Context, files Files, dir string) (*chart.Metadata, *chart.Lock, string, error) {
	chartPath := path.Join(dir, ChartFile)
	data, err := files.ReadFile(ctx, chartPath)
	if err != nil {
		return nil, nil, "", err
	}
	var meta chart.Metadata
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, nil, "", &Error{Path: chartPath, Detail: "not a chart's metadata", Err: err}
	}
	reqName, lockName := ChartFile, LockFile
	if meta.APIVersion == chart.APIVersionV1 {
		reqName, lockName = requirementsFile, requirementsLockFile
		data, err := readIfExists(ctx, files, path.Join(dir, requirementsFile))
		if err != nil {
			return nil, nil, "", err
		}
		var req struct {
			Dependencies []*chart.Dependency `json:"dependencies"`
		}
		if err := yaml.Unmarshal(data, &req); err != nil {
			return nil, nil, "", &Error{Path: path.Join(dir, requirementsFile), Detail: "invalid dependencies", Err: err}
		}
		meta.Dependencies = req.Dependencies
	}
	lockPath := path.Join(dir, lockName)
	data, err = readIfExists(ctx, files, lockPath)
	if err != nil || data == nil {
		return &meta, nil, lockPath, err
	}
	var lock chart.Lock
	if err := yaml.Unmarshal(data, &lock); err != nil {
		return nil, nil, "", &Error{Path: lockPath, Detail: "not a chart lock", Err: err}
	}
	if len(lock.Dependencies) != len(meta.Dependencies) {
		return nil, nil, "", &Error{Path: lockPath, Detail: fmt.Sprintf("locks %d dependencies, %s names %d; run `helm dependency update` and commit it", len(lock.Dependencies), reqName, len(meta.Dependencies))}
	}
	for i, l := range lock.Dependencies {
		if d := meta.Dependencies[i]; l == nil || d == nil || l.Name != d.Name {
			return nil, nil, "", &Error{Path: lockPath, Detail: fmt.Sprintf("entry %d does not lock %s's dependency of that place; run `helm dependency update` and commit it", i+1, reqName)}
		}
	}
	return &meta, &lock, lockPath, nil
}

// checkLock refuses a lock made for other dependencies than meta's: Helm
// stores in the lock the SHA-256 of the JSON array [Chart.yaml's
// dependencies, the lock's dependencies] (Helm 2 locks of apiVersion v1
// charts: of {"dependencies": Chart.yaml's}), and `helm dependency build`
// refuses a lock whose digest differs.
func checkLock(meta *chart.Metadata, lock *chart.Lock) error {
	sum, err := lockDigest(meta.Dependencies, lock.Dependencies)
	if err == nil && sum == lock.Digest {
		return nil
	}
	if meta.APIVersion == chart.APIVersionV1 {
		if v2, err := lockDigestV2(meta.Dependencies); err == nil && v2 == lock.Digest {
			return nil
		}
	}
	return fmt.Errorf("the lock does not match the chart's dependencies (its digest is %s, the dependencies' is %s); run `helm dependency update` and commit it", lock.Digest, sum)
}

// lockDigest is the digest Helm writes into a lock for the dependencies
// req resolved to locked.
func lockDigest(req, locked []*chart.Dependency) (string, error) {
	return digestJSON([2][]*chart.Dependency{req, locked})
}

// lockDigestV2 is the digest Helm 2 wrote into requirements.lock.
func lockDigestV2(req []*chart.Dependency) (string, error) {
	return digestJSON(map[string][]*chart.Dependency{"dependencies": req})
}

func digestJSON(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// heldCharts are the charts found under a chart's charts/ directory.
type heldCharts struct {
	dirs     map[string]bool // names in charts/*/Chart.yaml
	archives map[string]bool // "<name>-<version>" of charts/*.tgz
}

// has reports whether d is held: a directory of its name, or an archive of
// its name at a version its constraint allows.
func (h heldCharts) has(d *chart.Dependency) bool {
	if h.dirs[d.Name] {
		return true
	}
	c, err := semver.NewConstraint(d.Version)
	for a := range h.archives {
		v, ok := strings.CutPrefix(a, d.Name+"-")
		if !ok {
			continue
		}
		sv, verr := semver.NewVersion(v)
		if verr != nil {
			continue
		}
		if d.Version == "" || err != nil || c.Check(sv) {
			return true
		}
	}
	return false
}

// vendored lists dir's charts/ without unpacking anything.
func vendored(ctx context.Context, files Files, dir string) (heldCharts, error) {
	h := heldCharts{dirs: map[string]bool{}, archives: map[string]bool{}}
	cd := path.Join(dir, chartsDir)
	if _, err := files.Stat(cd); isNotExist(err) {
		return h, nil
	}
	entries, err := files.ReadDir(cd)
	if err != nil {
		return h, err
	}
	for _, e := range entries {
		name := path.Join(cd, e.Name())
		fi, err := files.Stat(name)
		if err != nil {
			return h, err
		}
		switch {
		case fi.IsDir():
			data, err := readIfExists(ctx, files, path.Join(name, ChartFile))
			if err != nil {
				return h, err
			}
			var m struct {
				Name string `json:"name"`
			}
			if data != nil && yaml.Unmarshal(data, &m) == nil && m.Name != "" {
				h.dirs[m.Name] = true
			}
		case strings.HasSuffix(e.Name(), ".tgz"):
			h.archives[strings.TrimSuffix(e.Name(), ".tgz")] = true
		}
	}
	return h, nil
}

// isFileDependency reports whether d names a chart directory of the
// repository (file://).
func isFileDependency(d *chart.Dependency) bool {
	return strings.HasPrefix(d.Repository, "file://")
}

// fileDependencyDir is the repository path of a file:// dependency of the
// chart at dir; a path that leaves the repository, or an absolute one, is
// refused (the render reads nothing outside the repository).
func fileDependencyDir(dir string, d *chart.Dependency) (string, error) {
	p := strings.TrimPrefix(d.Repository, "file://")
	if strings.HasPrefix(p, "/") {
		return "", &Error{Path: path.Join(dir, ChartFile), Detail: fmt.Sprintf("dependency %s: %s is an absolute path; a file:// dependency must be a path inside the repository, relative to the chart", d.Name, d.Repository)}
	}
	full := path.Clean(path.Join(dir, p))
	if full == ".." || strings.HasPrefix(full, "../") {
		return "", &Error{Path: path.Join(dir, ChartFile), Detail: fmt.Sprintf("dependency %s: %s leaves the repository", d.Name, d.Repository)}
	}
	return full, nil
}

// isGzip reports whether data starts like a gzip stream.
func isGzip(data []byte) bool { return bytes.HasPrefix(data, []byte{0x1f, 0x8b}) }
