package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// demoHeadFile records, in the work copy's .git, the last commit the demo
// itself made, so a later run can tell the demo's history from yours.
const demoHeadFile = "gitsync-demo-head"

// recordDemoHead notes r's head as the demo's own last commit.
func recordDemoHead(r *repo) error {
	return os.WriteFile(filepath.Join(r.work, ".git", demoHeadFile), []byte(r.head+"\n"), 0o644)
}

// checkWorkCopy refuses to go on when the work copy holds something of
// yours that starting again would discard: edits not committed, or commits
// the demo did not make (pushed or not: the demo's Git server is recreated
// too). A missing work copy, or one holding only the demo's story, is fine.
func checkWorkCopy(work string) error {
	if _, err := os.Stat(filepath.Join(work, ".git")); err != nil {
		return nil
	}
	out := func(args ...string) string {
		b, _ := exec.Command("git", append([]string{"-C", work}, args...)...).Output()
		return strings.TrimSpace(string(b))
	}
	var found []string
	if s := out("status", "--porcelain"); s != "" {
		found = append(found, "uncommitted changes:\n"+indent(s))
	}
	demoHead, _ := os.ReadFile(filepath.Join(work, ".git", demoHeadFile))
	since := strings.TrimSpace(string(demoHead))
	if since == "" {
		since = "origin/main" // no record: at least keep what was never pushed
	}
	if s := out("log", "--oneline", since+"..HEAD"); s != "" {
		found = append(found, "commits the demo did not make:\n"+indent(s))
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("%s holds work of yours that starting the demo again would discard:\n%s\n"+
		"Keep it (copy the directory, or push it to a repository of yours), then run `bin/demo up --force` to start again anyway", work, strings.Join(found, "\n"))
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
