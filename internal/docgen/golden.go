package docgen

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// UpdateEnv is the environment variable that makes CheckPage rewrite the
// page instead of comparing it (`make docs` sets it).
const UpdateEnv = "GITSYNC_UPDATE_DOCS"

// CheckPage fails t unless the file at path holds exactly fresh, the page as
// rendered now from the code. With UpdateEnv set it writes fresh to path
// instead. name is how the failure message names the page.
func CheckPage(t testing.TB, path, name string, fresh []byte) {
	t.Helper()
	if os.Getenv(UpdateEnv) != "" {
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, fresh) {
			return
		}
		if err := os.WriteFile(path, fresh, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", name)
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v: run `make docs` to generate it", name, err)
		return
	}
	if !bytes.Equal(old, fresh) {
		t.Errorf("%s is stale: run `make docs` and commit the result (-checked-in +fresh):\n%s",
			name, cmp.Diff(strings.Split(string(old), "\n"), strings.Split(string(fresh), "\n")))
	}
}
