package rules

import (
	"context"
	"fmt"

	"cel.dev/cel-go/cel"
)

// ReadyExpr is a compiled spec.dependsOn readyExpr: it sees the dependency
// GitSync as dep and the dependent as self, and says whether the
// dependency is ready. It runs under the same limits as health rules.
type ReadyExpr struct {
	prg cel.Program
}

// CompileReadyExpr compiles a readyExpr with DefaultLimits: it must
// return a bool, and its estimated cost must fit.
func CompileReadyExpr(expr string) (*ReadyExpr, error) {
	env, err := cel.NewEnv(cel.OptionalTypes(), cel.Variable("dep", cel.DynType), cel.Variable("self", cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("readyExpr: CEL environment: %w", err)
	}
	prg, err := compileExpr(env, expr, DefaultLimits())
	if err != nil {
		return nil, err
	}
	return &ReadyExpr{prg: prg}, nil
}

// Ready evaluates the expression on dep and self (objects as JSON maps).
// missing reports an expression that read a field dep or self does not
// have (no such key): not ready yet rather than broken. Any other failure
// is err.
func (e *ReadyExpr) Ready(ctx context.Context, dep, self map[string]any) (ready bool, missing string, err error) {
	out, _, err := e.prg.ContextEval(ctx, map[string]any{"dep": dep, "self": self})
	if err != nil {
		if noSuchKey(err) {
			return false, err.Error(), nil
		}
		return false, "", err
	}
	b, err := asBool(out)
	return b, "", err
}

// ReadyExpr returns expr compiled, from the cache when it was compiled
// before (its error too).
func (c *Cache) ReadyExpr(expr string) (*ReadyExpr, error) {
	key := cacheKey([]byte("readyExpr\x00" + expr))
	c.mu.Lock()
	hit, ok := c.sets[key]
	c.mu.Unlock()
	if ok {
		return hit.ready, hit.err
	}
	re, err := CompileReadyExpr(expr)
	c.put(key, cached{ready: re, err: err})
	return re, err
}
