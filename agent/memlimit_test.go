package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeCgroupRoot writes files (path relative to the root → content) under
// a new directory standing for "/".
func fakeCgroupRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestGoMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	noEnv := func(string) (string, bool) { return "", false }
	cases := []struct {
		name      string
		files     map[string]string
		env       func(string) (string, bool)
		wantSoft  int64
		wantLimit int64
		wantErr   bool
	}{{
		name: "v2 container with its own cgroup namespace",
		files: map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "536870912\n",
		},
		wantSoft: 512 * mib * 9 / 10, wantLimit: 512 * mib,
	}, {
		name: "v2 without a limit",
		files: map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		},
	}, {
		name: "v2 host path: the parent's smaller limit applies",
		files: map[string]string{
			"proc/self/cgroup":                           "0::/kubepods/pod1/ctr\n",
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "max\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":     "268435456\n",
			"sys/fs/cgroup/kubepods/memory.max":          "1073741824\n",
		},
		wantSoft: 256 * mib * 9 / 10, wantLimit: 256 * mib,
	}, {
		name: "v1 (hybrid host: the memory controller is in v1)",
		files: map[string]string{
			"proc/self/cgroup": "4:memory:/box/1\n1:cpu:/\n0::/\n",
			"sys/fs/cgroup/memory/box/1/memory.limit_in_bytes": "104857600\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":       "9223372036854771712\n",
		},
		wantSoft: 100 * mib * 9 / 10, wantLimit: 100 * mib,
	}, {
		name: "v1 unlimited",
		files: map[string]string{
			"proc/self/cgroup":                           "4:cpu,memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		},
	}, {
		name:  "no cgroup files mounted",
		files: map[string]string{"proc/self/cgroup": "0::/\n"},
	}, {
		name:    "no /proc/self/cgroup",
		files:   map[string]string{},
		wantErr: true,
	}, {
		name: "garbage in the limit file",
		files: map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "lots\n",
		},
		wantErr: true,
	}, {
		name: "GOMEMLIMIT set: left to the runtime",
		files: map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "536870912\n",
		},
		env: func(k string) (string, bool) { return "300MiB", k == "GOMEMLIMIT" },
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = noEnv
			}
			soft, limit, err := goMemoryLimit(fakeCgroupRoot(t, tc.files), env)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if soft != tc.wantSoft || limit != tc.wantLimit {
				t.Errorf("goMemoryLimit = soft %d, cgroup %d; want %d, %d", soft, limit, tc.wantSoft, tc.wantLimit)
			}
		})
	}
}

func TestAgentShare(t *testing.T) {
	const mi = 1 << 20
	for _, tt := range []struct {
		name                          string
		soft, limit, children, wantMi int64
	}{
		{name: "the chart's defaults: two children of 128 MiB in 512 MiB", soft: 460 * mi, limit: 512 * mi, children: 256 * mi, wantMi: 204},
		{name: "no children", soft: 460 * mi, limit: 512 * mi, children: 0, wantMi: 460},
		{name: "children larger than the container: a quarter", soft: 460 * mi, limit: 512 * mi, children: 1024 * mi, wantMi: 128},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := agentShare(tt.soft, tt.limit, tt.children) / mi; got != tt.wantMi {
				t.Errorf("agentShare = %d MiB, want %d", got, tt.wantMi)
			}
		})
	}
}
