package tenant

import (
	"context"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/utils/clock"
)

// Reviewer asks the apiserver whether user may do what attrs say.
type Reviewer interface {
	Review(ctx context.Context, user string, attrs authorizationv1.ResourceAttributes) (allowed bool, reason string, err error)
}

// ForbiddenError is a read the GitSync's account may not make.
type ForbiddenError struct {
	Account string
	// From says where the account came from: spec.serviceAccountName or
	// the agent's --default-service-account.
	From      string
	Ref       Ref
	Namespace string
	// Reason is the authorizer's own sentence, if it gave one.
	Reason string
}

func (e *ForbiddenError) Error() string {
	who := e.Account
	if e.From != "" {
		who += " (" + e.From + ")"
	}
	msg := fmt.Sprintf("%s may not get %ss/%s in namespace %s, which %s names: the agent reads it only for an account allowed to",
		who, lowerKind(e.Ref.Kind), e.Ref.Name, e.Namespace, e.Ref.Field)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// unwatchedTTL bounds an answer where RBAC changes cannot be watched (the
// agent may not list and watch RBAC objects): a changed Role is then seen
// within it.
const unwatchedTTL = 30 * time.Second

// accessKey is one question: may account get kind namespace/name.
type accessKey struct {
	account, kind, namespace, name string
}

// answer is what the authorizer said, and what it was said about: the
// object's resourceVersion ("" when absent) and the RBAC generation.
type answer struct {
	allowed bool
	reason  string
	rv      string
	rbac    uint64
	at      time.Time
	ttl     time.Duration // the asker's; the entry is dropped after it
}

// access remembers answers until they may have changed.
type access struct {
	reviewer Reviewer
	rbac     *rbacWatch
	clock    clock.Clock

	mu      sync.Mutex
	answers map[accessKey]answer
}

// check returns nil when account may get the object ref names in
// namespace, whose current resourceVersion is rv; ttl is the GitSync's
// interval. A remembered answer serves while the object, RBAC and ttl
// allow; anything else is asked again.
func (a *access) check(ctx context.Context, account string, ref Ref, namespace, rv string, ttl time.Duration) error {
	k := accessKey{account: account, kind: ref.Kind, namespace: namespace, name: ref.Name}
	gen, watched := a.rbac.generation(ctx)
	if !watched {
		ttl = min(ttl, unwatchedTTL)
	}
	now := a.clock.Now()
	a.mu.Lock()
	ans, ok := a.answers[k]
	a.mu.Unlock()
	if !ok || ans.rv != rv || ans.rbac != gen || now.Sub(ans.at) >= ttl {
		allowed, reason, err := a.reviewer.Review(ctx, account, authorizationv1.ResourceAttributes{
			Verb: "get", Resource: lowerKind(ref.Kind) + "s", Namespace: namespace, Name: ref.Name,
		})
		if err != nil {
			return fmt.Errorf("access review (may %s get %s %s/%s) failed: %w", account, lowerKind(ref.Kind), namespace, ref.Name, err)
		}
		ans = answer{allowed: allowed, reason: reason, rv: rv, rbac: gen, at: now, ttl: ttl}
		a.remember(k, ans)
	}
	if !ans.allowed {
		return &ForbiddenError{Account: account, Ref: ref, Namespace: namespace, Reason: ans.reason}
	}
	return nil
}

// remember keeps ans for k and drops the answers past their asker's ttl,
// so the map holds no more than what recent reads asked.
func (a *access) remember(k accessKey, ans answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for old, v := range a.answers {
		if ans.at.Sub(v.at) >= v.ttl {
			delete(a.answers, old)
		}
	}
	a.answers[k] = ans
}

func lowerKind(kind string) string {
	if kind == KindConfigMap {
		return "configmap"
	}
	return "secret"
}
