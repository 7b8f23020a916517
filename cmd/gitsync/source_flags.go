package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/drift"
	sourcegit "gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/oci"
	sourcerender "gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sops"
)

// sourceOptions select the manifests: a local directory, read as it is on
// disk (uncommitted files included), or a path of a remote repository at a
// branch, tag, semver range or commit.
type sourceOptions struct {
	// Dir is the local directory given as the argument.
	Dir string
	// URL is a remote repository (https, ssh, file:// or a local repository
	// path read through Git, so only committed files count).
	URL string
	// Branch, Tag, Semver and Commit select the revision of URL; at most one
	// is set; with none, the remote's default branch is followed.
	Branch, Tag, Semver, Commit string
	// Path is the directory inside the repository (or inside Dir) to render.
	Path string
	// Root confines a local render: nothing is read from outside it. Empty
	// means Dir's Git work tree, else the nearest directory holding Dir and
	// the kustomize bases it names (kustomize's own rule).
	Root string
	// SSHKeyFile, KnownHostsFile and CAFile are credentials of URL that are
	// files; secrets that are strings come from the environment only (see
	// gitEnv*), so they stay out of shell history and process listings.
	SSHKeyFile, KnownHostsFile, CAFile string
	// MaxObjects caps the objects the render may yield, as the agent's
	// --max-objects does.
	MaxObjects int
	// Rendering holds spec.helm, spec.ignore and the post-render changes as flags.
	Rendering renderFlags
	// PlainHTTP lets an oci:// URL be read over plain HTTP.
	PlainHTTP bool
	// CosignKeys are files of public keys; with any, an oci:// URL is read
	// only when one of them verifies its cosign signature.
	CosignKeys []string
	// Origins has the render say where each object is defined
	// (renderedSource.Origins), for gitsync trace.
	Origins bool
}

// Environment variables holding Git credentials for --url.
const (
	gitEnvUsername      = "GITSYNC_GIT_USERNAME"
	gitEnvPassword      = "GITSYNC_GIT_PASSWORD"
	gitEnvToken         = "GITSYNC_GIT_TOKEN"
	gitEnvSSHPassphrase = "GITSYNC_SSH_PASSPHRASE"
)

// AddFlags registers --url, the ref flags and --path.
func (o *sourceOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "url", "", "Git repository (https://, ssh://, git@host:org/repo, file://) or OCI artifact (oci://registry/repo[:tag|@digest]) to read instead of a local directory.")
	fs.StringVar(&o.Branch, "branch", "", "Branch of --url to follow (default: the remote's default branch).")
	fs.StringVar(&o.Tag, "tag", "", "Tag of --url to read.")
	fs.StringVar(&o.Semver, "semver", "", "Semver range; reads the highest tag of --url that satisfies it, e.g. \"~1.4\".")
	fs.StringVar(&o.Commit, "commit", "", "Full 40-hex commit of --url to read.")
	fs.StringVar(&o.Path, "path", "", "Directory inside the repository (or the local directory) to render; plain YAML or kustomize.")
	fs.StringVar(&o.Root, "root", "", "Directory nothing of a local render may be read from outside of (default: the Git work tree holding DIR, else DIR and the kustomize bases it names).")
	fs.StringVar(&o.SSHKeyFile, "ssh-key", "", "Private key file for ssh:// and git@host: URLs (passphrase from $"+gitEnvSSHPassphrase+").")
	fs.StringVar(&o.KnownHostsFile, "known-hosts", "", "known_hosts file for ssh URLs (default ~/.ssh/known_hosts).")
	fs.StringVar(&o.CAFile, "ca-file", "", "PEM bundle of extra CAs to trust for https URLs.")
	fs.IntVar(&o.MaxObjects, "max-objects", sourcerender.DefaultMaxObjects, "Refuse a source that renders more objects than this.")
	fs.BoolVar(&o.PlainHTTP, "plain-http", false, "Read an oci:// --url (or a --gitsync GitSync's oci:// source) over plain HTTP (a local registry without TLS).")
	fs.StringSliceVar(&o.CosignKeys, "cosign-key", nil, "PEM public key file (repeatable); an oci:// --url is read only if one of them verifies its cosign signature.")
	o.Rendering.AddFlags(fs)
}

// renderOptions are the render caps, with the object cap from --max-objects.
func (o *sourceOptions) renderOptions() sourcerender.Options {
	ropts := sourcerender.DefaultOptions()
	ropts.MaxObjects = o.MaxObjects
	ropts.Origins = o.Origins
	return ropts
}

