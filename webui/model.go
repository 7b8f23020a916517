package webui

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// Backend is what the pages show and do, as the person running the server.
type Backend interface {
	// List returns every GitSync the server shows.
	List(ctx context.Context) ([]Summary, error)
	// Detail returns one GitSync with its objects, Events and history.
	Detail(ctx context.Context, key types.NamespacedName) (*Detail, error)
	// Preview returns what applying branch (empty: the GitSync's own ref)
	// would change, as `gitsync diff --gitsync` prints it (Secret values
	// masked).
	Preview(ctx context.Context, key types.NamespacedName, branch string) (string, error)
	// Reconcile asks the agent to sync the GitSync now.
	Reconcile(ctx context.Context, key types.NamespacedName) error
	// Suspend sets (true) or clears (false) spec.suspend.
	Suspend(ctx context.Context, key types.NamespacedName, suspend bool) error
	// Changes receives a value whenever something a page shows may have
	// changed; it is closed when the Backend stops.
	Changes() <-chan struct{}
}

// State is a GitSync's state as one word.
type State string

// States, from Ready and Stalled conditions and spec.suspend.
const (
	StateReady       State = "Ready"
	StateFailed      State = "Failed"
	StateProgressing State = "Progressing"
	StateSuspended   State = "Suspended"
	StateUnknown     State = "Unknown"
)

// Summary is one row of the list.
type Summary struct {
	Namespace, Name string
	State           State
	// Reason is Ready's reason, Drifted when spec.drift.mode Detect found
	// drift.
	Reason      string
	Revision    string
	LastApplied time.Time
	Message     string
	Suspended   bool
}

// Key names the GitSync.
func (s Summary) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
}

// Detail is one GitSync's page.
type Detail struct {
	Summary
	// Source is the repository, ref and path (or the artifact) it syncs.
	Source, Ref, Path string
	Signer            string
	Conditions        []metav1.Condition
	Objects           []Object
	Events            []Event
	History           []v1.HistoryEntry
}

// Object is one object of a GitSync's inventory with its health.
type Object struct {
	Kind, Namespace, Name string
	// Group is the API group, "" for the core group.
	Group string
	// Status is kstatus' word: Current, InProgress, Failed, Terminating,
	// NotFound or Unknown.
	Status, Message string
	// Pending marks an object recorded before it was applied.
	Pending bool
}

// Event is one Event recorded for a GitSync.
type Event struct {
	Time            time.Time
	Type, Reason    string
	Message         string
	Count           int32
	ReportingSource string
}

// progressing are Ready=False reasons of a sync still under way, not a
// failure.
var progressing = map[string]bool{
	v1.ReasonProgressing: true, v1.ReasonWaitingForHealth: true, v1.ReasonDependencyNotReady: true,
}

// SummaryOf reads a GitSync's row from its status.
func SummaryOf(gs *v1.GitSync) Summary {
	s := Summary{Namespace: gs.Namespace, Name: gs.Name, State: StateUnknown,
		Revision: gs.Status.LastAppliedRevision, Suspended: gs.Spec.Suspend}
	if t := gs.Status.LastAppliedTime; t != nil {
		s.LastApplied = t.Time
	}
	ready := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReady)
	stalled := meta.IsStatusConditionTrue(gs.Status.Conditions, v1.ConditionStalled)
	reconciling := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionReconciling)
	switch {
	case ready == nil:
		s.State, s.Message = StateProgressing, "not synced yet"
	case ready.Status == metav1.ConditionTrue:
		s.State, s.Reason, s.Message = StateReady, ready.Reason, ready.Message
	case stalled || (ready.Status == metav1.ConditionFalse && !progressing[ready.Reason]):
		s.State, s.Reason, s.Message = StateFailed, ready.Reason, ready.Message
	default:
		s.State, s.Reason, s.Message = StateProgressing, ready.Reason, ready.Message
	}
	if s.State != StateFailed && reconciling != nil && reconciling.Status == metav1.ConditionTrue {
		s.State, s.Reason, s.Message = StateProgressing, reconciling.Reason, reconciling.Message
	}
	if c := meta.FindStatusCondition(gs.Status.Conditions, v1.ConditionDrifted); c != nil && c.Status == metav1.ConditionTrue {
		s.Reason, s.Message = v1.ConditionDrifted, c.Message
	}
	if gs.Spec.Suspend {
		s.State = StateSuspended
	}
	return s
}

// DetailOf reads a GitSync's page from its spec and status; the Backend
// adds objects and Events.
func DetailOf(gs *v1.GitSync) *Detail {
	d := &Detail{Summary: SummaryOf(gs), Source: gs.Spec.Source.URL, Path: gs.Spec.Source.Path,
		Signer: gs.Status.LastAppliedSigner, Conditions: gs.Status.Conditions, History: gs.Status.History}
	r := gs.Spec.Source.Ref
	switch {
	case r.Digest != "":
		d.Ref = "digest " + r.Digest
	case r.Commit != "":
		d.Ref = "commit " + r.Commit
	case r.Tag != "":
		d.Ref = "tag " + r.Tag
	case r.Semver != "":
		d.Ref = "semver " + r.Semver
	case r.Branch != "":
		d.Ref = "branch " + r.Branch
	}
	return d
}
