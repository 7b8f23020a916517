// Package sandbox renders repository paths where a render can be stopped.
//
// A plain YAML path renders in the caller's process: its work is linear in
// its input, which package render bounds. A path that needs kustomize or
// Helm runs tenant-controlled transformations and templates, which Go cannot
// interrupt, so the whole render runs in a child process: the same
// executable started again with an environment marker, which this package's
// init function recognises (every binary importing the package, the agent's
// and each test binary, can serve as the child). The child sets its own
// limits before it reads the request: RLIMIT_AS above the address space it
// has (and a Go memory limit) for memory, RLIMIT_CPU for CPU time,
// GOMAXPROCS=1; then it renders and streams the result back. The parent counts the bytes it reads against the output
// budget, kills the child's process group at the deadline or at the first
// byte over the budget, and reaps it before it returns, so a render that was
// stopped uses no CPU afterwards.
//
// Contract: the result is the one render.Render gives in-process, or an
// error; a budget that ran out is a *render.Error of class
// render.ErrOverBudget whose cause is a *budget.ExceededError (memory, CPU
// time, deadline or output size), permanent for the revision. At most
// Options.Concurrency children run at once, at most half of them (at least
// one) for one owner (budget.WithOwner: the tenant), so one tenant's renders
// cannot keep another's waiting. The child gets no environment of the
// parent's (no credentials), never writes a file and never outlives the
// parent (Pdeathsig). The package never retries a render.
package sandbox
