// Package rules compiles and evaluates CEL health rules: per group and kind,
// the expressions current, inProgress and failed judge an object in place
// of kstatus (Flux's healthCheckExprs, same field names and order).
//
// Rules are tenant input (spec.healthChecks), so: a rule set is compiled
// once (Cache, keyed by its content); every expression must type-check to
// bool; its estimated cost for an object of the largest size the API server
// stores is bounded at compile time and its actual cost at every evaluation
// (cel-go's cost and memory limits); only CEL's standard library and
// optional field access are offered (no extension whose result size the
// cost model does not see). A rule that fails to compile or evaluate is a
// *health.RuleError naming the rule, never a pass and never a panic.
//
// Contract: Compile and Check are pure; a Set is safe for concurrent use.
package rules
