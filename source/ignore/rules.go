package ignore

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// FileName is the name of an ignore file in the repository.
const FileName = ".gitsyncignore"

// DefaultPatterns are ignored unless a later rule re-includes them with "!".
// The list is short on purpose: a name lands here only if a file of that
// name is YAML or JSON and is, in practice, never a Kubernetes object. Names
// users also give to manifests (values.yaml, config.yaml, app.yaml) are not
// on it; a Chart.yaml is a chart, not noise (see the render package).
var DefaultPatterns = []string{
	// Dot files and directories: .git, .github, .gitlab-ci.yml,
	// .pre-commit-config.yaml, .golangci.yml, .sops.yaml, editor state.
	".*",
	// CI and build services that read a file at the repository root.
	"azure-pipelines.yml",
	"azure-pipelines.yaml",
	"bitbucket-pipelines.yml",
	"cloudbuild.yaml",
	"cloudbuild.yml",
	"codecov.yml",
	"codecov.yaml",
	"renovate.json",
	"skaffold.yaml",
	"catalog-info.yaml",
	"docker-compose.yml",
	"docker-compose.yaml",
	"compose.yml",
	"compose.yaml",
	"mkdocs.yml",
	"mkdocs.yaml",
	// JavaScript tooling that lives beside docs sites in ops repositories.
	"package.json",
	"package-lock.json",
	"tsconfig.json",
}

// Options says which layers a Rules starts with.
type Options struct {
	// NoDefaults drops DefaultPatterns, for a caller that wants only the
	// repository's and its own rules.
	NoDefaults bool
	// Extra are rules in .gitignore syntax, one per line, matched from the
	// repository root and evaluated after every file's: spec.ignore, or the
	// CLI's --ignore.
	Extra string
}

// Rules answers whether a path is ignored. A Rules is immutable: With
// returns a new one, so a recursive walk can hand each directory its own.
type Rules struct {
	// base holds the defaults, then the files' patterns in walk order.
	base []gitignore.Pattern
	// extra is evaluated after base whatever With adds later.
	extra []gitignore.Pattern
}

// New returns the rules of opts, before any .gitsyncignore file is read.
func New(opts Options) *Rules {
	r := &Rules{extra: Parse(opts.Extra, "")}
	if !opts.NoDefaults {
		for _, p := range DefaultPatterns {
			r.base = append(r.base, gitignore.ParsePattern(p, nil))
		}
	}
	return r
}

// With returns r plus the patterns of one .gitsyncignore file found in dir
// ("/"-separated, relative to the repository root, "" or "." for the root),
// scoped to dir. r is unchanged.
func (r *Rules) With(dir string, data []byte) *Rules {
	ps := Parse(string(data), dir)
	if len(ps) == 0 {
		return r
	}
	return &Rules{base: append(slices.Clip(r.base), ps...), extra: r.extra}
}

// Ignored reports whether rel ("/"-separated, relative to the repository
// root) is ignored. isDir says whether it names a directory, for patterns
// ending in "/". A walk that skips ignored directories never asks about
// their contents, so, as in Git, a file cannot be re-included from inside an
// ignored directory.
func (r *Rules) Ignored(rel string, isDir bool) bool {
	parts := split(rel)
	if len(parts) == 0 {
		return false
	}
	for _, layer := range [][]gitignore.Pattern{r.extra, r.base} {
		for i := len(layer) - 1; i >= 0; i-- {
			switch layer[i].Match(parts, isDir) {
			case gitignore.Exclude:
				return true
			case gitignore.Include:
				return false
			}
		}
	}
	return false
}

// Parse reads rules in .gitignore syntax, scoped to dir: blank lines and
// lines starting with "#" are skipped, a trailing "\r" is dropped.
func Parse(text, dir string) []gitignore.Pattern {
	domain := split(dir)
	var ps []gitignore.Pattern
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, `\#`) {
			line = line[1:] // a literal leading "#"
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// Digest names the rules of opts for cache keys: equal options give equal
// digests. The repository's .gitsyncignore files are part of its tree, so
// the tree's hash already covers them.
func Digest(opts Options) string {
	h := sha256.New()
	if opts.NoDefaults {
		h.Write([]byte("nodefaults\n"))
	}
	h.Write([]byte(opts.Extra))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// split turns a "/"-separated relative path into its components.
func split(rel string) []string {
	rel = path.Clean("/" + rel)
	if rel == "/" {
		return nil
	}
	return strings.Split(rel[1:], "/")
}
