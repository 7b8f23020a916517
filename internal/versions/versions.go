// Package versions picks the highest of named versions that satisfy a
// semver range: a Git tag for spec.source.ref.semver, an OCI tag, a Helm
// chart version from an index or a registry. One rule for all of them, so
// the same names and range always pick the same one.
package versions

import "github.com/Masterminds/semver/v3"

// Highest returns the index in names of the highest version satisfying c,
// or -1 when none does. version turns a name into the text parsed as a
// version (nil: the name itself); names that do not parse are skipped.
// Equal versions ("v1.0.0" and "1.0.0") go to the lexically smaller name,
// so the choice never depends on the order names came in.
func Highest(names []string, c *semver.Constraints, version func(string) string) int {
	best := -1
	var bestV *semver.Version
	for i, n := range names {
		text := n
		if version != nil {
			text = version(n)
		}
		v, err := semver.NewVersion(text)
		if err != nil || !c.Check(v) {
			continue
		}
		if best >= 0 {
			if d := v.Compare(bestV); d < 0 || (d == 0 && n >= names[best]) {
				continue
			}
		}
		best, bestV = i, v
	}
	return best
}
