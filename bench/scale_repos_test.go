package bench

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"gitsync.dev/gitsync/internal/gittest"
)

// scaleRepo is one bare Git repository of the scale benchmark, served to the
// agent as a file:// URL.
type scaleRepo struct {
	url, commit string
}

// makeScaleRepos creates n bare repositories under dir, each with one commit
// on main holding objects manifests (one object per file) under deploy/.
func makeScaleRepos(b *testing.B, dir string, n, objects int) []scaleRepo {
	b.Helper()
	repos := make([]scaleRepo, n)
	for i := range repos {
		path := filepath.Join(dir, fmt.Sprintf("repo-%03d.git", i))
		gittest.NewBare(b, path)
		repo := gittest.OpenRepo(b, path)
		repo.GitInput(fastImportStream(i, objects), "fast-import", "--quiet")
		repos[i] = scaleRepo{url: "file://" + path, commit: repo.Git("rev-parse", "main")}
	}
	return repos
}

// runGit runs git in dir (internal/gittest's driver), with stdin when set.
func runGit(b *testing.B, dir string, stdin []byte, args ...string) string {
	b.Helper()
	return gittest.OpenRepo(b, dir).GitInput(stdin, args...)
}

// fastImportStream is a git fast-import stream of one commit with the
// manifests of repository repo.
func fastImportStream(repo, objects int) []byte {
	var s bytes.Buffer
	s.WriteString("commit refs/heads/main\n")
	s.WriteString("committer bench <bench@gitsync.dev> 1700000000 +0000\n")
	s.WriteString("data 6\nscale\n")
	for j := range objects {
		kind, body := scaleManifest(repo, j)
		fmt.Fprintf(&s, "M 100644 inline deploy/%s-%03d.yaml\ndata %d\n%s\n", strings.ToLower(kind), j, len(body), body)
	}
	s.WriteString("\n")
	return s.Bytes()
}

// scaleManifest is object j of repository repo, a mix close to what an
// application's config repository holds: 70 % ConfigMaps (~600 B of data),
// 10 % each Secrets, ServiceAccounts and headless Services (the test
// apiserver's service range is a /24, too small for 1,000 cluster IPs).
// Objects name no namespace: the GitSync's namespace is the default.
func scaleManifest(repo, j int) (kind, body string) {
	name := fmt.Sprintf("app-%03d-%03d", repo, j)
	labels := fmt.Sprintf("  labels:\n    app.kubernetes.io/name: app-%03d\n    app.kubernetes.io/part-of: scale\n", repo)
	switch j % 10 {
	case 7:
		return "Secret", fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n%stype: Opaque\nstringData:\n  token: token-%s\n", name, labels, name)
	case 8:
		return "ServiceAccount", fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: %s\n%s", name, labels)
	case 9:
		return "Service", fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n%sspec:\n  clusterIP: None\n"+
			"  selector:\n    app.kubernetes.io/name: %s\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n", name, labels, name)
	default:
		return "ConfigMap", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n%sdata:\n"+
			"  index: %q\n  settings.yaml: |\n    replicas: %d\n    log: info\n    payload: %s\n", name, labels, fmt.Sprint(j), j%5+1, strings.Repeat("x", 512))
	}
}
