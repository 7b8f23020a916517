package diff

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fieldComparer compares one top-level desired field with the live object
// under the root FieldsV1 node, for fields a kind stores differently from how
// they are applied.
type fieldComparer func(desired any, live, fields map[string]any) bool

// kindFields holds the per-kind exceptions to the generic comparison; every
// other field of every kind is compared generically.
var kindFields = map[schema.GroupKind]map[string]fieldComparer{
	{Kind: "Secret"}: {"stringData": secretStringData},
}

// secretStringData compares a Secret's applied stringData, which the server
// merges into data and does not store, with the base64-decoded live data.
func secretStringData(desired any, live, fields map[string]any) bool {
	dm, ok := desired.(map[string]any)
	node, owned := fields["f:stringData"].(map[string]any)
	if !ok || !owned || len(dm) == 0 {
		return false
	}
	data, _ := live["data"].(map[string]any)
	for k, dv := range dm {
		child, owned := node["f:"+k].(map[string]any)
		s, isString := dv.(string)
		enc, inData := data[k].(string)
		if !owned || hasChildren(child) || !isString || !inData {
			return false
		}
		dec, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || string(dec) != s {
			return false
		}
	}
	return ownedSubsetOf(node, dm)
}
