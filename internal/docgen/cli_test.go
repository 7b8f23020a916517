package docgen

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func fixtureTree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "Do things"}
	root.PersistentFlags().StringP("namespace", "n", "", "Namespace to use.")
	run := &cobra.Command{
		Use:   "run [DIR]",
		Short: "Run it",
		Long: `Run it, with $HOME and *stars* kept literal.

Outputs:
  + created
  - pruned
Done.`,
		Example: "  # Run\n  tool run ./x",
		Run:     func(*cobra.Command, []string) {},
	}
	run.Flags().Int("workers", 4, "How many `N` workers.")
	run.Flags().Duration("timeout", 5*time.Minute, "How long.")
	run.Flags().Bool("force", false, "Force it.")
	run.Flags().String("cache-dir", "", "Cache (default: the user cache dir).")
	run.Flags().String("old", "", "Old.")
	_ = run.Flags().MarkDeprecated("old", "use --new")
	hidden := &cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(run, hidden)
	return root
}

// TestCLIReferenceFixture: each command, its texts and flags reach the page;
// hidden commands and deprecated flags do not.
func TestCLIReferenceFixture(t *testing.T) {
	page := string(CLIReference(fixtureTree(), "fixture"))
	for _, tc := range []struct{ name, want string }{
		{"index", "  - [tool run](#tool-run) — Run it\n"},
		{"heading and short", "## tool run\n\nRun it.\n"},
		{"usage line", "```\ntool run [DIR] [flags]\n```"},
		{"prose escaped", "Run it, with \\$HOME and \\*stars\\* kept literal."},
		{"indented lines preformatted", "Outputs:\n\n```\n+ created\n- pruned\n```\n\nDone."},
		{"examples dedented", "```sh\n# Run\ntool run ./x\n```"},
		{"default shown with its varname", "| `--workers N` | `4` | How many N workers. |"},
		{"duration default", "| `--timeout duration` | `5m0s` | How long. |"},
		{"zero defaults blank", "| `--force` |  | Force it. |"},
		{"empty string default blank", "| `--cache-dir string` |  | Cache (default: the user cache dir). |"},
		{"global flags once", "## Global flags\n\nTaken by every command.\n\n| Flag | Default | Description |\n|---|---|---|\n| `-n, --namespace string` |  | Namespace to use. |\n"},
	} {
		if !strings.Contains(page, tc.want) {
			t.Errorf("%s: page lacks %q:\n%s", tc.name, tc.want, page)
		}
	}
	for _, absent := range []string{"secret", "--old", "| `-h, --help`"} {
		if strings.Contains(page, absent) {
			t.Errorf("page contains %q:\n%s", absent, page)
		}
	}
	if strings.Contains(page, "\n\n\n") || !strings.HasSuffix(page, "|\n") {
		t.Errorf("page has runs of blank lines or a ragged end:\n%q", page)
	}
	if again := string(CLIReference(fixtureTree(), "fixture")); again != page {
		t.Error("two renders of one tree differ")
	}
}
