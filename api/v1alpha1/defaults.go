package v1alpha1

import "time"

// DefaultInterval is spec.interval when it is unset (the CRD defaults it
// too; objects read from older CRDs or built in code may lack it).
const DefaultInterval = 5 * time.Minute

// IntervalOrDefault is gs's spec.interval, or DefaultInterval when unset.
func (gs *GitSync) IntervalOrDefault() time.Duration {
	if d := gs.Spec.Interval.Duration; d > 0 {
		return d
	}
	return DefaultInterval
}

// ServiceAccountOr is the name of gs's account: spec.serviceAccountName,
// else def (the operator's default, gitsync run --default-service-account;
// "" for none).
func (gs *GitSync) ServiceAccountOr(def string) string {
	if gs.Spec.ServiceAccountName != "" {
		return gs.Spec.ServiceAccountName
	}
	return def
}

// AccountOr is the user name of gs's account (ServiceAccountOr) in the
// cluster, "system:serviceaccount:NAMESPACE:NAME", or "" for none.
func (gs *GitSync) AccountOr(def string) string {
	sa := gs.ServiceAccountOr(def)
	if sa == "" {
		return ""
	}
	return "system:serviceaccount:" + gs.Namespace + ":" + sa
}

// AccountOrigin is gs's account user name as AccountOr(def) gives it and
// where it comes from, in the words status and errors use:
// "spec.serviceAccountName" or "the agent's --default-service-account";
// both "" without an account.
func (gs *GitSync) AccountOrigin(def string) (user, origin string) {
	switch {
	case gs.Spec.ServiceAccountName != "":
		return gs.AccountOr(""), "spec.serviceAccountName"
	case def != "":
		return gs.AccountOr(def), "the agent's --default-service-account"
	}
	return "", ""
}