// auth reads the credentials for URL: HTTPS basic auth or a token from
// $GITSYNC_GIT_USERNAME/$GITSYNC_GIT_PASSWORD or $GITSYNC_GIT_TOKEN, and the
// files named by the flags. It returns nil when there are none.
func (o *sourceOptions) auth() (*sourcegit.Auth, error) {
	a := &sourcegit.Auth{
		Username:      os.Getenv(gitEnvUsername),
		Password:      os.Getenv(gitEnvPassword),
		BearerToken:   os.Getenv(gitEnvToken),
		SSHPassphrase: []byte(os.Getenv(gitEnvSSHPassphrase)),
	}
	read := func(flag, path string, into *[]byte) error {
		if path == "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--%s: %w", flag, err)
		}
		*into = b
		return nil
	}
	knownHosts := o.KnownHostsFile
	if knownHosts == "" && o.SSHKeyFile != "" {
		if home, err := os.UserHomeDir(); err == nil {
			if _, err := os.Stat(filepath.Join(home, ".ssh", "known_hosts")); err == nil {
				knownHosts = filepath.Join(home, ".ssh", "known_hosts")
			}
		}
	}
	if err := errors.Join(
		read("ssh-key", o.SSHKeyFile, &a.SSHPrivateKey),
		read("known-hosts", knownHosts, &a.KnownHosts),
		read("ca-file", o.CAFile, &a.CAData),
	); err != nil {
		return nil, err
	}
	if a.Username == "" && a.Password == "" && a.BearerToken == "" && len(a.SSHPrivateKey) == 0 && len(a.CAData) == 0 {
		return nil, nil
	}
	return a, nil
}

// takeArgs takes the local directory from args and counts the ref flags
// given.
func (o *sourceOptions) takeArgs(args []string) (refs int, err error) {
	if len(args) > 1 {
		return 0, fmt.Errorf("expected at most one directory, got %d arguments", len(args))
	}
	if len(args) == 1 {
		o.Dir = args[0]
	}
	for _, v := range []string{o.Branch, o.Tag, o.Semver, o.Commit} {
		if v != "" {
			refs++
		}
	}
	return refs, nil
}

// Complete takes the local directory from args and checks that exactly one
// source is named.
func (o *sourceOptions) Complete(args []string) error {
	refs, err := o.takeArgs(args)
	if err != nil {
		return err
	}
	switch {
	case o.URL != "" && o.Dir != "":
		return errors.New("give either a directory or --url, not both")
	case o.URL == "" && o.Dir == "":
		return errors.New("no source: give a directory (e.g. ./deploy) or --url")
	case o.URL == "" && refs > 0:
		return errors.New("--branch, --tag, --semver and --commit need --url; a directory is read as it is on disk")
	case refs > 1:
		return errors.New("give at most one of --branch, --tag, --semver and --commit")
	case o.URL == "" && (o.SSHKeyFile != "" || o.KnownHostsFile != "" || o.CAFile != ""):
		return errors.New("--ssh-key, --known-hosts and --ca-file need --url")
	case o.URL != "" && o.Root != "":
		return errors.New("--root confines a local directory; a repository's root is its checkout")
	case o.PlainHTTP && !oci.IsURL(o.URL):
		return errors.New("--plain-http is for an oci:// --url")
	case len(o.CosignKeys) > 0 && !oci.IsURL(o.URL):
		return errors.New("--cosign-key verifies an oci:// --url")
	}
	return nil
}

// CompleteOptional is Complete for a command whose source may come from
// elsewhere (diff --gitsync: the GitSync's spec): no source is fine, and
// the ref flags may stand alone (they override the spec's ref).
func (o *sourceOptions) CompleteOptional(args []string) error {
	refs, err := o.takeArgs(args)
	if err != nil {
		return err
	}
	switch {
	case o.URL != "" && o.Dir != "":
		return errors.New("give either a directory or --url, not both")
	case o.Dir != "" && refs > 0:
		return errors.New("--branch, --tag, --semver and --commit select a revision to fetch; a directory is read as it is on disk")
	case refs > 1:
		return errors.New("give at most one of --branch, --tag, --semver and --commit")
	case o.PlainHTTP && (o.Dir != "" || o.URL != "" && !oci.IsURL(o.URL)):
		// Without --url, the GitSync's own source may be an oci:// one.
		return errors.New("--plain-http is for an oci:// source")
	case len(o.CosignKeys) > 0 && !oci.IsURL(o.URL):
		return errors.New("--cosign-key verifies an oci:// --url (a GitSync's artifact is verified with its own keys)")
	}
	return nil
}

