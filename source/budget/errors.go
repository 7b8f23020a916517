package budget

import "fmt"

// Stage names the render stage that spent a budget, for messages.
type Stage string

// The stages that charge a Budget.
const (
	StagePlain      Stage = "YAML decoding"
	StageKustomize  Stage = "kustomize build"
	StageHelm       Stage = "Helm template"
	StageRender     Stage = "render"
	StageSubstitute Stage = "substitution"
	StageDecrypt    Stage = "decryption"
	StagePostRender Stage = "post-render changes"
)

// Resource is what a budget bounds.
type Resource string

// The resources of a Budget.
const (
	Output Resource = "output size"
	Memory Resource = "memory"
	CPU    Resource = "CPU time"
	Wall   Resource = "deadline"
)

// settingOf names the gitsync run flag that sets each limit.
var settingOf = map[Resource]string{
	Output: "--render-output-bytes",
	Memory: "--render-memory",
	CPU:    "--render-cpu",
	Wall:   "--render-timeout",
}

// ExceededError is a stage that used more of a resource than its budget.
// It is permanent for the input: the same revision with the same settings
// exceeds it again.
type ExceededError struct {
	// Stage is the stage that was refused or stopped.
	Stage Stage
	// Resource is what ran out.
	Resource Resource
	// Limit is the limit in bytes, or in nanoseconds for CPU and Wall.
	Limit int64
}

func (e *ExceededError) Error() string {
	what := string(e.Resource) + " budget"
	if e.Resource == Wall {
		what = "deadline"
	}
	return fmt.Sprintf("%s exceeded its %s (%s, %s)", e.Stage, what, formatLimit(e.Resource, e.Limit), settingOf[e.Resource])
}

// Unwrap makes errors.Is(err, ErrExceeded) hold.
func (e *ExceededError) Unwrap() error { return ErrExceeded }
