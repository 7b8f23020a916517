package helm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
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
// honoured. A dependency charts/ does not hold is added as `helm dependency
// build` would add it: a file:// one from its directory in the repository,
// one of a chart repository from archives (downloaded by the caller); any
// still missing is an error.
func load(ctx context.Context, files Files, dir string, archives []Archive) (*chart.Chart, error) {
	out, err := chartFiles(ctx, files, dir)
	if err != nil {
		return nil, err
	}
	c, err := loader.LoadFiles(out)
	if err != nil {
		return nil, &Error{Path: dir, Detail: "chart not loadable", Err: err}
	}
	missing := missingDependencies(c)
	if len(missing) == 0 {
		return c, nil
	}
	added, err := addDependencies(ctx, files, dir, missing, archives)
	if err != nil {
		return nil, err
	}
	if len(added) > 0 {
		if c, err = loader.LoadFiles(append(out, added...)); err != nil {
			return nil, &Error{Path: dir, Detail: "chart not loadable with its dependencies", Err: err}
		}
	}
	if err := checkDependencies(c); err != nil {
		return nil, &Error{Path: dir, Detail: err.Error()}
	}
	return c, nil
}

// chartFiles reads every file of the chart at dir that its .helmignore
// keeps, named relative to dir. An archive under charts/ is unpacked within
// the render's caps first (checkArchive).
func chartFiles(ctx context.Context, files Files, dir string) ([]*loader.BufferedFile, error) {
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
	for _, f := range l.out {
		if isChartArchive(f.Name) {
			if err := checkArchive(files, path.Join(dir, f.Name), f.Data, 0); err != nil {
				return nil, err
			}
		}
	}
	return l.out, nil
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

// missingDependencies are the entries of c's Chart.yaml that no chart
// under charts/ has the name of. Like Helm, only the top chart's list is
// read.
func missingDependencies(c *chart.Chart) []*chart.Dependency {
	have := map[string]bool{}
	for _, sub := range c.Dependencies() {
		have[sub.Name()] = true
	}
	var missing []*chart.Dependency
	for _, d := range c.Metadata.Dependencies {
		if d != nil && !have[d.Name] {
			missing = append(missing, d)
		}
	}
	return missing
}

// checkDependencies refuses a chart whose Chart.yaml names a dependency
// that is neither in charts/ nor was added: Helm would otherwise render the
// chart without it.
func checkDependencies(c *chart.Chart) error {
	var names []string
	for _, d := range missingDependencies(c) {
		if !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	if len(names) > 0 {
		return fmt.Errorf("dependencies %s are not in charts/ and were not downloaded (a dependency needs a file://, http(s):// or oci:// repository or a named alias, or the chart in charts/)",
			strings.Join(names, ", "))
	}
	return nil
}
