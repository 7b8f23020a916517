package helm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmignore "helm.sh/helm/v3/pkg/ignore"
)

// ChartFile is the file that makes a directory a chart.
const ChartFile = "Chart.yaml"

// maxLinkDepth bounds how many symlinked directories one path may pass
// through, so a link to its own parent cannot loop.
const maxLinkDepth = 8

// load reads the chart at dir through files and builds it in memory, as
// Helm's directory loader would but without leaving the repository: the
// chart's .helmignore (and Helm's default of dot files in templates/) is
// honoured, and every dependency must be vendored in charts/.
func load(ctx context.Context, files Files, dir string) (*chart.Chart, error) {
	rules := helmignore.Empty()
	if data, err := readIfExists(ctx, files, path.Join(dir, helmignore.HelmIgnore)); err != nil {
		return nil, err
	} else if data != nil {
		if rules, err = helmignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, &Error{Path: path.Join(dir, helmignore.HelmIgnore), Detail: "invalid rules", Err: err}
		}
	}
	rules.AddDefaults()

	l := &chartLoader{ctx: ctx, files: files, top: dir, rules: rules}
	if err := l.walk(dir, 0); err != nil {
		return nil, err
	}
	c, err := loader.LoadFiles(l.out)
	if err != nil {
		return nil, &Error{Path: dir, Detail: "chart not loadable", Err: err}
	}
	if err := checkDependencies(c); err != nil {
		return nil, &Error{Path: dir, Detail: err.Error()}
	}
	return c, nil
}

// chartLoader collects a chart directory's files.
type chartLoader struct {
	ctx   context.Context
	files Files
	top   string
	rules *helmignore.Rules
	out   []*loader.BufferedFile
}

// walk adds every file below dir that .helmignore keeps. links counts the
// symlinked directories on the way.
func (l *chartLoader) walk(dir string, links int) error {
	entries, err := l.files.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := l.ctx.Err(); err != nil {
			return err
		}
		name := path.Join(dir, e.Name())
		fi, err := l.files.Stat(name) // follows a link, inside the root only
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(name, l.top+"/")
		if l.top == "." {
			rel = name
		}
		if l.rules.Ignore(rel, fi) {
			continue
		}
		isLink := e.Type()&fs.ModeSymlink != 0
		switch {
		case fi.IsDir() && isLink && links >= maxLinkDepth:
			return &Error{Path: name, Detail: fmt.Sprintf("more than %d symlinked directories deep", maxLinkDepth)}
		case fi.IsDir() && isLink:
			err = l.walk(name, links+1)
		case fi.IsDir():
			err = l.walk(name, links)
		case fi.Mode().IsRegular():
			err = l.add(name, rel)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// add reads one file into the chart, under its path relative to the chart.
func (l *chartLoader) add(name, rel string) error {
	data, err := l.files.ReadFile(l.ctx, name)
	if err != nil {
		return err
	}
	l.out = append(l.out, &loader.BufferedFile{Name: rel, Data: data})
	return nil
}

// readIfExists reads name, or returns nil, nil if there is no such file.
func readIfExists(ctx context.Context, files Files, name string) ([]byte, error) {
	if _, err := files.Stat(name); err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return files.ReadFile(ctx, name)
}

// checkDependencies refuses a chart whose Chart.yaml names a dependency that
// is not vendored under charts/: gitsync never downloads one, and Helm would
// otherwise render the chart without it. Like Helm, only the top chart's
// list is checked.
func checkDependencies(c *chart.Chart) error {
	have := map[string]bool{}
	for _, sub := range c.Dependencies() {
		have[sub.Name()] = true
	}
	var missing []string
	for _, d := range c.Metadata.Dependencies {
		if d != nil && !have[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("dependencies %s are not in charts/; gitsync does not download charts: run `helm dependency build` and commit charts/",
			strings.Join(missing, ", "))
	}
	return nil
}
