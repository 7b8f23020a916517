package diff

import "sigs.k8s.io/structured-merge-diff/v6/fieldpath"

// list compares a granular (associative or set) list under its FieldsV1 node:
// the owned elements must be exactly desired's items, each equal to a live
// item, and the live items must appear in desired's order.
func (w walker) list(dl, ll []any, node map[string]any) bool {
	elems := make([]ownedElement, 0, len(dl))
	for key, child := range node {
		if key == "." {
			continue
		}
		pe, ok := parseElement(key)
		if !ok {
			return false
		}
		c, _ := child.(map[string]any)
		elems = append(elems, ownedElement{pe: pe, node: c})
	}
	if len(elems) != len(dl) || len(elems) == 0 {
		return false
	}
	switch {
	case elems[0].pe.Key != nil:
		return w.mapList(dl, ll, elems)
	case elems[0].pe.Value != nil:
		return setList(dl, ll, elems)
	default: // index elements (i:) carry no identity we can check
		return false
	}
}

type ownedElement struct {
	pe   fieldpath.PathElement
	node map[string]any
	used bool
}

// mapList compares an associative list (k: elements).
func (w walker) mapList(dl, ll []any, elems []ownedElement) bool {
	names := keyNames(elems[0].pe)
	last := -1
	for _, item := range dl {
		dm, ok := item.(map[string]any)
		if !ok {
			return false
		}
		key, lenient, ok := w.itemKey(dm, names)
		if !ok {
			return false
		}
		el := findElement(elems, key)
		if el == nil {
			return false
		}
		at := findLiveItem(ll, key)
		if at <= last {
			return false
		}
		last = at
		if len(lenient) > 0 {
			dm = withDefaults(dm, key, lenient)
		}
		if !w.mapFields(dm, ll[at].(map[string]any), el.node, lenient) {
			return false
		}
	}
	return true
}

func keyNames(pe fieldpath.PathElement) []string {
	names := make([]string, len(*pe.Key))
	for i, f := range *pe.Key {
		names[i] = f.Name
	}
	return names
}

// itemKey returns the key values of a desired list item, filling key fields
// the server defaults; lenient names the fields so filled.
func (w walker) itemKey(item map[string]any, names []string) (map[string]any, map[string]bool, bool) {
	key := make(map[string]any, len(names))
	var lenient map[string]bool
	for _, n := range names {
		v, ok := item[n]
		if !ok {
			if v, ok = w.keyDefaults[n]; !ok {
				return nil, nil, false
			}
			if lenient == nil {
				lenient = map[string]bool{}
			}
			lenient[n] = true
		}
		key[n] = v
	}
	return key, lenient, true
}

// findElement returns the unused owned element whose key equals key and
// marks it used, so duplicate desired items cannot both match it.
func findElement(elems []ownedElement, key map[string]any) *ownedElement {
	for i := range elems {
		el := &elems[i]
		if el.used || el.pe.Key == nil || len(*el.pe.Key) != len(key) {
			continue
		}
		match := true
		for _, f := range *el.pe.Key {
			v, ok := key[f.Name]
			if !ok || !equalValues(v, f.Value.Unstructured()) {
				match = false
				break
			}
		}
		if match {
			el.used = true
			return el
		}
	}
	return nil
}

// findLiveItem returns the index of the only live item with the given key, or
// -1 when there is none or more than one.
func findLiveItem(ll []any, key map[string]any) int {
	at := -1
	for i, item := range ll {
		lm, ok := item.(map[string]any)
		if !ok {
			return -1
		}
		match := true
		for n, v := range key {
			if lv, ok := lm[n]; !ok || !equalValues(v, lv) {
				match = false
				break
			}
		}
		if match {
			if at >= 0 {
				return -1
			}
			at = i
		}
	}
	return at
}

func withDefaults(item, key map[string]any, lenient map[string]bool) map[string]any {
	out := make(map[string]any, len(item)+len(lenient))
	for k, v := range item {
		out[k] = v
	}
	for n := range lenient {
		out[n] = key[n]
	}
	return out
}

// setList compares a list of scalars merged as a set (v: elements).
func setList(dl, ll []any, elems []ownedElement) bool {
	last := -1
	for _, dv := range dl {
		found := false
		for i := range elems {
			el := &elems[i]
			if !el.used && el.pe.Value != nil && equalValues(dv, (*el.pe.Value).Unstructured()) {
				el.used, found = true, true
				break
			}
		}
		if !found {
			return false
		}
		at := -1
		for i, lv := range ll {
			if equalValues(dv, lv) {
				at = i
				break
			}
		}
		if at <= last {
			return false
		}
		last = at
	}
	return true
}
