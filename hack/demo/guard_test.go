package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWorkCopy: the work copy may be discarded while it holds only the
// demo's own story; an edit or a commit of yours stops a new run.
func TestCheckWorkCopy(t *testing.T) {
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	dir := t.TempDir()
	if err := checkWorkCopy(filepath.Join(dir, "work", "guestbook")); err != nil {
		t.Fatalf("no work copy yet: %v", err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "app.yaml"), []byte("replicas: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := newRepo(dir, "http://127.0.0.1:1/git", "guestbook", src)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.edit("app.yaml", "replicas: 2", "replicas: 3", "The demo's own change"); err != nil {
		t.Fatal(err)
	}
	if err := recordDemoHead(r); err != nil {
		t.Fatal(err)
	}
	if err := checkWorkCopy(r.work); err != nil {
		t.Fatalf("only the demo's commits: %v", err)
	}

	if err := os.WriteFile(filepath.Join(r.work, "app.yaml"), []byte("replicas: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = checkWorkCopy(r.work)
	if err == nil || !strings.Contains(err.Error(), "uncommitted changes") || !strings.Contains(err.Error(), "app.yaml") {
		t.Fatalf("an uncommitted edit: %v", err)
	}
	if err := git(r.work, "commit", "-qam", "Mine, not pushed"); err != nil {
		t.Fatal(err)
	}
	err = checkWorkCopy(r.work)
	if err == nil || !strings.Contains(err.Error(), "Mine, not pushed") || !strings.Contains(err.Error(), "bin/demo up --force") {
		t.Fatalf("an unpushed commit: %v", err)
	}
	if err := git(r.work, "push", "-q"); err != nil {
		t.Fatal(err)
	}
	if err := checkWorkCopy(r.work); err == nil {
		t.Fatal("a pushed commit of yours: the demo's Git server is recreated too, so it must be kept")
	}
}
