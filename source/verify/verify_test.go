package verify_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/source/git"
	"gitsync.dev/gitsync/source/verify"
)

// remote is a repository served by the loopback Git server, with a
// Fetcher to read it.
type remote struct {
	*gittest.Repo
	url string
	f   *git.Fetcher
}

func newRemote(t testing.TB) *remote {
	t.Helper()
	root := t.TempDir()
	r := gittest.NewRepo(t, filepath.Join(root, "repo"))
	srv := gittest.New(t, root, gittest.Options{})
	opts := git.DefaultOptions()
	opts.Dir = t.TempDir()
	f, err := git.NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &remote{Repo: r, url: srv.URL + "/repo", f: f}
}

// verifyRef resolves ref and verifies it with a fresh Verifier.
func (r *remote) verifyRef(t *testing.T, ref git.Ref, p verify.Policy) (verify.Result, error) {
	t.Helper()
	src := git.Source{URL: r.url, Ref: ref}
	rev, err := r.f.Resolve(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return verify.NewVerifier(0).Verify(context.Background(), r.f, src, rev, p)
}

func policy(mode v1.VerificationMode, data map[string]string) verify.Policy {
	keys := map[string][]byte{}
	for k, v := range data {
		keys[k] = []byte(v)
	}
	return verify.Policy{Mode: mode, Origin: "Secret/ns/keys", Keys: keys}
}

// wantRefused fails unless err is a verdict naming the revision and every
// word, and holding no key material.
func wantRefused(t *testing.T, err error, p verify.Policy, words ...string) {
	t.Helper()
	var ve *verify.Error
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a verification refusal", err)
	}
	t.Logf("refused: %v", err)
	for _, w := range append([]string{"sha1:"}, words...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	for name, v := range p.Keys {
		for _, line := range strings.Split(string(v), "\n") {
			if len(line) > 20 && strings.Contains(err.Error(), line) {
				t.Errorf("refusal %q holds a line of key %s", err, name)
			}
		}
	}
}

var main = git.Ref{Branch: "main"}

// TestOpenPGP: a commit signed by real git with a trusted gpg key verifies
// and names the key and its user ID; unsigned, signed by another key, a
// message changed after signing and a corrupted signature are refused.
func TestOpenPGP(t *testing.T) {
	alice := gittest.NewGPGKey(t, "Alice <alice@example.com>")
	mallory := gittest.NewGPGKey(t, "Mallory <mallory@example.com>")
	r := newRemote(t)
	p := policy(v1.VerifyHEAD, map[string]string{"alice.asc": alice.Public, "README": "not a key"})

	r.CommitSigned("signed", map[string]string{"a.yaml": "a: 1\n"}, alice)
	res, err := r.verifyRef(t, main, p)
	if err != nil {
		t.Fatal(err)
	}
	want := `commit: OpenPGP ` + alice.Fingerprint + ` "Alice <alice@example.com>"`
	if res.String() != want {
		t.Errorf("signer %q, want %q", res, want)
	}

	r.Commit("unsigned", map[string]string{"a.yaml": "a: 2\n"})
	_, err = r.verifyRef(t, main, p)
	wantRefused(t, err, p, "commit is not signed", "Secret/ns/keys")

	r.CommitSigned("by mallory", nil, mallory)
	_, err = r.verifyRef(t, main, p)
	wantRefused(t, err, p, "signed by OpenPGP key "+mallory.Fingerprint, "not a trusted key")

	r.CommitSigned("signed again", nil, alice)
	r.Rewrite(func(raw string) string { return strings.Replace(raw, "signed again", "signed and changed", 1) })
	_, err = r.verifyRef(t, main, p)
	wantRefused(t, err, p, "OpenPGP signature that does not verify")

	r.CommitSigned("signed once more", nil, alice)
	r.Rewrite(corruptSignature)
	_, err = r.verifyRef(t, main, p)
	wantRefused(t, err, p, "OpenPGP signature")

	r.CommitSigned("by mallory, then by alice", nil, alice)
	r.Rewrite(doubleSignature)
	_, err = r.verifyRef(t, main, p)
	wantRefused(t, err, p, "more than one signature block")
}

// doubleSignature repeats the gpgsig header's signature block inside it, as
// a second signature would be carried.
func doubleSignature(raw string) string {
	lines := strings.Split(raw, "\n")
	var block []string
	out := make([]string, 0, 2*len(lines))
	for _, l := range lines {
		out = append(out, l)
		switch {
		case strings.HasPrefix(l, "gpgsig "):
			block = []string{" " + strings.TrimPrefix(l, "gpgsig ")}
		case block != nil && strings.HasPrefix(l, " "):
			block = append(block, l)
			if strings.Contains(l, "-----END") {
				out = append(out, block...)
				block = nil
			}
		}
	}
	return strings.Join(out, "\n")
}

// corruptSignature flips one base64 character in the middle of the
// signature's last full line.
func corruptSignature(raw string) string {
	lines := strings.Split(raw, "\n")
	last := -1
	in := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "gpgsig "):
			in = true
		case in && strings.HasPrefix(l, " "):
			if len(l) > 40 {
				last = i
			}
		default:
			in = false
		}
	}
	b := []byte(lines[last])
	mid := len(b) / 2
	if b[mid] == 'A' {
		b[mid] = 'B'
	} else {
		b[mid] = 'A'
	}
	lines[last] = string(b)
	return strings.Join(lines, "\n")
}

