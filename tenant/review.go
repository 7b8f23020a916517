package tenant

import (
	"context"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// impersonatingReviewer asks SelfSubjectAccessReviews as each account,
// impersonating it with the agent's credentials (the rights `spec.
// serviceAccountName` needs anyway), so no right to review other users is
// needed. One clientset per account, sharing the agent's connections.
type impersonatingReviewer struct {
	cfg *rest.Config

	mu      sync.Mutex
	clients map[string]kubernetes.Interface
}

var _ Reviewer = (*impersonatingReviewer)(nil)

// NewReviewer returns the Reviewer the agent uses: SelfSubjectAccessReviews
// sent as the account, impersonated with cfg's credentials.
func NewReviewer(cfg *rest.Config) Reviewer {
	return &impersonatingReviewer{cfg: rest.CopyConfig(cfg), clients: map[string]kubernetes.Interface{}}
}

func (r *impersonatingReviewer) Review(ctx context.Context, user string, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	cs, err := r.clientFor(user)
	if err != nil {
		return false, "", err
	}
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	return got.Status.Allowed, strings.TrimSpace(got.Status.Reason), nil
}

func (r *impersonatingReviewer) clientFor(user string) (kubernetes.Interface, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs, ok := r.clients[user]; ok {
		return cs, nil
	}
	cfg := rest.CopyConfig(r.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r.clients[user] = cs
	return cs, nil
}
