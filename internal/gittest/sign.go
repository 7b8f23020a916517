package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SigningKey is a throwaway key that real git signs commits and tags with:
// an OpenPGP key in its own GNUPGHOME (NewGPGKey) or an SSH key made by
// ssh-keygen (NewSSHKey).
type SigningKey struct {
	// Public is what a verifier trusts: the armored OpenPGP public key, or
	// the SSH public key line ("ssh-ed25519 AAAA… comment").
	Public string
	// Fingerprint is the OpenPGP primary key's upper-case hex fingerprint,
	// or the SSH key's "SHA256:…" fingerprint.
	Fingerprint string
	// config are git's -c settings and env the environment git signs with.
	config []string
	env    []string
	// uid is the OpenPGP key's user ID.
	uid string
}

// NewGPGKey generates an ed25519 OpenPGP signing key for uid ("Name
// <email>") without a passphrase, in a GNUPGHOME of its own whose agent is
// stopped when the test ends. It skips the test when gpg is not installed.
func NewGPGKey(t testing.TB, uid string) *SigningKey {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("gpg not installed: OpenPGP signatures cannot be made")
	}
	// A short path: gpg-agent's socket path must fit in 108 bytes.
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"GNUPGHOME=" + home}
	t.Cleanup(func() {
		kill := exec.Command("gpgconf", "--kill", "gpg-agent")
		kill.Env = append(os.Environ(), env...)
		_ = kill.Run()
		_ = os.RemoveAll(home)
	})
	gpg := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("gpg", append([]string{"--batch", "--quiet"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	gpg("--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never")
	var fpr string
	for _, line := range strings.Split(gpg("--with-colons", "--list-keys", uid), "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			fpr = f[9]
			break
		}
	}
	if fpr == "" {
		t.Fatalf("gpg made no key for %s", uid)
	}
	return &SigningKey{
		Public:      gpg("--armor", "--export", fpr),
		Fingerprint: fpr,
		config:      []string{"-c", "gpg.format=openpgp", "-c", "user.signingkey=" + fpr},
		env:         env,
		uid:         uid,
	}
}

// NewSSHKey generates an ed25519 SSH key with comment, without a
// passphrase. It skips the test when ssh-keygen is not installed.
func NewSSHKey(t testing.TB, comment string) *SigningKey {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen not installed: SSH signatures cannot be made")
	}
	path := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ssh-keygen", "-l", "-f", path+".pub").Output()
	if err != nil {
		t.Fatalf("ssh-keygen -l: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 {
		t.Fatalf("ssh-keygen -l printed %q", out)
	}
	return &SigningKey{
		Public:      strings.TrimSpace(string(pub)),
		Fingerprint: fields[1],
		config:      []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + path},
	}
}

// CommitSigned is Commit with the commit signed by key (git commit -S).
func (r *Repo) CommitSigned(msg string, files map[string]string, key *SigningKey) string {
	r.t.Helper()
	r.Write(files)
	r.Git("add", "-A")
	r.run(key.env, nil, append(key.config, "commit", "-q", "--allow-empty", "-S", "-m", msg)...)
	return r.Head()
}

// TagSigned creates the annotated tag name at the current commit, signed
// by key (git tag -s).
func (r *Repo) TagSigned(name string, key *SigningKey) {
	r.t.Helper()
	r.run(key.env, nil, append(key.config, "tag", "-s", "-m", name, name)...)
}

// TagAnnotated creates the annotated, unsigned tag name at the current
// commit.
func (r *Repo) TagAnnotated(name string) {
	r.t.Helper()
	r.Git("tag", "-a", "-m", name, name)
}

// Rewrite replaces the current branch's commit by the commit object edit
// makes of its raw text (git cat-file), written with git hash-object, and
// returns the new commit: a signature or a message tampered with after
// signing, as a hostile push would carry it.
func (r *Repo) Rewrite(edit func(raw string) string) string {
	r.t.Helper()
	raw := r.Git("cat-file", "commit", "HEAD")
	sha := r.GitInput([]byte(edit(raw+"\n")), "hash-object", "-t", "commit", "-w", "--stdin")
	r.Git("update-ref", "HEAD", sha)
	return sha
}

// SecretKeyring writes the OpenPGP key's secret key, unprotected, as a
// binary keyring (the secring.gpg `helm package --sign --keyring` reads)
// into dir, and returns its path and the name helm's --key finds it by.
func (k *SigningKey) SecretKeyring(t testing.TB, dir string) (path, name string) {
	t.Helper()
	if k.uid == "" {
		t.Fatal("SecretKeyring of a key that is not an OpenPGP key")
	}
	cmd := exec.Command("gpg", "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", "", "--export-secret-keys", k.Fingerprint)
	cmd.Env = append(os.Environ(), k.env...)
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("gpg --export-secret-keys: %v", err)
	}
	path = filepath.Join(dir, "secring.gpg")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, k.uid
}