// TestSSH: commits signed by real git with ssh-keygen keys verify against
// an allowed_signers file (its principal is the identity) and a .pub key
// (its comment); another key, a wrong namespace line and a tampered commit
// are refused.
func TestSSH(t *testing.T) {
	bob := gittest.NewSSHKey(t, "bob@laptop")
	eve := gittest.NewSSHKey(t, "eve@laptop")
	r := newRemote(t)
	allowed := policy(v1.VerifyHEAD, map[string]string{"allowed_signers": "# team\nbob@example.com namespaces=\"git\" " + bob.Public + "\n"})
	pub := policy(v1.VerifyHEAD, map[string]string{"bob.pub": bob.Public})

	r.CommitSigned("signed", map[string]string{"a.yaml": "a: 1\n"}, bob)
	for name, p := range map[string]verify.Policy{"allowed_signers": allowed, ".pub": pub} {
		res, err := r.verifyRef(t, main, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res) != 1 || res[0].Kind != verify.KindSSH || res[0].Fingerprint != bob.Fingerprint {
			t.Errorf("%s: signer %q, want SSH %s", name, res, bob.Fingerprint)
		}
	}
	if res, _ := r.verifyRef(t, main, allowed); res[0].Identity != "bob@example.com" {
		t.Errorf("allowed_signers identity %q, want the principal bob@example.com", res[0].Identity)
	}
	if res, _ := r.verifyRef(t, main, pub); res[0].Identity != "bob@laptop" {
		t.Errorf(".pub identity %q, want the comment bob@laptop", res[0].Identity)
	}

	onlyFile := policy(v1.VerifyHEAD, map[string]string{"allowed_signers": "bob@example.com namespaces=\"file\" " + bob.Public + "\n"})
	_, err := r.verifyRef(t, main, onlyFile)
	wantRefused(t, err, onlyFile, "does not allow namespace \"git\"")

	r.CommitSigned("by eve", nil, eve)
	_, err = r.verifyRef(t, main, allowed)
	wantRefused(t, err, allowed, "signed by SSH key "+eve.Fingerprint, "not a trusted key")

	r.CommitSigned("signed again", nil, bob)
	r.Rewrite(func(raw string) string { return strings.Replace(raw, "signed again", "signed and changed", 1) })
	_, err = r.verifyRef(t, main, allowed)
	wantRefused(t, err, allowed, "SSH signature that does not verify")

	r.CommitSigned("signed once more", nil, bob)
	r.Rewrite(corruptSignature)
	_, err = r.verifyRef(t, main, allowed)
	wantRefused(t, err, allowed, "SSH signature")
}

