package diff

import "math"

// equalValues compares two JSON-shaped values exactly as they would be sent:
// maps by keys and values, lists in order, numbers by their JSON form (an
// integral float64 below 2^53, which encoding/json writes as an integer,
// equals that integer; the unstructured JSON decoder yields int64 where
// encoding/json and sigs.k8s.io/yaml yield float64).
func equalValues(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equalValues(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalValues(a[i], b[i]) {
				return false
			}
		}
		return true
	case string:
		b, ok := b.(string)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	ai, aInt := asInt(a)
	bi, bInt := asInt(b)
	if aInt && bInt {
		return ai == bi
	}
	af, aFloat := a.(float64)
	bf, bFloat := b.(float64)
	switch {
	case aFloat && bFloat:
		return af == bf
	case aFloat && bInt:
		return integral(af) && int64(af) == bi
	case aInt && bFloat:
		return integral(bf) && int64(bf) == ai
	}
	return false
}

// integral reports whether encoding/json writes f as an exact integer.
func integral(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1<<53
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int16:
		return int64(v), true
	case int8:
		return int64(v), true
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	}
	return 0, false
}
