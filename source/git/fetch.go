package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/egress"
)

// Source is one path of one repository at a ref: what a GitSync follows.
type Source struct {
	// URL is https://, http://, ssh://, scp-style (git@host:org/repo), file://
	// or a local path.
	URL string
	// Ref selects the branch, tag, semver range or commit.
	Ref Ref
	// Path is the directory inside the repository to render, "/"-separated;
	// empty means the root.
	Path string
	// Auth is optional; nil means anonymous.
	Auth *Auth
	// Egress, when set, is the only way this Source's Git traffic leaves
	// the process: http(s) and ssh connections dial through it, so a URL or
	// redirect to an address its policy denies fails with an
	// ErrInvalidSource, and schemes it cannot guard (git://) are refused.
	// The agent sets it for tenant-named URLs; nil (the CLI) dials freely.
	Egress *egress.Dialer
}

// Validate checks the Source without touching the network.
func (s Source) Validate() error {
	if strings.TrimSpace(s.URL) == "" {
		return fmt.Errorf("source url is empty: %w", ErrInvalidSource)
	}
	if _, err := transport.NewEndpoint(s.URL); err != nil {
		return fmt.Errorf("source url %s invalid: %w", RedactURL(s.URL), ErrInvalidSource)
	}
	if p := cleanRepoPath(s.Path); p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("source path %q leaves the repository: %w", s.Path, ErrInvalidSource)
	}
	return s.Ref.Validate()
}

// cleanRepoPath normalises a repository path: "", "/", "./" all become ".".
func cleanRepoPath(p string) string {
	return path.Clean("./" + strings.TrimPrefix(filepath.ToSlash(p), "/"))
}

// CleanPath is Path normalised, "/"-separated and relative: "", "/" and "./"
// all become ".".
func (s Source) CleanPath() string { return cleanRepoPath(s.Path) }

// Key identifies the Source for a map: its URL without credentials, ref and
// clean path, so two spellings of one path are one key.
func (s Source) Key() string {
	return displayURL(s.URL) + "\x00" + s.Ref.String() + "\x00" + s.CleanPath()
}

// Options configures a Fetcher.
type Options struct {
	// Dir holds one bare object store per repository (reused across fetches so
	// only new objects cross the network) and the work dirs of checkouts.
	// Required.
	Dir string
	// Depth is the history depth of each fetch; 1 is a shallow fetch of the
	// wanted commit only, which is all rendering needs.
	Depth int
	// HistoryDepth is how far back Fetch may deepen to decide whether the
	// previous commit of a branch is an ancestor of the new one (Rewritten).
	// It is only used when a ref moved by more than one commit; 0 disables the
	// check, so a multi-commit move is never reported as rewritten.
	HistoryDepth int
	// Timeout bounds each remote operation (list or fetch), so a stalled server
	// cannot hold a worker forever.
	Timeout time.Duration
	// MaxCheckoutBytes caps the bytes Checkout writes, against repositories
	// that would fill the disk. 0 means no cap.
	MaxCheckoutBytes int64
	// MaxOpenRepos bounds the object stores kept open between fetches; the
	// least recently used one beyond it is closed (it stays on disk, and
	// re-opening it is cheap). Without a bound every URL a GitSync ever
	// named, deleted GitSyncs included, would keep its store and object
	// cache for the life of the process. 0 means 64.
	MaxOpenRepos int
	// ObjectCacheBytes is the decoded-object cache of each open store.
	// go-git's default is 96 MiB per repository; rendering reads each tree
	// and blob of a commit about once, so a few MiB keep the commits and
	// trees that fetch checks reuse. 0 means 2 MiB.
	ObjectCacheBytes int64
}

// defaultMaxOpenRepos and defaultObjectCacheBytes bound the memory of open
// object stores to 64 × 2 MiB of object cache (plus what go-git keeps per
// store) however many repositories the Fetcher has seen.
const (
	defaultMaxOpenRepos           = 64
	defaultObjectCacheBytes int64 = 2 << 20
)

// DefaultOptions returns shallow fetches, a 50-commit window for
// rewrite detection, a 2 minute timeout and a 1 GiB checkout cap.
func DefaultOptions() Options {
	return Options{
		Depth:            1,
		HistoryDepth:     50,
		Timeout:          2 * time.Minute,
		MaxCheckoutBytes: 1 << 30,
		MaxOpenRepos:     defaultMaxOpenRepos,
		ObjectCacheBytes: defaultObjectCacheBytes,
	}
}

