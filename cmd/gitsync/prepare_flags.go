package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"filippo.io/age"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/prepare"
	"gitsync.dev/gitsync/source/sops"
	"gitsync.dev/gitsync/source/substitute"
)

// prepareFlags are the CLI's counterparts of a GitSync's spec.substitute,
// spec.substituteFrom and spec.decryption, applied to the render the same
// way the agent applies them (substitution, then SOPS decryption).
type prepareFlags struct {
	// Substitute are NAME=VALUE variables; they win over the files.
	Substitute []string
	// SubstituteFiles hold NAME=VALUE lines (# comments); later files win.
	// Their values are treated as a Secret's: masked in diffs.
	SubstituteFiles []string
	// Strict fails on a variable without value and default.
	Strict bool
	// AgeKeyFiles hold age identities for SOPS files; default
	// $SOPS_AGE_KEY_FILE, as the sops CLI reads.
	AgeKeyFiles []string
}

// AddFlags registers the substitution and decryption flags.
func (f *prepareFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Substitute, "substitute", nil, "Variable NAME=VALUE for ${NAME} in manifests, as spec.substitute (repeatable; wins over --substitute-from-file).")
	fs.StringArrayVar(&f.SubstituteFiles, "substitute-from-file", nil, "File of NAME=VALUE lines, as a Secret in spec.substituteFrom: its values are masked in diffs (repeatable, later wins).")
	fs.BoolVar(&f.Strict, "substitute-strict", true, "Fail on a ${NAME} without value and default (false: replace it with nothing), as spec.substituteStrict.")
	fs.StringArrayVar(&f.AgeKeyFiles, "age-key-file", nil, "File of age identities (AGE-SECRET-KEY-1...) to decrypt SOPS files, as spec.decryption (repeatable; default $SOPS_AGE_KEY_FILE).")
}

// variables reads the variables of the flags; used reports whether any
// substitution flag was given (without one, nothing is substituted, as for
// a GitSync without spec.substitute).
func (f *prepareFlags) variables() (vars substitute.Variables, used bool, err error) {
	for _, file := range f.SubstituteFiles {
		data, err := os.ReadFile(file)
		if err != nil {
			return vars, true, fmt.Errorf("--substitute-from-file: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, value, ok := strings.Cut(line, "=")
			if !ok || !substitute.ValidName(name) {
				return vars, true, fmt.Errorf("--substitute-from-file %s line %d: want NAME=VALUE with NAME like [_a-zA-Z][_a-zA-Z0-9]*", file, n)
			}
			vars.Set(name, value, true)
		}
	}
	for _, kv := range f.Substitute {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !substitute.ValidName(name) {
			return vars, true, fmt.Errorf("--substitute %q: want NAME=VALUE with NAME like [_a-zA-Z][_a-zA-Z0-9]*", name)
		}
		vars.Set(name, value, false)
	}
	return vars, len(f.Substitute)+len(f.SubstituteFiles) > 0, nil
}

// keys reads the age identities of --age-key-file (or $SOPS_AGE_KEY_FILE).
func (f *prepareFlags) keys() ([]age.Identity, error) {
	files := f.AgeKeyFiles
	if len(files) == 0 {
		if env := os.Getenv("SOPS_AGE_KEY_FILE"); env != "" {
			files = []string{env}
		}
	}
	if len(files) == 0 {
		return nil, errors.New("pass --age-key-file (or set SOPS_AGE_KEY_FILE) to decrypt it; it is never applied encrypted")
	}
	var ids []age.Identity
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--age-key-file: %w", err)
		}
		got, err := age.ParseIdentities(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("--age-key-file %s does not hold age identities (AGE-SECRET-KEY-1...)", file)
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

// prepare substitutes and decrypts objs (copies; objs is not changed) as
// the agent does (package prepare), telling the process's redactor every
// value to mask in any output.
func (f *prepareFlags) prepare(objs []*unstructured.Unstructured, files sops.Files) ([]*unstructured.Unstructured, error) {
	in, _, err := f.inputs()
	if err != nil {
		return nil, err
	}
	return prepare.Objects(objs, files, in)
}

// inputs are package prepare's inputs as the flags give them; used
// reports whether any substitution flag was given.
func (f *prepareFlags) inputs() (in prepare.Inputs, used bool, err error) {
	vars, used, err := f.variables()
	if err != nil {
		return in, used, err
	}
	in = prepare.Inputs{Strict: f.Strict, Keys: f.keys, Redactor: sensitive}
	if used {
		in.Variables = &vars
	}
	return in, used, nil
}

// render renders src and substitutes and decrypts the result.
func (f *prepareFlags) render(ctx context.Context, src *sourceOptions) (*renderedSource, error) {
	desired, err := src.Render(ctx)
	if err != nil {
		return nil, err
	}
	if desired.Objects, err = f.prepare(desired.Objects, desired.SOPS); err != nil {
		return nil, err
	}
	return desired, nil
}