// TestTag: mode Tag verifies the annotated tag a tag or semver ref names,
// TagAndHEAD the tag and its commit; a lightweight or unsigned tag is
// refused, and a branch ref cannot be verified by tag.
func TestTag(t *testing.T) {
	bob := gittest.NewSSHKey(t, "bob@laptop")
	alice := gittest.NewGPGKey(t, "Alice <alice@example.com>")
	r := newRemote(t)
	keys := map[string]string{"bob.pub": bob.Public, "alice.asc": alice.Public}
	tag, both := policy(v1.VerifyTag, keys), policy(v1.VerifyTagAndHEAD, keys)

	r.Commit("unsigned", map[string]string{"a.yaml": "a: 1\n"})
	r.TagSigned("v1.0.0", bob)
	res, err := r.verifyRef(t, git.Ref{Tag: "v1.0.0"}, tag)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.String(); got != `tag v1.0.0: SSH `+bob.Fingerprint+` "bob@laptop"` {
		t.Errorf("signer %q, want the tag's", got)
	}
	_, err = r.verifyRef(t, git.Ref{Tag: "v1.0.0"}, both)
	wantRefused(t, err, both, "commit is not signed")

	r.CommitSigned("signed", nil, alice)
	r.TagSigned("v1.1.0", bob)
	res, err = r.verifyRef(t, git.Ref{Semver: "~1.1"}, both)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Object != "tag v1.1.0" || res[1].Object != "commit" || res[1].Fingerprint != alice.Fingerprint {
		t.Errorf("signers %q, want tag v1.1.0 by bob then the commit by alice", res)
	}

	r.Tag("v1.2.0")
	_, err = r.verifyRef(t, git.Ref{Tag: "v1.2.0"}, tag)
	wantRefused(t, err, tag, "tag v1.2.0 is a lightweight tag")
	r.TagAnnotated("v1.3.0")
	_, err = r.verifyRef(t, git.Ref{Tag: "v1.3.0"}, tag)
	wantRefused(t, err, tag, "tag v1.3.0 is not signed")

	if err := tag.Check(main); !errors.Is(err, git.ErrInvalidSource) {
		t.Errorf("mode Tag with a branch: %v, want an invalid source", err)
	}
}

// countingObjects counts the reads of signed objects.
type countingObjects struct {
	verify.Objects
	reads atomic.Int32
	fail  error
}

func (c *countingObjects) Signed(ctx context.Context, src git.Source, rev git.Revision, tag bool) (git.Signed, error) {
	c.reads.Add(1)
	if c.fail != nil {
		return git.Signed{}, c.fail
	}
	return c.Objects.Signed(ctx, src, rev, tag)
}

// TestMemo: a revision verified (or refused) once is not read again for
// the same keys; new keys verify again; a failed read is not remembered.
func TestMemo(t *testing.T) {
	alice := gittest.NewGPGKey(t, "Alice <alice@example.com>")
	r := newRemote(t)
	r.CommitSigned("signed", map[string]string{"a.yaml": "a: 1\n"}, alice)
	src := git.Source{URL: r.url, Ref: main}
	ctx := context.Background()
	rev, err := r.f.Resolve(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	objs := &countingObjects{Objects: r.f}
	v := verify.NewVerifier(0)
	trusted := policy(v1.VerifyHEAD, map[string]string{"alice.asc": alice.Public})
	other := policy(v1.VerifyHEAD, map[string]string{"other.pub": gittest.NewSSHKey(t, "x").Public})

	objs.fail = errors.New("remote unreachable")
	if _, err := v.Verify(ctx, objs, src, rev, trusted); err == nil || errors.As(err, new(*verify.Error)) {
		t.Fatalf("failed read: %v, want the read's error", err)
	}
	objs.fail = nil
	for range 3 {
		if _, err := v.Verify(ctx, objs, src, rev, trusted); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(ctx, objs, src, rev, other); !errors.As(err, new(*verify.Error)) {
			t.Fatalf("other keys: %v, want a refusal", err)
		}
	}
	if n := objs.reads.Load(); n != 3 {
		t.Errorf("%d reads of the objects, want 3 (the failed one, then one per set of keys)", n)
	}
}

// TestParseKeys: a Secret without a trusted key or with one that does not
// parse is refused naming the data key, never its content.
func TestParseKeys(t *testing.T) {
	for name, tc := range map[string]struct {
		data map[string]string
		want string
	}{
		"no keys":      {map[string]string{"token": "s3cr3t-value-123"}, `holds no trusted key`},
		"bad armor":    {map[string]string{"a.asc": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnot base64 s3cr3t-value-123\n-----END PGP PUBLIC KEY BLOCK-----\n"}, `key "a.asc": not an armored OpenPGP public key`},
		"no armor":     {map[string]string{"a.asc": "s3cr3t-value-123"}, `key "a.asc": no armored OpenPGP public key`},
		"bad ssh line": {map[string]string{"allowed_signers": "\n\nbob@example.com ssh-ed25519 s3cr3t-value-123\n"}, `key "allowed_signers": line 3: not an SSH public key`},
		"ca":           {map[string]string{"allowed_signers": "*@example.com cert-authority ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKB5RDy9Q6bIVeXfZ7Bxnyq7o+p9wAoe9n4y5FTl1gqq s3cr3t-value-123\n"}, `cert-authority is not supported`},
	} {
		t.Run(name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tc.data {
				data[k] = []byte(v)
			}
			_, err := verify.ParseKeys("Secret/ns/keys", data)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Secret/ns/keys") {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q holds the Secret's content", err)
			}
		})
	}
}