// Fetcher resolves refs against remotes and fetches commits into local
// object stores under Options.Dir. It is safe for concurrent use;
// fetches into the same repository are serialised. At most
// Options.MaxOpenRepos stores stay open between uses.
type Fetcher struct {
	opts Options

	mu    sync.Mutex
	repos map[string]*localRepo
	// tick orders uses of the stores, for closing the least recently used.
	tick uint64
}

// localRepo is the bare object store of one remote.
type localRepo struct {
	mu   sync.Mutex // held for fetches and ref updates
	repo *git.Repository
	// objects is repo's decoded-object cache, emptied whenever nobody holds
	// the store: between fetches it would only keep blobs of a commit that
	// is already rendered (at scale, ~1 KB per managed object).
	objects cache.Object
	// users (how many calls hold it) and used (the Fetcher's tick at its
	// last use) are guarded by Fetcher.mu; a store in use is never closed.
	users int
	used  uint64
}

// NewFetcher validates opts and creates opts.Dir.
func NewFetcher(opts Options) (*Fetcher, error) {
	if opts.Dir == "" {
		return nil, errors.New("fetcher options invalid: Dir is required")
	}
	if opts.Depth < 0 || opts.HistoryDepth < 0 || opts.Timeout < 0 || opts.MaxCheckoutBytes < 0 ||
		opts.MaxOpenRepos < 0 || opts.ObjectCacheBytes < 0 {
		return nil, errors.New("fetcher options invalid: negative value")
	}
	if opts.MaxOpenRepos == 0 {
		opts.MaxOpenRepos = defaultMaxOpenRepos
	}
	if opts.ObjectCacheBytes == 0 {
		opts.ObjectCacheBytes = defaultObjectCacheBytes
	}
	for _, d := range []string{"repos", "work", "known_hosts"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("fetcher dir create failed: %w", err)
		}
	}
	return &Fetcher{opts: opts, repos: map[string]*localRepo{}}, nil
}

// Resolve lists the remote's refs (one round trip, the equivalent of
// git ls-remote) and picks the commit src.Ref points at. It never fetches
// objects, so polling an unchanged remote costs one small request. A pinned
// commit is returned as is, after the listing has proven the remote is
// reachable with src.Auth.
func (f *Fetcher) Resolve(ctx context.Context, src Source) (Revision, error) {
	if err := src.Validate(); err != nil {
		return Revision{}, gitErr(src, "resolve", err)
	}
	list, err := f.listRefs(ctx, src)
	if err != nil {
		return Revision{}, err
	}
	refs := newRemoteRefs(list)
	name, hash, err := refs.pick(src.Ref)
	var re *reasonError
	if errors.As(err, &re) && re.reason == v1.ReasonRefNotFound {
		// Say what the ref could have been instead.
		re.msg += "; " + refs.existing(src.Ref, defaultBranchOf(list))
	}
	if err != nil {
		return Revision{}, gitErr(src, "resolve", err)
	}
	return Revision{URL: displayURL(src.URL), Ref: name.Short(), Commit: hash.String()}, nil
}

// listRefs is one ls-remote: every advertised reference, symbolic ones (HEAD)
// included, annotated tags followed by their peeled "^{}" entries.
func (f *Fetcher) listRefs(ctx context.Context, src Source) ([]*plumbing.Reference, error) {
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	auth, err := f.transportAuth(src)
	if err != nil {
		return nil, gitErr(src, "list refs", err)
	}
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{src.URL}})
	list, err := rem.ListContext(ctx, &git.ListOptions{
		Auth:          auth,
		CABundle:      caData(src.Auth),
		PeelingOption: git.AppendPeeled,
	})
	if err != nil {
		return nil, gitErr(src, "list refs", err)
	}
	return list, nil
}

func (f *Fetcher) transportAuth(src Source) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(src.URL)
	if err != nil {
		return nil, fmt.Errorf("url invalid: %w", ErrInvalidSource)
	}
	auth, err := src.Auth.transportAuth(ep, filepath.Join(f.opts.Dir, "known_hosts"))
	if err != nil || src.Egress == nil {
		return auth, err
	}
	return guardAuth(src.Egress, ep, auth)
}

func (f *Fetcher) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.opts.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, f.opts.Timeout)
}

func caData(a *Auth) []byte {
	if a == nil {
		return nil
	}
	return a.CAData
}

