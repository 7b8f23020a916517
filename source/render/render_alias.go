package render

import (
	"bytes"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// checkAliasExpansion refuses a YAML document whose anchors and aliases
// expand to more than maxNodes nodes. go-yaml's own guard ("excessive
// aliasing") only trips after about 400,000 alias-driven decodes per document,
// roughly 100 MB of allocations; this bound is counted on the parsed tree,
// where aliases are still pointers, so nothing is expanded to measure it.
// A document without '*' cannot contain an alias and is not parsed here.
func checkAliasExpansion(doc []byte, maxNodes int) error {
	if bytes.IndexByte(doc, '*') < 0 {
		return nil
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc, &root); err != nil {
		// Not this check's business: the decoder reports syntax errors.
		return nil
	}
	c := aliasCounter{limit: maxNodes, memo: map[*yamlv3.Node]int{}}
	if n := c.count(&root, 0); n > maxNodes {
		return fmt.Errorf("document expands to more than %d nodes through aliases", maxNodes)
	}
	return nil
}

// aliasCounter counts nodes with aliases expanded, memoised per node so the
// count itself stays linear in the size of the tree, and stopping once the
// limit is passed.
type aliasCounter struct {
	limit int
	memo  map[*yamlv3.Node]int
}

// inProgress marks a node being counted, to detect an alias to an ancestor.
const inProgress = -1

func (c *aliasCounter) count(n *yamlv3.Node, depth int) int {
	if n == nil {
		return 0
	}
	if v, ok := c.memo[n]; ok {
		if v == inProgress {
			return c.limit + 1 // a cycle expands without end
		}
		return v
	}
	if depth > 10_000 {
		return c.limit + 1
	}
	c.memo[n] = inProgress
	total := 1
	if n.Kind == yamlv3.AliasNode {
		total += c.count(n.Alias, depth+1)
	}
	for _, child := range n.Content {
		total += c.count(child, depth+1)
		if total > c.limit {
			break
		}
	}
	c.memo[n] = total
	return total
}
