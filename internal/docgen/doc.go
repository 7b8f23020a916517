// Package docgen renders the reference pages under docs/reference from the
// code they describe, and checks the links between the Markdown pages.
//
//   - APIReference reads the Go types of an API package (go/ast only: field
//     names from json tags, Go types, doc comments, kubebuilder markers) and
//     renders the GitSync API reference.
//   - CLIReference walks a cobra command tree and renders every available
//     command: usage, short and long text, examples, flags with defaults.
//   - CheckLinks finds relative links in Markdown files that point at no file
//     or no heading.
//   - CheckPage compares a checked-in page with a fresh render in a test, and
//     rewrites it when GITSYNC_UPDATE_DOCS is set (`make docs`).
//
// Output is deterministic: it depends on the source alone, never on the
// machine, the user, the clock or the environment, so a page that differs
// from a fresh render is stale, not unlucky. The package never reaches the
// network, and writes only the page CheckPage is told to update.
package docgen
