package main

import (
	"io"

	"sigs.k8s.io/yaml"
)

// writeStructured writes v as JSON or YAML (-o json|yaml).
func writeStructured(w io.Writer, format string, v any) error {
	if format == outputJSON {
		return writeJSON(w, v)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
