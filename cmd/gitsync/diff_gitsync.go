package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/commitstatus"
	"gitsync.dev/gitsync/controller"
	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/chartrepo"
	sourcegit "gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/git/githubapp"
	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/oci"
	"gitsync.dev/gitsync/source/verify"
)

// gitSyncPreview is what `gitsync diff --gitsync` needs to see a sync as the
// agent sees it: the GitSync, the identity the agent applies as, and the
// rails its prunes obey.
type gitSyncPreview struct {
	gs *gitsyncv1.GitSync
	// as is the cluster as the agent reaches it for gs: impersonating
	// spec.serviceAccountName, with spec.targetNamespace (else the GitSync's
	// namespace) as the default namespace.
	as *connectedCluster
}

// parseGitSyncRef splits "NAMESPACE/NAME" (or "NAME", in ns).
func parseGitSyncRef(ref, ns string) (client.ObjectKey, error) {
	parts := strings.Split(ref, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return client.ObjectKey{Namespace: ns, Name: parts[0]}, nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return client.ObjectKey{Namespace: parts[0], Name: parts[1]}, nil
	}
	return client.ObjectKey{}, fmt.Errorf("--gitsync %q: want NAMESPACE/NAME or NAME", ref)
}

// connectGitSync connects to the target and reads the GitSync named name in
// its namespace; errors carry the exit code for trouble.
func connectGitSync(ctx context.Context, o *targetOptions, name string) (*connectedCluster, *gitsyncv1.GitSync, error) {
	tgt, err := o.Connect()
	if err != nil {
		return nil, nil, withExitCode(exitError, err)
	}
	gs, err := getGitSync(ctx, tgt.Client, client.ObjectKey{Namespace: tgt.Namespace, Name: name})
	if err != nil {
		return nil, nil, withExitCode(exitError, err)
	}
	return tgt, gs, nil
}

// errGitSyncNotServed is what a command reading GitSyncs says of a cluster
// without the CRD.
var errGitSyncNotServed = fmt.Errorf("the cluster does not serve GitSync (%s): install the gitsync CRD first", gitsyncv1.GroupVersion)

// getGitSync reads one GitSync, with errors that say what to do.
func getGitSync(ctx context.Context, c client.Reader, key client.ObjectKey) (*gitsyncv1.GitSync, error) {
	gs := &gitsyncv1.GitSync{}
	err := c.Get(ctx, key, gs)
	switch {
	case meta.IsNoMatchError(err):
		return nil, errGitSyncNotServed
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("GitSync/%s/%s not found", key.Namespace, key.Name)
	case err != nil:
		return nil, fmt.Errorf("GitSync/%s/%s read failed: %w", key.Namespace, key.Name, err)
	}
	return gs, nil
}

// newGitSyncPreview reads the GitSync and connects as the agent would for it.
func newGitSyncPreview(ctx context.Context, user *connectedCluster, ref string) (*gitSyncPreview, error) {
	key, err := parseGitSyncRef(ref, user.Namespace)
	if err != nil {
		return nil, err
	}
	gs, err := getGitSync(ctx, user.Client, key)
	if err != nil {
		return nil, err
	}
	return previewOf(user, gs)
}

// previewOf is the preview of gs, already read.
func previewOf(user *connectedCluster, gs *gitsyncv1.GitSync) (*gitSyncPreview, error) {
	if gs.Spec.KubeConfig != nil {
		return nil, fmt.Errorf("GitSync/%s/%s applies to another cluster (spec.kubeConfig): preview it against that cluster with --kubeconfig and without --gitsync", gs.Namespace, gs.Name)
	}
	cfg := rest.CopyConfig(user.Config)
	if sa := gs.Spec.ServiceAccountName; sa != "" {
		if cfg.Impersonate.UserName != "" {
			return nil, fmt.Errorf("--as cannot be combined with --gitsync: GitSync/%s/%s is applied as its ServiceAccount %s", gs.Namespace, gs.Name, sa)
		}
		cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(gs.Namespace, sa)}
	}
	ns := gs.Namespace
	if gs.Spec.TargetNamespace != "" {
		ns = gs.Spec.TargetNamespace
	}
	as, err := connect(cfg, ns)
	if err != nil {
		return nil, err
	}
	return &gitSyncPreview{gs: gs, as: as}, nil
}

