package render

import (
	"errors"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"gitsync.dev/gitsync/source/git"
)

// checkKustomization refuses a kustomization (the file rel, already read as
// data) that names anything remote or anything outside the repository, before
// kustomize acts on it. Kustomize has no switch to turn remote bases off: a
// resource it cannot find locally is cloned with git or fetched over HTTP. So
// every resource, base and component must exist inside the root, and no file
// reference may be a URL. It returns the env files of its secretGenerators
// by real path, to be checked when kustomize reads them (see checkSecretEnv).
func checkKustomization(repo *repoRoot, rel string, data []byte) (map[string]secretEnvFile, error) {
	file := filepath.ToSlash(rel)
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, &Error{Class: errKustomize, Path: file, Detail: "invalid kustomization", Err: withheldJSON(data, err)}
	}
	k.FixKustomization()
	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil {
		return nil, renderErr(errRemoteDisabled, file, "helmCharts are disabled")
	}
	c := refChecker{repo: repo, kfile: file, dir: filepath.Dir(rel), secretEnvs: map[string]secretEnvFile{}}
	for _, r := range k.Resources {
		c.dirOrFile("resources", r)
	}
	for _, r := range k.Components {
		c.dirOrFile("components", r)
	}
	for _, group := range []struct {
		field   string
		entries []string
	}{
		{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators},
	} {
		for _, e := range group.entries {
			if !isInline(e) { // an inline plugin config is not a path
				c.dirOrFile(group.field, e)
			}
		}
	}
	for _, p := range k.PatchesStrategicMerge {
		if !isInline(string(p)) {
			c.file("patchesStrategicMerge", string(p))
		}
	}
	for _, p := range append(k.Patches, k.PatchesJson6902...) {
		c.file("patches", p.Path)
	}
	for _, r := range k.Replacements {
		c.file("replacements", r.Path)
	}
	for _, f := range append(k.Crds, k.Configurations...) {
		c.file("crds/configurations", f)
	}
	c.file("openapi", k.OpenAPI["path"])
	for _, g := range k.ConfigMapGenerator {
		c.generator("configMapGenerator", g.KvPairSources)
	}
	for _, g := range k.SecretGenerator {
		c.secretGenerator(g)
	}
	return c.secretEnvs, c.err
}

// refChecker checks the entries of one kustomization, keeping the first error.
type refChecker struct {
	repo  *repoRoot
	kfile string // the kustomization, slash-separated, for messages
	dir   string // its directory relative to the root
	err   error
	// secretEnvs collects the env files of secretGenerators by real path.
	secretEnvs map[string]secretEnvFile
}

// dirOrFile checks a resource-like entry: it must exist inside the root,
// because kustomize treats anything it cannot find as a remote target.
func (c *refChecker) dirOrFile(field, entry string) {
	if c.err != nil || entry == "" {
		return
	}
	if looksRemote(entry) {
		c.fail(errRemoteDisabled, field, entry, "remote bases and resources are disabled", nil)
		return
	}
	c.resolve(field, entry)
}

// file checks a file entry (patch, generator input, crd): no URL, inside the
// root. It returns the entry's real path, "" when it failed.
func (c *refChecker) file(field, entry string) string {
	if c.err != nil || entry == "" {
		return ""
	}
	if strings.Contains(entry, "://") {
		c.fail(errRemoteDisabled, field, entry, "remote files are disabled", nil)
		return ""
	}
	return c.resolve(field, entry)
}

// generator checks the files and env files of a ConfigMap or Secret
// generator and returns the real paths of the env files.
func (c *refChecker) generator(field string, src types.KvPairSources) []string {
	for _, f := range src.FileSources {
		if i := strings.Index(f, "="); i >= 0 {
			f = f[i+1:] // "key=path"
		}
		c.file(field+" files", f)
	}
	var envs []string
	for _, f := range src.EnvSources {
		if real := c.file(field+" envs", f); real != "" {
			envs = append(envs, real)
		}
	}
	return envs
}

// secretGenerator checks a Secret generator like any generator, and its
// literals here, because kustomize quotes a malformed literal whole.
func (c *refChecker) secretGenerator(g types.SecretArgs) {
	for _, real := range c.generator("secretGenerator", g.KvPairSources) {
		c.secretEnvs[real] = secretEnvFile{Kustomization: c.kfile, Generator: g.Name}
	}
	for i, l := range g.LiteralSources {
		if problem := checkSecretLiteral(l); problem != "" && c.err == nil {
			c.err = renderErr(errKustomize, c.kfile, "secretGenerator %q literals[%d]: %s (the literal's content is withheld)",
				g.Name, i, problem)
		}
	}
}

// resolve fails unless entry, relative to the kustomization, resolves to an
// existing path inside the root, and returns that real path ("" on failure).
func (c *refChecker) resolve(field, entry string) string {
	if filepath.IsAbs(entry) {
		c.fail(ErrOutsideRoot, field, entry, "absolute paths are not allowed", nil)
		return ""
	}
	lexical, err := localPath(filepath.Join(c.dir, filepath.FromSlash(entry)))
	if err != nil {
		c.fail(ErrOutsideRoot, field, entry, "leaves the repository root", nil)
		return ""
	}
	real, err := c.repo.resolve(lexical)
	if err != nil {
		var re *Error
		if errors.As(err, &re) {
			c.fail(re.Class, field, entry, re.Detail, re.Err)
			return ""
		}
		c.fail(errNotFound, field, entry, "cannot resolve", err)
		return ""
	}
	return real
}

func (c *refChecker) fail(class error, field, entry, detail string, cause error) {
	c.err = &Error{Class: class, Path: c.kfile, Detail: field + " entry \"" + git.RedactURL(entry) + "\": " + detail, Err: cause}
}

// looksRemote reports whether a resource entry is in one of the forms
// kustomize would clone or download rather than read from disk.
func looksRemote(entry string) bool {
	if strings.Contains(entry, "://") || strings.Contains(entry, "?ref=") || strings.Contains(entry, "?version=") {
		return true
	}
	for _, p := range []string{"git@", "git::", "gh:", "github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(entry, p) {
			return true
		}
	}
	return false
}

// isInline reports whether a list entry holds YAML or JSON content rather than
// a path, which kustomize allows for patches and plugin configs.
func isInline(entry string) bool {
	return strings.Contains(entry, "\n") || strings.HasPrefix(strings.TrimSpace(entry), "{")
}
