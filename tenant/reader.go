package tenant

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/redact"
)

// Options configure a Reader.
type Options struct {
	// Clientset lists and watches the named objects, as the agent.
	// Required.
	Clientset kubernetes.Interface
	// APIReader GETs the objects whose watch the agent may not hold.
	// Required.
	APIReader client.Reader
	// GitSyncs is the informer of GitSyncs: an update or a deletion
	// releases the watches of what a GitSync stopped naming. Required.
	GitSyncs Informer
	// Reviewer asks whether an account may get an object. Required.
	Reviewer Reviewer
	// Metadata, when set, watches RBAC objects (metadata only), so an
	// answer is asked again after any change; nil keeps answers at most
	// 30 s.
	Metadata metadata.Interface
	// Requeue asks for a GitSync to be reconciled with a fresh look at its
	// remote: an object it names changed.
	Requeue func(types.NamespacedName)
	// RunContext is the context watches run in: the agent's, not a
	// reconcile's.
	RunContext func() context.Context
	// DefaultServiceAccount is the account of GitSyncs that name none
	// (gitsync run --default-service-account); "" leaves them without one:
	// the agent then reads with its own rights, in their namespace only.
	DefaultServiceAccount string
	// Clock times answers; nil is the real clock.
	Clock clock.Clock
}

// Informer is the part of an informer the Reader uses.
type Informer interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// Reader reads what GitSyncs name. It is safe for concurrent use.
type Reader struct {
	secrets, configMaps *namedWatch
	access              *access
	defaultAccount      string
}

// New returns the agent's Reader.
func New(opts Options) (*Reader, error) {
	if opts.Clientset == nil || opts.APIReader == nil || opts.GitSyncs == nil || opts.Reviewer == nil {
		return nil, errors.New("tenant reader options invalid: Clientset, APIReader, GitSyncs and Reviewer are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.RunContext == nil {
		opts.RunContext = context.Background
	}
	if opts.Requeue == nil {
		opts.Requeue = func(types.NamespacedName) {}
	}
	r := &Reader{access: &access{reviewer: opts.Reviewer, clock: opts.Clock, answers: map[accessKey]answer{},
		rbac: &rbacWatch{client: opts.Metadata, runCtx: opts.RunContext}}, defaultAccount: opts.DefaultServiceAccount}
	var err error
	if r.secrets, err = newNamedWatch(opts, KindSecret); err != nil {
		return nil, err
	}
	if r.configMaps, err = newNamedWatch(opts, KindConfigMap); err != nil {
		return nil, err
	}
	return r, nil
}

// For returns gs's view: reads in gs's namespace, as gs's account, telling
// red (which may be nil) every Secret value read.
func (r *Reader) For(gs *v1.GitSync, red *redact.Redactor) *View {
	return &View{r: r, gs: gs, red: red}
}

// Refused reports whether the agent may not list and watch the named
// object, so each read is a GET (callers outside a reconcile may want to
// cache those).
func (r *Reader) Refused(kind string, key types.NamespacedName) bool {
	w := r.secrets
	if kind == KindConfigMap {
		w = r.configMaps
	}
	return w.refusedFor(key)
}

// View is one GitSync's reads.
type View struct {
	r   *Reader
	gs  *v1.GitSync
	red *redact.Redactor
}

// Secret returns the Secret ref names. A missing Secret is a NotFound
// error (as from the API) once the account may read it; a refused read is
// a *ForbiddenError. Its values are told to the view's redactor.
func (v *View) Secret(ctx context.Context, ref Ref) (*corev1.Secret, error) {
	ref.Kind = KindSecret
	obj, err := v.get(ctx, v.r.secrets, ref)
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, fmt.Errorf("Secret/%s/%s read returned %T", v.gs.Namespace, ref.Name, obj)
	}
	if v.red != nil {
		v.red.AddData(s.Data)
		for _, val := range s.StringData {
			v.red.Add(val)
		}
	}
	return s, nil
}

// Redact tells the view's redactor values born from what it read (a token
// minted with a Secret's key), so they are masked like the Secret's own.
// Empty values are ignored.
func (v *View) Redact(values ...string) {
	if v.red == nil {
		return
	}
	for _, val := range values {
		if val != "" {
			v.red.Add(val)
		}
	}
}

// ConfigMap returns the ConfigMap ref names, as Secret does.
func (v *View) ConfigMap(ctx context.Context, ref Ref) (*corev1.ConfigMap, error) {
	ref.Kind = KindConfigMap
	obj, err := v.get(ctx, v.r.configMaps, ref)
	if err != nil {
		return nil, err
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("ConfigMap/%s/%s read returned %T", v.gs.Namespace, ref.Name, obj)
	}
	return cm, nil
}

// Allowed returns nil when gs's account (if any) may get the object ref
// names, without reading it: for callers that read it another way (a
// cached GET where the agent may not watch it). The answer is tied to no
// resourceVersion, so only RBAC changes and the interval renew it.
func (v *View) Allowed(ctx context.Context, ref Ref) error {
	account, from := v.account()
	if account == "" {
		return nil
	}
	return whence(v.r.access.check(ctx, account, ref, v.gs.Namespace, "", v.gs.IntervalOrDefault()), from)
}

// account is the user name of gs's account and where it came from, or ""
// for none.
func (v *View) account() (user, from string) {
	return v.gs.AccountOrigin(v.r.defaultAccount)
}

// whence notes on a refusal where its account came from.
func whence(err error, from string) error {
	if fe, ok := errors.AsType[*ForbiddenError](err); ok {
		fe.From = from
	}
	return err
}

// get reads ref from w and, when gs has an account, checks that it may:
// the object is read first (from the watch: no request) so the answer can
// be tied to its resourceVersion, and returned only after the check. A
// refusal hides whether the object exists.
func (v *View) get(ctx context.Context, w *namedWatch, ref Ref) (client.Object, error) {
	key := types.NamespacedName{Namespace: v.gs.Namespace, Name: ref.Name}
	obj, err := w.get(ctx, client.ObjectKeyFromObject(v.gs), key)
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return nil, err
	}
	if account, from := v.account(); account != "" {
		rv := ""
		if !missing {
			rv = obj.GetResourceVersion()
		}
		if cerr := v.r.access.check(ctx, account, ref, key.Namespace, rv, v.gs.IntervalOrDefault()); cerr != nil {
			return nil, whence(cerr, from)
		}
	}
	return obj, err
}
