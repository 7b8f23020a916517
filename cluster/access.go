package cluster

import (
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"
)

// Access is one question to a cluster's authorizer: may the identity do
// Verb on Resource of Group, in Namespace ("" at the cluster scope), on
// the object Name ("" for any).
type Access struct {
	Verb, Group, Resource, Namespace, Name string
}

func (k Access) String() string {
	res := k.Resource
	if k.Group != "" {
		res += "." + k.Group
	}
	if k.Name != "" {
		res += "/" + k.Name
	}
	where := "at the cluster scope"
	if k.Namespace != "" {
		where = "in namespace " + k.Namespace
	}
	return fmt.Sprintf("%s %s %s", k.Verb, res, where)
}

// Allowed remembers the questions a cluster's authorizer allowed one
// identity. Every target writing as that identity to that cluster shares
// it, so GitSyncs of one identity ask each question once between them, and
// a restarted agent asks it once, not once per GitSync. It decides nothing
// the apiserver does not decide again: each write is still authorized as
// the identity. A refused write Forgets it for every target alike.
type Allowed struct {
	asking singleflight.Group

	mu   sync.Mutex
	keys map[Access]bool
}

// Check returns whether k is allowed: true at once when it was and is not
// forgotten since, else ask's answer (and the authorizer's reason for a
// refusal). Callers asking the same question at the same time share one
// ask. An allowed answer is kept; a refusal or failure is not, so the
// next Check asks again.
func (a *Allowed) Check(k Access, ask func() (allowed bool, reason string, err error)) (bool, string, error) {
	if a.has(k) {
		return true, "", nil
	}
	type answer struct {
		allowed bool
		reason  string
	}
	v, err, _ := a.asking.Do(k.String(), func() (any, error) {
		ok, why, err := ask()
		if err == nil && ok {
			a.allow(k)
		}
		return answer{ok, why}, err
	})
	if err != nil {
		return false, "", err
	}
	ans := v.(answer)
	return ans.allowed, ans.reason, nil
}

func (a *Allowed) has(k Access) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keys[k]
}

func (a *Allowed) allow(k Access) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil {
		a.keys = map[Access]bool{}
	}
	a.keys[k] = true
}

// Forget drops every answer: a right was refused although it was allowed
// (a Role changed since), so none of them is trusted any longer.
func (a *Allowed) Forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys = nil
}
