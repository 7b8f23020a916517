package rules

import (
	"errors"
	"fmt"
	"math"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"gitsync.dev/gitsync/health"
)

// Limits bound what one expression may cost.
type Limits struct {
	// Cost is the most one evaluation of one expression may cost (cel-go's
	// cost units, about one per field read, comparison or list element
	// visited); past it the evaluation stops with an error.
	Cost uint64
	// EstimatedCost bounds the cost cel-go estimates at compile time,
	// taking every list, map and string of the object to be as long as
	// the largest object (ObjectBytes) allows. That estimate multiplies:
	// a loop over a list comparing strings is about 10^11 for 1.5 MiB, a
	// loop inside a loop about 10^16. The default, 10^13, admits the first
	// and refuses the second; Cost bounds what really runs.
	EstimatedCost uint64
	// Memory bounds the bytes one evaluation may allocate for lists,
	// maps and strings it builds.
	Memory uint32
	// ObjectBytes is the size the compile-time estimate assumes for the
	// largest object: every list, map and string in it is taken to be
	// this long.
	ObjectBytes uint64
}

// DefaultLimits are the limits of Compile: a cost of one million per
// evaluation (the per-call limit of Kubernetes' own CEL validation rules,
// a few milliseconds of CPU at most), an estimate of at most 10^13 for
// objects of 1.5 MiB (etcd's default request limit), and 16 MiB of memory.
func DefaultLimits() Limits {
	return Limits{Cost: 1_000_000, EstimatedCost: 10_000_000_000_000, Memory: 16 << 20, ObjectBytes: 1536 << 10}
}

// Set is a compiled set of rules, at most one per group and kind.
type Set struct {
	byKind map[schema.GroupKind]*compiled
}

// compiled is one rule's programs, in evaluation order.
type compiled struct {
	name  string
	exprs []program
}

// program is one compiled expression and the status it decides.
type program struct {
	field  string
	status health.Status
	prg    cel.Program
}

// Compile compiles rs with DefaultLimits.
func Compile(rs []Rule) (*Set, error) {
	return CompileWithLimits(rs, DefaultLimits())
}

// CompileWithLimits compiles every expression of rs. A rule that does not
// parse, type-check to bool or fit the cost limit is a *health.RuleError;
// all of them are returned (joined), and then the Set is nil. Two rules
// for the same group and kind are an error too: which one meant it?
func CompileWithLimits(rs []Rule, lim Limits) (*Set, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("health rules: CEL environment: %w", err)
	}
	s := &Set{byKind: make(map[schema.GroupKind]*compiled, len(rs))}
	var errs []error
	for _, r := range rs {
		gk := GroupKind(r)
		if _, dup := s.byKind[gk]; dup {
			errs = append(errs, &health.RuleError{Rule: name(r), Err: errors.New("a second rule for the same group and kind")})
			continue
		}
		c, err := compileRule(env, r, lim)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.byKind[gk] = c
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// secretKind is the one kind rules may not judge.
var secretKind = schema.GroupKind{Kind: "Secret"}

// Duplicate returns a *health.RuleError for the first group and kind rs
// names twice (Merge would keep only the last), nil when none is.
func Duplicate(rs []Rule) error {
	seen := make(map[schema.GroupKind]bool, len(rs))
	for _, r := range rs {
		gk := GroupKind(r)
		if seen[gk] {
			return &health.RuleError{Rule: name(r), Err: errors.New("a second rule for the same group and kind")}
		}
		seen[gk] = true
	}
	return nil
}

// Len is the number of kinds s covers.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byKind)
}

func compileRule(env *cel.Env, r Rule, lim Limits) (*compiled, error) {
	c := &compiled{name: name(r)}
	if r.Kind == "" || r.APIVersion == "" {
		return nil, &health.RuleError{Rule: c.name, Err: errors.New("apiVersion and kind are required")}
	}
	if GroupKind(r) == secretKind {
		// An evaluation error quotes what the expression read ("no such
		// key: <a value>"): a Secret's values must never reach a message.
		return nil, &health.RuleError{Rule: c.name, Err: errors.New("Secrets are not judged by health rules (their values could reach a message)")}
	}
	if r.Current == "" {
		return nil, &health.RuleError{Rule: c.name, Err: errors.New("current is required")}
	}
	for _, e := range []struct {
		field, expr string
		status      health.Status
	}{
		{"inProgress", r.InProgress, health.InProgress},
		{"failed", r.Failed, health.Failed},
		{"current", r.Current, health.Current},
	} {
		if e.expr == "" {
			continue
		}
		prg, err := compileExpr(env, e.expr, lim)
		if err != nil {
			return nil, &health.RuleError{Rule: c.name, Field: e.field, Err: err}
		}
		c.exprs = append(c.exprs, program{field: e.field, status: e.status, prg: prg})
	}
	return c, nil
}

// newEnv is the environment every expression compiles in: the object as
// self, and its usual top-level fields by name (as Flux's expressions
// read them). CEL's standard library and optional field access
// (self.status.?ready) only: the string and list extensions build values
// whose size the cost model does not charge for.
func newEnv() (*cel.Env, error) {
	opts := []cel.EnvOption{cel.OptionalTypes(), cel.Variable("self", cel.DynType)}
	for _, f := range topLevel {
		opts = append(opts, cel.Variable(f, cel.DynType))
	}
	return cel.NewEnv(opts...)
}

// topLevel are the object's fields an expression may name without self.
var topLevel = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// compileExpr parses and checks one expression, which must return a bool
// and whose estimated cost must fit lim.Cost.
func compileExpr(env *cel.Env, expr string, lim Limits) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("returns %s, want bool", t)
	}
	// A list element takes at least two bytes of JSON ("0,").
	est, err := env.EstimateCost(ast, sizeBound{max: lim.ObjectBytes / 2})
	if err != nil {
		return nil, fmt.Errorf("estimate its cost: %w", err)
	}
	if est.Max > lim.EstimatedCost {
		return nil, fmt.Errorf("estimated cost %s exceeds the limit %d for an object of %d bytes (a loop inside a loop over the object's lists costs the square of its size)", costString(est.Max), lim.EstimatedCost, lim.ObjectBytes)
	}
	prg, err := env.Program(ast,
		cel.CostLimit(lim.Cost),
		cel.MemoryLimit(lim.Memory),
		cel.InterruptCheckFrequency(100),
	)
	if err != nil {
		return nil, err
	}
	return prg, nil
}

// sizeBound tells the cost estimate that every list, map and string in the
// object has at most max elements or characters (the object's size bounds
// each).
type sizeBound struct{ max uint64 }

func (b sizeBound) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Min: 0, Max: b.max}
}

// EstimateCallCost sizes the results of optional field access
// (self.status.?conditions.orValue([])), which cel-go's estimate leaves
// unbounded: they are a part of the object, or the default given.
func (b sizeBound) EstimateCallCost(function, _ string, _ *cost.AstNode, _ []cost.AstNode) *cost.CallEstimate {
	switch function {
	case "orValue", "value", "or", "_?._", "_[?_]", "optional.of", "optional.ofNonZeroValue":
		return &cost.CallEstimate{CostEstimate: cost.Estimate{Min: 1, Max: 1}, ResultSize: &cost.SizeEstimate{Min: 0, Max: b.max}}
	}
	return nil
}

func costString(c uint64) string {
	if c == math.MaxUint64 {
		return "unbounded"
	}
	return fmt.Sprint(c)
}
