package testcharts

import (
	"embed"
	"io/fs"
	"path"
	"slices"
)

//go:embed all:testdata
var charts embed.FS

// Podinfo and Traefik name the charts.
const (
	Podinfo = "podinfo"
	Traefik = "traefik"
)

// Names lists every chart, sorted.
func Names() []string {
	entries, err := fs.ReadDir(charts, "testdata")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// Files returns the chart's files, each path ("/"-separated) below prefix
// mapped to its content, ready for a test to write into a work tree or a
// repository. It panics on a name Names does not list.
func Files(name, prefix string) map[string]string {
	root := path.Join("testdata", name)
	out := map[string]string{}
	err := fs.WalkDir(charts, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := charts.ReadFile(p)
		if err != nil {
			return err
		}
		rel := p[len(root)+1:]
		out[path.Join(prefix, rel)] = string(data)
		return nil
	})
	if err != nil || len(out) == 0 {
		panic("testcharts: no chart " + name)
	}
	return out
}