// serviceAccountUser is the user name the apiserver gives a ServiceAccount.
func serviceAccountUser(ns, name string) string {
	return "system:serviceaccount:" + ns + ":" + name
}

// render renders what the agent would for p's GitSync: the local checkout
// dir (the repository's top; nothing is read outside it) when given, else
// the GitSync's repository at its ref. The ref flags, --url and --path
// override the spec, so a CI job can preview a pull request's branch. The
// object cap is the smaller of --max-objects and spec.maxObjects, and an
// empty render is refused unless spec.allowEmpty, as the agent refuses it.
func (p *gitSyncPreview) render(ctx context.Context, user *connectedCluster, o *sourceOptions) (*renderedSource, error) {
	spec := p.gs.Spec
	opts := *o
	if opts.Path == "" {
		opts.Path = spec.Source.Path
	}
	if m := spec.MaxObjects; m != nil && int(*m) < opts.MaxObjects {
		opts.MaxObjects = int(*m)
	}
	if err := opts.Rendering.useGitSync(p.gs); err != nil {
		return nil, err
	}
	acc, err := prepare.ChartAccess(ctx, p.gs, p.userSecrets(user))
	if err != nil {
		return nil, fmt.Errorf("GitSync/%s/%s: %w", p.gs.Namespace, p.gs.Name, err)
	}
	opts.Rendering.HelmRepos.gitSync = acc
	var desired *renderedSource
	if opts.Dir != "" {
		desired, err = opts.renderCheckout(ctx)
	} else {
		desired, err = p.renderRemote(ctx, user, &opts)
	}
	if err != nil {
		return nil, err
	}
	if len(desired.Objects) == 0 && !spec.AllowEmpty {
		return nil, fmt.Errorf("path %q renders no objects: the agent would refuse it (set spec.allowEmpty to sync an empty set)", opts.Path)
	}
	return desired, nil
}

// desired are the objects the agent would apply for p's GitSync, before
// the applier places them: rendered (render), then substituted and
// decrypted with the GitSync's variables and key (prep's flags, when given,
// standing in for them). diff --gitsync and build --gitsync both start here.
func (p *gitSyncPreview) desired(ctx context.Context, user *connectedCluster, src *sourceOptions, prep *prepareFlags) (*renderedSource, error) {
	desired, err := p.render(ctx, user, src)
	if err != nil {
		return nil, err
	}
	if desired.Objects, err = prep.prepareGitSync(ctx, user, p.gs, desired.Objects, desired.SOPS); err != nil {
		return nil, err
	}
	if desired.Ignore, err = prepare.DriftRules(p.gs); err != nil {
		return nil, fmt.Errorf("GitSync/%s/%s: %w", p.gs.Namespace, p.gs.Name, err)
	}
	return desired, nil
}

// renderCheckout renders Path of the checkout Dir: Dir is the repository's
// top, as the agent's checkout is.
func (o *sourceOptions) renderCheckout(ctx context.Context) (*renderedSource, error) {
	root, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", o.Dir, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("directory %s: %w", o.Dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("directory %s: not a directory", o.Dir)
	}
	path := o.Path
	if path == "" {
		path = "."
	}
	return o.renderTop(ctx, root, path, o.Dir, fmt.Sprintf("%s of %s", path, o.Dir))
}

// renderRemote fetches the GitSync's repository (or --url) at its ref (or
// the ref flags) with the credentials of the environment, else those of
// spec.source.secretRef read with the user's own identity.
func (p *gitSyncPreview) renderRemote(ctx context.Context, user *connectedCluster, o *sourceOptions) (*renderedSource, error) {
	spec := p.gs.Spec.Source
	switch {
	case spec.Chart != "" && !oci.IsURL(spec.URL) && o.URL == "":
		return p.renderChart(ctx, user, o)
	case oci.IsURL(spec.URL) && o.URL == "":
		return p.renderArtifact(ctx, user, o)
	}
	if o.PlainHTTP && !oci.IsURL(o.URL) {
		return nil, fmt.Errorf("--plain-http is for an oci:// source; GitSync/%s/%s reads Git", p.gs.Namespace, p.gs.Name)
	}
	src := sourcegit.Source{URL: o.URL, Path: o.Path, Ref: o.ref()}
	if src.URL == "" {
		src.URL = spec.URL
	}
	if src.Ref == (sourcegit.Ref{}) && o.URL == "" {
		src.Ref = sourcegit.Ref{Branch: spec.Ref.Branch, Tag: spec.Ref.Tag, Semver: spec.Ref.Semver, Commit: spec.Ref.Commit}
	}
	auth, err := o.auth()
	if err != nil {
		return nil, err
	}
	if auth == nil && spec.SecretRef != nil && o.URL == "" {
		if auth, err = p.secretAuth(ctx, user, src.URL); err != nil {
			return nil, err
		}
	}
	src.Auth = auth
	check, err := p.verification(ctx, user)
	if err != nil {
		return nil, err
	}
	return o.renderSource(ctx, src, check)
}

