package main

import (
	"io"
	"os"

	"gitsync.dev/gitsync/redact"
)

// sensitive knows the values this run of gitsync must not print: every
// value read from a --substitute-from-file file and every value a SOPS file
// decrypted to (package prepare tells it). One run is one command, so one
// redactor serves the process.
var sensitive = redact.New()

// stdout and stderr are the process's outputs as every command writes them:
// masked by sensitive, so a value that comes back inside an apiserver's
// refusal, a diff or a structured result is printed as "***".
var stdout, stderr io.Writer = maskedWriter{os.Stdout}, maskedWriter{os.Stderr}

// maskedWriter masks each write; the commands write whole lines, whole
// diffs and whole documents, so a value is never split between writes.
type maskedWriter struct{ w io.Writer }

func (m maskedWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(m.w, sensitive.String(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}
