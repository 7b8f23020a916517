package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"gitsync.dev/gitsync/source/helm"
	"gitsync.dev/gitsync/source/render"
)

// request is what the parent asks a child to render.
type request struct {
	Root, Path string
	Options    render.Options
}

// requestJSON is a request on the wire: Helm values travel with their
// number types (values.go), since a template prints int64 1000000 and
// float64 1e+06 differently.
type requestJSON struct {
	Root, Path string
	Options    render.Options
	Values     json.RawMessage `json:",omitempty"`
}

func (r request) encode() ([]byte, error) {
	w := requestJSON{Root: r.Root, Path: r.Path, Options: r.Options}
	if h := r.Options.Settings.Helm; h != nil {
		hc := *h
		if hc.Values != nil {
			v, err := encodeValues(hc.Values)
			if err != nil {
				return nil, fmt.Errorf("helm values encode failed: %w", err)
			}
			w.Values, hc.Values = v, nil
		}
		w.Options.Settings.Helm = &hc
	}
	return json.Marshal(w)
}

func decodeRequest(r io.Reader) (request, error) {
	var w requestJSON
	if err := json.NewDecoder(r).Decode(&w); err != nil {
		return request{}, err
	}
	req := request{Root: w.Root, Path: w.Path, Options: w.Options}
	if len(w.Values) > 0 {
		if req.Options.Settings.Helm == nil {
			req.Options.Settings.Helm = &helm.Options{}
		}
		v, err := decodeValues(w.Values)
		if err != nil {
			return request{}, err
		}
		req.Options.Settings.Helm.Values = v
	}
	return req, nil
}

// frame is one line of a child's answer: an object, then the SOPS files and
// the digest, or an error; Done ends a complete answer.
type frame struct {
	Object json.RawMessage            `json:"o,omitempty"`
	Origin string                     `json:"g,omitempty"` // with Options.Origins
	SOPS   map[string]render.SOPSFile `json:"s,omitempty"`
	Digest string                     `json:"d,omitempty"`
	Err    *render.Error              `json:"e,omitempty"`
	Other  string                     `json:"x,omitempty"` // an error of no render class
	Done   bool                       `json:"z,omitempty"`
}

// writeAnswer streams the outcome of one render, one frame per line.
func writeAnswer(w io.Writer, r *render.Rendered, err error) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err != nil {
		f := frame{Done: true}
		var re *render.Error
		if errors.As(err, &re) {
			f.Err = re
		} else {
			f.Other = err.Error()
		}
		if err := enc.Encode(f); err != nil {
			return err
		}
		return bw.Flush()
	}
	for i, o := range r.Objects {
		b, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		f := frame{Object: b}
		if i < len(r.Origins) {
			f.Origin = r.Origins[i]
		}
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	if err := enc.Encode(frame{SOPS: r.SOPS, Digest: r.Digest, Done: true}); err != nil {
		return err
	}
	return bw.Flush()
}

// errIncomplete is an answer that ended before its last frame: the child
// died while answering.
var errIncomplete = errors.New("render child's answer ended early")

// readAnswer reads a child's answer from r, which the caller charges to the
// output budget: a read over it fails, and then the answer with it. The
// second error is the render's own outcome.
func readAnswer(r io.Reader) (*render.Rendered, error, error) {
	dec := json.NewDecoder(r)
	out := &render.Rendered{Objects: []*unstructured.Unstructured{}}
	var origins []string
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil, errIncomplete
			}
			return nil, nil, err
		}
		if f.Object != nil {
			var m map[string]any
			if err := utiljson.Unmarshal(f.Object, &m); err != nil {
				return nil, nil, fmt.Errorf("render child's answer invalid: %w", err)
			}
			out.Objects = append(out.Objects, &unstructured.Unstructured{Object: m})
			origins = append(origins, f.Origin)
		}
		if !f.Done {
			continue
		}
		switch {
		case f.Err != nil:
			return nil, f.Err, nil
		case f.Other != "":
			return nil, errors.New(f.Other), nil
		}
		out.SOPS, out.Digest = f.SOPS, f.Digest
		if slices.ContainsFunc(origins, func(o string) bool { return o != "" }) {
			out.Origins = origins
		}
		return out, nil, nil
	}
}

// encodeValues writes Helm values as JSON in which every float64 has a
// fraction or an exponent and no integer has, so decodeValues gives each
// number its type back.
func encodeValues(v map[string]any) (json.RawMessage, error) {
	return json.Marshal(typedNumbers(v))
}

func typedNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = typedNumbers(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = typedNumbers(x)
		}
		return out
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") { // NaN and Inf fail in Marshal anyway
			s += ".0"
		}
		return json.Number(s)
	case float32:
		return typedNumbers(float64(v))
	}
	return v // integers print without a fraction; everything else as is
}

func decodeValues(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return untypedNumbers(v).(map[string]any), nil
}

func untypedNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = untypedNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = untypedNumbers(x)
		}
	case json.Number:
		if !strings.ContainsAny(string(v), ".eE") {
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
		f, _ := v.Float64()
		return f
	}
	return v
}