// renderedSource is what a source renders to.
type renderedSource struct {
	// Objects are validated and sorted.
	Objects []*unstructured.Unstructured
	// Revision says what was read: "main@sha1:<commit>" for a remote, the
	// directory for a local source.
	Revision string
	// SOPS finds the SOPS files the render read.
	SOPS sops.Files
	// Ignore are the fields left alone: --ignore-field, or the GitSync's
	// spec.drift.ignore.
	Ignore drift.Rules
	// Origins, with sourceOptions.Origins, say where each of Objects (by
	// index) is defined.
	Origins []string
}

// Render reads the source and renders it with the engine's renderer.
func (o *sourceOptions) Render(ctx context.Context) (*renderedSource, error) {
	if o.URL != "" {
		return o.renderRemote(ctx)
	}
	return o.renderLocal(ctx)
}

// renderLocal renders Dir as it is on disk, confined to a root: --root when
// given; else, when Dir lies inside a Git work tree, the work tree's top, so
// kustomize bases elsewhere in the repository resolve as they will for the
// agent; else the nearest directory holding Dir and the kustomize bases it
// names, as `kustomize build DIR` allows (bases may sit outside Dir, files
// may not). Symlinks leaving the root are refused.
func (o *sourceOptions) renderLocal(ctx context.Context) (*renderedSource, error) {
	dir, err := realDir(o.Dir)
	if err != nil {
		return nil, err
	}
	root, rel, err := o.localRoot(dir)
	if err != nil {
		return nil, err
	}
	if o.Path != "" {
		rel = filepath.Join(rel, filepath.FromSlash(o.Path))
	}
	ropts, err := o.renderOptionsIn(root)
	if err != nil {
		return nil, err
	}
	r, err := o.Rendering.render(ctx, root, rel, ropts)
	if errors.Is(err, sourcerender.ErrOutsideRoot) {
		return nil, fmt.Errorf("render %s: %w (nothing is read from outside %s; --root sets that directory)", o.Dir, err, root)
	}
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", o.Dir, err)
	}
	return &renderedSource{Objects: r.Objects, Revision: o.Dir, SOPS: r.SOPSLookup, Origins: r.Origins}, nil
}

// realDir is the absolute, symlink-free path of the directory d.
func realDir(d string) (string, error) {
	dir, err := filepath.Abs(d)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return "", fmt.Errorf("directory %s: %w", d, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("directory %s: %w", d, err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("directory %s: not a directory", d)
	}
	return dir, nil
}

// localRoot returns the confinement root of the real directory dir and
// dir's path relative to it.
func (o *sourceOptions) localRoot(dir string) (root, rel string, err error) {
	switch {
	case o.Root != "":
		if root, err = realDir(o.Root); err != nil {
			return "", "", fmt.Errorf("--root: %w", err)
		}
	case workTreeTop(dir) != "":
		root = workTreeTop(dir)
	default:
		if root, err = sourcerender.OverlayRoot(dir); err != nil {
			return "", "", fmt.Errorf("directory %s: %w", o.Dir, err)
		}
	}
	rel, err = filepath.Rel(root, dir)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", "", fmt.Errorf("directory %s lies outside --root %s", o.Dir, o.Root)
	}
	return root, rel, nil
}

// workTreeTop returns the nearest directory at or above dir holding ".git",
// or "" when there is none.
func workTreeTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// renderRemote resolves the ref, checks the commit out into a temporary
// directory and renders Path from it.
func (o *sourceOptions) renderRemote(ctx context.Context) (*renderedSource, error) {
	if oci.IsURL(o.URL) {
		return o.renderArtifact(ctx)
	}
	src := sourcegit.Source{URL: o.URL, Path: o.Path, Ref: o.ref()}
	auth, err := o.auth()
	if err != nil {
		return nil, err
	}
	src.Auth = auth
	return o.renderSource(ctx, src, nil)
}

// ref is the revision the ref flags select; zero when none is given.
func (o *sourceOptions) ref() sourcegit.Ref {
	return sourcegit.Ref{Branch: o.Branch, Tag: o.Tag, Semver: o.Semver, Commit: o.Commit}
}

// revisionCheck accepts or refuses a resolved revision before anything of
// it is checked out (a GitSync's spec.source.verify).
type revisionCheck func(ctx context.Context, f *sourcegit.Fetcher, src sourcegit.Source, rev sourcegit.Revision) error