// repo opens (creating on first use) the bare object store for url and
// holds it for the caller, who gives it back with done.
func (f *Fetcher) repo(src Source) (*localRepo, error) {
	key := repoKey(src.URL)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tick++
	lr, ok := f.repos[key]
	if !ok {
		r, objects, err := f.openStore(filepath.Join(f.opts.Dir, "repos", key))
		if err != nil {
			return nil, gitErr(src, "open local store", err)
		}
		lr = &localRepo{repo: r, objects: objects}
		f.repos[key] = lr
	}
	lr.users++
	lr.used = f.tick
	f.closeIdleLocked()
	return lr, nil
}

// done gives back a store repo handed out.
func (f *Fetcher) done(lr *localRepo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lr.users--
	if lr.users == 0 {
		lr.objects.Clear()
	}
	f.closeIdleLocked()
}

// closeIdleLocked drops least recently used stores nobody holds until at
// most MaxOpenRepos are open; f.mu is held. Dropping a store releases its
// object cache and pack indexes; its files stay.
func (f *Fetcher) closeIdleLocked() {
	for len(f.repos) > f.opts.MaxOpenRepos {
		var oldest string
		for key, lr := range f.repos {
			if lr.users == 0 && (oldest == "" || lr.used < f.repos[oldest].used) {
				oldest = key
			}
		}
		if oldest == "" {
			return // every store is in use; closed when given back
		}
		closeStore(f.repos[oldest].repo)
		delete(f.repos, oldest)
	}
}

// openStore opens (or creates) the bare repository in dir with a bounded
// object cache instead of go-git's 96 MiB default.
func (f *Fetcher) openStore(dir string) (*git.Repository, cache.Object, error) {
	objects := cache.NewObjectLRU(cache.FileSize(f.opts.ObjectCacheBytes))
	st := filesystem.NewStorage(osfs.New(dir), objects)
	r, err := git.Open(st, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		r, err = git.Init(st, nil)
	}
	return r, objects, err
}

// closeStore releases what an open store holds (open pack files).
func closeStore(r *git.Repository) {
	if st, ok := r.Storer.(*filesystem.Storage); ok {
		_ = st.Close()
	}
}

// openRepos is the number of stores kept open.
func (f *Fetcher) openRepos() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.repos)
}

// repoKey names the local store of a remote: a digest of its URL without
// credentials, so the directory name leaks nothing.
func repoKey(raw string) string {
	sum := sha256.Sum256([]byte(displayURL(raw)))
	return hex.EncodeToString(sum[:12])
}

// displayURL drops userinfo entirely ("https://host/x"); for strings that do
// not parse as URLs it falls back to RedactURL.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return RedactURL(raw)
	}
	if u.Scheme == "ssh" && u.User != nil {
		if _, hasPass := u.User.Password(); !hasPass {
			return raw // ssh://git@host/x: the user name is not a secret
		}
	}
	u.User = nil
	return u.String()
}

// DefaultBranch returns the branch the remote's HEAD points to (what `git
// clone` checks out), for callers that were given no ref. It costs one
// listing. When nothing matches (see defaultBranchOf) it is ErrRefNotFound.
func (f *Fetcher) DefaultBranch(ctx context.Context, src Source) (string, error) {
	list, err := f.listRefs(ctx, src)
	if err != nil {
		return "", err
	}
	if b := defaultBranchOf(list); b != "" {
		return b, nil
	}
	return "", gitErr(src, "resolve", &reasonError{class: ErrRefNotFound, reason: v1.ReasonRefNotFound,
		msg: "the remote's HEAD names no branch; " + newRemoteRefs(list).existing(Ref{Branch: "HEAD"}, "")})
}

// defaultBranchOf is the branch a listing's HEAD points to, or "". A
// remote that does not advertise HEAD as a symbolic ref is matched by
// commit against its branches, preferring main and master.
func defaultBranchOf(list []*plumbing.Reference) string {
	var head plumbing.Hash
	for _, r := range list {
		if r.Name() != plumbing.HEAD {
			continue
		}
		if r.Type() == plumbing.SymbolicReference && r.Target().IsBranch() {
			return r.Target().Short()
		}
		head = r.Hash()
	}
	var branches []string
	for _, r := range list {
		if r.Name().IsBranch() && r.Type() == plumbing.HashReference && !head.IsZero() && r.Hash() == head {
			branches = append(branches, r.Name().Short())
		}
	}
	for _, preferred := range []string{"main", "master"} {
		if slices.Contains(branches, preferred) {
			return preferred
		}
	}
	if len(branches) > 0 {
		slices.Sort(branches)
		return branches[0]
	}
	return ""
}
