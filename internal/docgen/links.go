package docgen

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
)

// MarkdownFiles lists the Markdown files below root, as slash paths relative
// to it, leaving out VCS, build and test-fixture directories.
func MarkdownFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "bin", ".demo", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// CheckLinks returns one error per relative link in the Markdown files
// (slash paths relative to root) that points outside root, at a file that
// does not exist, or at a heading the target page does not have. Links with
// a scheme (https:, mailto:) are not followed.
func CheckLinks(root string, files []string) []error {
	var errs []error
	pages := map[string]map[string]bool{} // anchors by page, read once
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := pages[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		pages[rel] = anchors(string(b))
		return pages[rel], nil
	}
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, line := range proseLinesNumbered(string(b)) {
			if line == "" {
				continue
			}
			for _, target := range linkTargets(line) {
				if err := checkLink(root, file, target, anchorsOf); err != nil {
					errs = append(errs, fmt.Errorf("%s:%d: link %s: %w", file, i+1, target, err))
				}
			}
		}
	}
	return errs
}

// linkTargets are the targets of the inline and reference links on a line,
// code spans left out.
func linkTargets(line string) []string {
	line = codeSpan.ReplaceAllString(line, "x")
	var out []string
	for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	if m := refLink.FindStringSubmatch(line); m != nil {
		out = append(out, m[1])
	}
	return out
}

func checkLink(root, file, target string, anchorsOf func(string) (map[string]bool, error)) error {
	if u, err := url.Parse(target); err == nil && u.Scheme != "" {
		return nil
	}
	target, fragment, _ := strings.Cut(target, "#")
	target, err := url.PathUnescape(target)
	if err != nil {
		return err
	}
	rel := file
	if target != "" {
		if strings.HasPrefix(target, "/") {
			rel = path.Clean(strings.TrimPrefix(target, "/"))
		} else {
			rel = path.Join(path.Dir(file), target)
		}
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("leaves the repository")
		}
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("no such file or directory")
		}
		if info.IsDir() && fragment != "" {
			return fmt.Errorf("an anchor on a directory")
		}
	}
	if fragment == "" || !strings.HasSuffix(rel, ".md") {
		return nil
	}
	a, err := anchorsOf(rel)
	if err != nil {
		return err
	}
	if !a[fragment] {
		return fmt.Errorf("%s has no heading #%s", rel, fragment)
	}
	return nil
}

// proseLinesNumbered is the page's lines with those inside fenced code
// blocks blanked, so indices stay line numbers.
func proseLinesNumbered(page string) []string {
	lines := strings.Split(page, "\n")
	fence := ""
	for i, line := range lines {
		t := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			lines[i] = ""
		}
	}
	return lines
}