// renderArtifact renders the oci:// artifact of p's GitSync at its ref (or
// --tag / --semver), with the credentials of the environment or docker
// configuration, else those of spec.source.secretRef, and verified as the
// agent verifies it (spec.source.verify's keys): Secrets are read with the
// user's own identity.
func (p *gitSyncPreview) renderArtifact(ctx context.Context, user *connectedCluster, o *sourceOptions) (*renderedSource, error) {
	spec := p.gs.Spec.Source
	a, path := prepare.Artifact(p.gs)
	if spec.Chart != "" {
		o.Path = path // the chart's directory in its layer
	}
	switch {
	case o.Branch != "" || o.Commit != "":
		return nil, fmt.Errorf("GitSync/%s/%s reads an oci:// artifact: --branch and --commit select Git revisions; give --tag or --semver", p.gs.Namespace, p.gs.Name)
	case o.Tag != "":
		a.Ref = oci.Ref{Tag: o.Tag}
	case o.Semver != "":
		a.Ref = oci.Ref{Semver: o.Semver}
	}
	c := ociClient(o.PlainHTTP)
	if os.Getenv(ociEnvUsername) == "" && os.Getenv(ociEnvPassword) == "" {
		creds, err := prepare.SourceCredentials(ctx, p.gs, p.userSecrets(user))
		if err != nil {
			return nil, fmt.Errorf("%w; give the credentials with $%s/$%s or docker login instead", err, ociEnvUsername, ociEnvPassword)
		}
		if creds != nil {
			c = ociClientAs(o.PlainHTTP, creds.Username, creds.Password)
		}
	}
	var keys []crypto.PublicKey
	if v := spec.Verify; v != nil {
		from := fmt.Sprintf("Secret/%s/%s (spec.source.verify.secretRef)", p.gs.Namespace, v.SecretRef.Name)
		secret, err := userSecret(ctx, user, p.gs.Namespace, v.SecretRef.Name)
		if err != nil {
			return nil, fmt.Errorf("%s read failed: %w", from, err)
		}
		if keys, _, err = oci.SecretKeys(secret.Data, from); err != nil {
			return nil, err
		}
	}
	r, err := o.renderPulled(ctx, c, a, keys)
	if errors.Is(err, oci.ErrUnverified) {
		return nil, fmt.Errorf("%w; GitSync/%s/%s verifies its source (spec.source.verify), so the agent refuses it too", err, p.gs.Namespace, p.gs.Name)
	}
	return r, err
}