// renderSource fetches src into a temporary directory and renders its path;
// a src without a ref follows the remote's default branch. check, when
// set, must accept the revision first.
func (o *sourceOptions) renderSource(ctx context.Context, src sourcegit.Source, check revisionCheck) (*renderedSource, error) {
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	opts := sourcegit.DefaultOptions()
	opts.Dir = tmp
	f, err := sourcegit.NewFetcher(opts)
	if err != nil {
		return nil, err
	}
	if src.Ref == (sourcegit.Ref{}) {
		// No ref flag: follow what `git clone` would check out.
		if src.Ref.Branch, err = f.DefaultBranch(ctx, src); err != nil {
			return nil, withCredentialsHint(err)
		}
	}
	if err := src.Validate(); err != nil {
		return nil, err
	}
	rev, err := f.Resolve(ctx, src)
	if err != nil {
		return nil, withCredentialsHint(err)
	}
	if check != nil {
		if err := check(ctx, f, src, rev); err != nil {
			return nil, err
		}
	}
	checkout, err := f.Checkout(ctx, src, rev)
	if err != nil {
		return nil, err
	}
	return o.renderTop(ctx, checkout, src.Path, rev.String(), fmt.Sprintf("%s at %s", sourcegit.RedactURL(src.URL), rev))
}

// renderTop renders path ("" is the top) of a checkout or pulled artifact
// whose whole tree is top, labelled revision; errors name what.
func (o *sourceOptions) renderTop(ctx context.Context, top, path, revision, what string) (*renderedSource, error) {
	if path == "" {
		path = "."
	}
	ropts, err := o.renderOptionsIn("")
	if err != nil {
		return nil, err
	}
	r, err := o.Rendering.render(ctx, top, path, ropts)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", what, err)
	}
	return &renderedSource{Objects: r.Objects, Revision: revision, SOPS: r.SOPSLookup, Origins: r.Origins}, nil
}

// renderArtifact resolves an oci:// --url (its tag or digest, or --tag or
// --semver), pulls the artifact into a temporary directory and renders
// Path from it, as the directory's top.
func (o *sourceOptions) renderArtifact(ctx context.Context) (*renderedSource, error) {
	a, err := oci.ParseReference(o.URL)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Branch != "" || o.Commit != "":
		return nil, errors.New("--branch and --commit select Git revisions; an oci:// --url takes a tag, a digest (oci://…@sha256:…), --tag or --semver")
	case a.Ref != (oci.Ref{}) && (o.Tag != "" || o.Semver != ""):
		return nil, fmt.Errorf("%s already names its tag or digest; drop --tag and --semver", o.URL)
	case o.Tag != "":
		a.Ref.Tag = o.Tag
	case o.Semver != "":
		a.Ref.Semver = o.Semver
	case a.Ref == (oci.Ref{}):
		a.Ref.Tag = "latest"
	}
	keys, err := o.cosignKeys()
	if err != nil {
		return nil, err
	}
	return o.renderPulled(ctx, ociClient(o.PlainHTTP), a, keys)
}

// renderPulled resolves a, verifies it with keys when any are given (nothing
// of an unverified artifact is read), pulls it into a temporary directory
// and renders Path from it, as the directory's top.
func (o *sourceOptions) renderPulled(ctx context.Context, c *oci.Client, a oci.Artifact, keys []crypto.PublicKey) (*renderedSource, error) {
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rev, err := c.Resolve(ctx, a)
	if err != nil {
		return nil, err
	}
	if len(keys) > 0 {
		if _, err := c.Verify(ctx, a, rev, keys); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(tmp, "artifact")
	if _, err := c.Pull(ctx, a, rev, dir); err != nil {
		return nil, err
	}
	return o.renderTop(ctx, dir, o.Path, rev.String(), fmt.Sprintf("%s at %s", a.URL, rev))
}

// cosignKeys are the public keys of --cosign-key's files; none when not
// given.
func (o *sourceOptions) cosignKeys() ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, f := range o.CosignKeys {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--cosign-key: %w", err)
		}
		k, err := oci.ParsePublicKeys(b)
		if err != nil {
			return nil, fmt.Errorf("--cosign-key %s: %w", f, err)
		}
		keys = append(keys, k...)
	}
	return keys, nil
}

// withCredentialsHint says how to give the CLI credentials when a remote
// asked for some and none were sent; other errors pass unchanged (the
// source's message already says what happened).
func withCredentialsHint(err error) error {
	if sourcegit.Reason(err) != v1.ReasonAuthenticationRequired {
		return err
	}
	return fmt.Errorf("%w; give credentials with $%s and $%s, or $%s (https), or --ssh-key (ssh)",
		err, gitEnvUsername, gitEnvPassword, gitEnvToken)
}
