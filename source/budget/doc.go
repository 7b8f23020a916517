// Package budget is the one rule for how much work rendering one revision
// may cost: the output bytes every render stage produces (plain YAML,
// kustomize, Helm, the render child's stream, substitution, decryption),
// and the memory, CPU time and wall time of a render that runs where it can
// be stopped (package sandbox enforces those three in a child process).
//
// Contract: output is charged while it is produced, before the bytes are
// allocated where the stage can know their size (Charge refuses a charge
// that would pass the limit and records nothing), never counted afterwards;
// a refusal is an *ExceededError naming the stage, the resource and the
// limit, and is permanent for the input that caused it. A Budget is safe
// for concurrent use. The package never reads a file, starts a process or
// keeps a value it counted: it only counts.
package budget