// renderChart renders the chart p's GitSync takes as its source
// (spec.source.chart) at its ref (or --tag / --semver), downloaded as the
// agent downloads it, with the credentials of the user's Helm
// configuration for the repository, else those of spec.source.secretRef
// read with the user's own identity.
func (p *gitSyncPreview) renderChart(ctx context.Context, user *connectedCluster, o *sourceOptions) (*renderedSource, error) {
	spec := p.gs.Spec.Source
	need := helm.Need{Name: spec.Chart, Repository: strings.TrimSuffix(spec.URL, "/"), Version: spec.Ref.Tag, Locked: spec.Ref.Tag != ""}
	switch {
	case o.Branch != "" || o.Commit != "":
		return nil, fmt.Errorf("GitSync/%s/%s renders chart %s: --branch and --commit select Git revisions; give --tag (a version) or --semver", p.gs.Namespace, p.gs.Name, spec.Chart)
	case o.Tag != "":
		need.Version, need.Locked = o.Tag, true
	case o.Semver != "":
		need.Version, need.Locked = o.Semver, false
	case spec.Ref.Semver != "":
		need.Version = spec.Ref.Semver
	}
	acc, err := o.Rendering.HelmRepos.access()
	if err != nil {
		return nil, err
	}
	// The GitSync's credentials, after the user's own, and the keys its
	// spec.source.verify trusts: a preview verifies what the agent would.
	src, err := prepare.SourceChartAccess(ctx, p.gs, p.userSecrets(user))
	if err != nil {
		return nil, fmt.Errorf("%w; give the credentials in your Helm configuration instead", err)
	}
	acc.Repositories = append(acc.Repositories, src.Repositories...)
	acc.Trust = append(acc.Trust, src.Trust...)
	f, err := chartrepo.New(chartrepo.Options{Dir: chartCacheDir(), MaxChartBytes: o.renderOptions().MaxFileBytes})
	if err != nil {
		return nil, err
	}
	archives, err := f.Resolve(ctx, []helm.Need{need}, acc)
	if err != nil {
		return nil, err
	}
	a := archives[0]
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := chartrepo.Extract(a, tmp); err != nil {
		return nil, err
	}
	rev := a.Version + "@" + a.Digest
	return o.renderTop(ctx, tmp, spec.Chart, rev, fmt.Sprintf("chart %s %s of %s", spec.Chart, rev, need.Repository))
}

