package postrender

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"

	"gitsync.dev/gitsync/source/budget"
)

// A patch is tenant input and runs before its output can be counted, so it
// is bounded before it runs: its text may not use YAML aliases (a few
// hundred bytes could expand to gigabytes while kustomize reads it), and a
// JSON 6902 patch's worst case is worked out per target. Each copy may
// double a document, each add or replace adds its value; a patch whose
// worst case passes what is left of the budget is refused unapplied.

// checkAliases refuses patch text holding YAML anchors or aliases.
func checkAliases(patch string) error {
	dec := yaml3.NewDecoder(bytes.NewReader([]byte(patch)))
	for {
		var n yaml3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &Error{Detail: "is not valid YAML", Err: err}
		}
		if hasAlias(&n) {
			return &Error{Detail: "uses YAML anchors or aliases, which patches may not"}
		}
	}
}

func hasAlias(n *yaml3.Node) bool {
	if n.Kind == yaml3.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

// jsonOp is what the bound needs of one JSON 6902 operation.
type jsonOp struct {
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value"`
}

// checkGrowth refuses a JSON 6902 patch whose worst-case growth of any of
// targets passes what b has left. A strategic-merge patch adds at most its
// own size, which the API caps, and is not bounded here.
func checkGrowth(patch string, targets []*resource.Resource, b *budget.Budget) error {
	if b == nil {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(patch))
	if err != nil {
		return err
	}
	var ops []jsonOp
	if err := json.Unmarshal(j, &ops); err != nil {
		return nil // not a list of operations: kustomize says why
	}
	left := b.Limits().OutputBytes - b.Used()
	for _, r := range targets {
		raw, err := r.MarshalJSON()
		if err != nil {
			return err
		}
		orig := int64(len(raw))
		size := orig
		for _, op := range ops {
			switch op.Op {
			case "copy":
				size *= 2
			case "add", "replace":
				size += int64(len(op.Value))
			}
			if size-orig > left {
				return &budget.ExceededError{Stage: budget.StagePostRender, Resource: budget.Output, Limit: b.Limits().OutputBytes}
			}
		}
	}
	return nil
}
