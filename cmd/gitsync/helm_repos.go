package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source"
	"gitsync.dev/gitsync/source/chartrepo"
	"gitsync.dev/gitsync/source/helm"
	sourcerender "gitsync.dev/gitsync/source/render"
)

// helmRepoFlags say where the user's Helm configuration is, whose
// credentials the CLI downloads a chart's dependencies with, as `helm
// dependency build` would on the same machine.
type helmRepoFlags struct {
	// RepositoryConfig is Helm's repositories.yaml (credentials of HTTP
	// repositories); default $HELM_REPOSITORY_CONFIG, else Helm's.
	RepositoryConfig string
	// RegistryConfig is Helm's registry config.json (docker config of OCI
	// registries); default $HELM_REGISTRY_CONFIG, else Helm's.
	RegistryConfig string

	// gitSync are the credentials of a --gitsync GitSync's
	// spec.helm.repositories, read as the user; they come after the
	// user's own configuration.
	gitSync chartrepo.Access
}

// AddFlags registers --helm-repository-config and --helm-registry-config.
func (o *helmRepoFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.RepositoryConfig, "helm-repository-config", "", "Helm repositories.yaml whose credentials chart dependencies from http(s) repositories are downloaded with (default $HELM_REPOSITORY_CONFIG, else Helm's).")
	fs.StringVar(&o.RegistryConfig, "helm-registry-config", "", "Helm registry config (docker config.json) whose credentials chart dependencies from oci:// registries are downloaded with (default $HELM_REGISTRY_CONFIG, else Helm's).")
}

// helmConfigHome is Helm's configuration directory: $HELM_CONFIG_HOME,
// else $XDG_CONFIG_HOME/helm, else the platform's (as helm env shows it).
func helmConfigHome() string {
	if d := os.Getenv("HELM_CONFIG_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "helm")
	}
	home, _ := os.UserHomeDir()
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Preferences", "helm")
	}
	return filepath.Join(home, ".config", "helm")
}

// paths are the two files, flags first, then Helm's environment, then
// Helm's defaults.
func (o *helmRepoFlags) paths() (repos, registry string) {
	repos, registry = o.RepositoryConfig, o.RegistryConfig
	if repos == "" {
		repos = os.Getenv("HELM_REPOSITORY_CONFIG")
	}
	if repos == "" {
		repos = filepath.Join(helmConfigHome(), "repositories.yaml")
	}
	if registry == "" {
		registry = os.Getenv("HELM_REGISTRY_CONFIG")
	}
	if registry == "" {
		registry = filepath.Join(helmConfigHome(), "registry", "config.json")
	}
	return repos, registry
}

// access reads the credentials of both files; a missing file is no
// credentials, as for helm.
func (o *helmRepoFlags) access() (chartrepo.Access, error) {
	var acc chartrepo.Access
	reposFile, registryFile := o.paths()
	if data, err := os.ReadFile(reposFile); err == nil {
		var f struct {
			Repositories []struct {
				Name     string `json:"name"`
				URL      string `json:"url"`
				Username string `json:"username"`
				Password string `json:"password"`
			} `json:"repositories"`
		}
		if err := yaml.Unmarshal(data, &f); err != nil {
			return acc, fmt.Errorf("helm repository config %s: %w", reposFile, err)
		}
		for _, r := range f.Repositories {
			if r.Name != "" { // what "@NAME" in a Chart.yaml means, as for helm
				if acc.Aliases == nil {
					acc.Aliases = map[string]string{}
				}
				acc.Aliases[r.Name] = r.URL
			}
			if r.Username != "" || r.Password != "" {
				acc.Repositories = append(acc.Repositories, chartrepo.Repository{URL: r.URL, Username: r.Username, Password: r.Password})
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return acc, fmt.Errorf("helm repository config: %w", err)
	}
	if data, err := os.ReadFile(registryFile); err == nil {
		repos, err := chartrepo.DockerConfigRepositories(data)
		if err != nil {
			return acc, fmt.Errorf("helm registry config %s: %w", registryFile, err)
		}
		acc.Repositories = append(acc.Repositories, repos...)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return acc, fmt.Errorf("helm registry config: %w", err)
	}
	acc.Repositories = append(acc.Repositories, o.gitSync.Repositories...)
	for name, url := range o.gitSync.Aliases {
		if _, mine := acc.Aliases[name]; !mine { // the user's own names first
			if acc.Aliases == nil {
				acc.Aliases = map[string]string{}
			}
			acc.Aliases[name] = url
		}
	}
	return acc, nil
}

// chartCacheDir is where the CLI keeps downloaded charts, by digest.
func chartCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "gitsync", "charts")
}

// chart downloads the chart a GitSync's spec.helm.chart names, the highest
// version in its range, with the same reads and checks as the agent's.
func (o *helmRepoFlags) chart(ctx context.Context, need helm.Need, maxBytes int64) (*helm.Archive, error) {
	acc, err := o.access()
	if err != nil {
		return nil, err
	}
	f, err := chartrepo.New(chartrepo.Options{Dir: chartCacheDir(), MaxChartBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	archives, err := f.Resolve(ctx, []helm.Need{need}, acc)
	if err != nil {
		return nil, fmt.Errorf("spec.helm.chart: %w", err)
	}
	return &archives[0], nil
}

// dependencies downloads what the chart at path of root needs from chart
// repositories (nothing when charts/ holds it) and returns h with the
// archives; the same reads and checks as the agent's (source.ChartDependencies).
func (o *helmRepoFlags) dependencies(ctx context.Context, root, path string, ropts sourcerender.Options, h helm.Options) (helm.Options, error) {
	d := source.ChartDependencies{Render: ropts}
	needs, err := d.Needs(ctx, root, path)
	if err != nil || len(needs) == 0 {
		return h, err
	}
	acc, err := o.access()
	if err != nil {
		return h, err
	}
	if d.Fetcher, err = chartrepo.New(chartrepo.Options{Dir: chartCacheDir(), MaxChartBytes: ropts.MaxFileBytes}); err != nil {
		return h, err
	}
	s := sourcerender.Settings{Helm: &h, Charts: acc}
	if s, err = d.Resolve(ctx, needs, s); err != nil {
		return h, err
	}
	return *s.Helm, nil
}