// userSecrets reads the Secrets p's GitSync names as the user
// (userSecret: their values told to the CLI's redactor).
func (p *gitSyncPreview) userSecrets(user *connectedCluster) prepare.ReadSecret {
	return func(ctx context.Context, name, _ string) (map[string][]byte, error) {
		s, err := userSecret(ctx, user, p.gs.Namespace, name)
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
}

// verification is the agent's spec.source.verify for p's GitSync, with the
// keys of its Secret read with the user's own identity: a revision the
// agent would refuse (unsigned, untrusted, tampered) is refused here the
// same way, before it is checked out. Nil when nothing is verified.
func (p *gitSyncPreview) verification(ctx context.Context, user *connectedCluster) (revisionCheck, error) {
	spec := p.gs.Spec.Source.Verify
	if spec == nil {
		return nil, nil
	}
	policy := verify.Policy{Mode: spec.Mode, Origin: fmt.Sprintf("Secret/%s/%s", p.gs.Namespace, spec.SecretRef.Name)}
	secret, err := userSecret(ctx, user, p.gs.Namespace, spec.SecretRef.Name)
	if err != nil {
		return nil, fmt.Errorf("%s (spec.source.verify.secretRef) read failed: %w", policy.Origin, err)
	}
	policy.Keys = secret.Data
	return func(ctx context.Context, f *sourcegit.Fetcher, src sourcegit.Source, rev sourcegit.Revision) error {
		_, err := verify.NewVerifier(1).Verify(ctx, f, src, rev, policy)
		var ve *verify.Error
		if errors.As(err, &ve) {
			return fmt.Errorf("%w; GitSync/%s/%s verifies its source (spec.source.verify), so the agent refuses it too", err, p.gs.Namespace, p.gs.Name)
		}
		return err
	}, nil
}

// secretAuth reads the GitSync's source credentials Secret as the agent
// does (sourcegit.AuthFromSecret); a GitHub App there becomes its
// installation token for url. Its values never appear in an error.
func (p *gitSyncPreview) secretAuth(ctx context.Context, user *connectedCluster, url string) (*sourcegit.Auth, error) {
	ref := p.gs.Spec.Source.SecretRef
	secret, err := userSecret(ctx, user, p.gs.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("Secret/%s/%s (spec.source.secretRef) read failed: %w; give the credentials with $%s/$%s, $%s or --ssh-key instead",
			p.gs.Namespace, ref.Name, err, gitEnvUsername, gitEnvPassword, gitEnvToken)
	}
	// The agent's reading of the keys, so a Secret with none it knows
	// fails here as it fails there: CredentialsUnrecognized, naming them.
	auth := sourcegit.AuthFromSecret(fmt.Sprintf("Secret/%s/%s", p.gs.Namespace, ref.Name), secret.Data)
	if auth.GitHubApp != nil {
		tok, err := auth.UseGitHubApp(ctx, githubAppTokens(), url)
		sensitive.Add(tok)
		if err != nil {
			return nil, fmt.Errorf("Secret/%s/%s (spec.source.secretRef): %w", p.gs.Namespace, ref.Name, err)
		}
	}
	return auth, nil
}

// githubAppTokens mints the GitHub App tokens of one CLI run: like the
// agent's, its client follows no redirect (which would carry the JWT
// elsewhere); unlike it, it dials freely, as the CLI's Git traffic does.
var githubAppTokens = sync.OnceValue(func() *githubapp.Tokens {
	t, _ := githubapp.New(githubapp.Options{Client: commitstatus.NewHTTPClient((&net.Dialer{}).DialContext, 0)})
	return t
})

// diff is computeDiff for p's GitSync: the agent's applier settings (its
// owner labels, force, default namespace and identity) as a dry run, and the
// prunes its status inventory would make through the agent's rails.
func (p *gitSyncPreview) diff(ctx context.Context, desired *renderedSource) (*diffReport, error) {
	gs := p.gs
	a, err := p.applier(desired.Objects, desired.Ignore)
	if err != nil {
		return nil, err
	}
	cs, err := a.Apply(ctx, desired.Objects)
	if err != nil {
		return nil, err
	}
	rep := &diffReport{}
	for _, e := range cs.Entries {
		rep.Entries = append(rep.Entries, diffEntryOf(e))
	}
	if !gs.Spec.Prune {
		return rep, nil
	}
	recorded, err := inventory.FromGitSyncStatus(gs)
	if err != nil {
		return nil, err
	}
	rails, err := gitSyncPruneRails(gs)
	if err != nil {
		return nil, err
	}
	if err := rep.previewPrune(ctx, p.as.Client, recorded, cs, rails); err != nil {
		return nil, err
	}
	return rep, nil
}

// applier is the agent's applier for p's GitSync as a dry run: its owner
// labels, force, default namespace and identity; desired are the objects it
// will be given (their live state is listed where that saves requests).
func (p *gitSyncPreview) applier(desired []*unstructured.Unstructured, ignore drift.Rules) (*apply.Applier, error) {
	gs := p.gs
	opts := apply.DefaultOptions()
	opts.Ignore = ignore
	opts.DryRun, opts.Diff = true, true
	opts.Force = gs.Spec.Force
	opts.DefaultNamespace = p.as.Namespace
	opts.OwnerLabels = object.OwnerLabels(gs.Name, gs.Namespace)
	live := newListedReader(p.as.Client)
	a, err := apply.New(p.as.Config, live, opts)
	if err != nil {
		return nil, err
	}
	live.expect(desired, a.IDs(desired))
	return a, nil
}

// gitSyncPruneRails are the agent's prune rails for gs: gs as owner and
// protected, the agent's default share limit or gs's
// gitsync.dev/prune-max-share, and spec.allowEmpty. The agent's own
// Namespace and ServiceAccount are not known from a laptop, so a prune of
// the agent's footing is previewed although the agent would keep it.
func gitSyncPruneRails(gs *gitsyncv1.GitSync) (inventory.PruneOptions, error) {
	return prepare.PruneOptions(gs, prepare.Rails{MaxShare: controller.DefaultOptions().PruneMaxShare})
}

// runGitSync is `gitsync diff --gitsync`.
func (o *diffOptions) runGitSync(ctx context.Context) error {
	user, err := o.Target.Connect()
	if err != nil {
		return withExitCode(exitError, err)
	}
	p, err := newGitSyncPreview(ctx, user, o.GitSync)
	if err != nil {
		return withExitCode(exitError, err)
	}
	desired, err := p.desired(ctx, user, &o.Source, &o.Prepare)
	if err != nil {
		return withExitCode(exitError, err)
	}
	extra, err := o.Drift.rules()
	if err != nil {
		return withExitCode(exitError, err)
	}
	desired.Ignore = append(desired.Ignore, extra...)
	rep, err := p.diff(ctx, desired)
	if err != nil {
		return withExitCode(exitError, err)
	}
	return o.finish(rep)
}

// validateGitSync checks the flags --gitsync cannot be combined with.
func (o *diffOptions) validateGitSync() error {
	switch {
	case o.GitSync == "":
		return nil
	case o.Name != "":
		return errors.New("--gitsync and --name name different inventories: give one")
	case o.Watch:
		return errors.New("--watch cannot be combined with --gitsync")
	}
	return nil
}
