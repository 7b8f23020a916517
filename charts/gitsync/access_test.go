package chart_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// forbiddenErr reports whether err is the apiserver refusing on RBAC grounds.
func forbiddenErr(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || strings.Contains(err.Error(), "forbidden"))
}

// authz is one question to the apiserver's authorizer: may the user do verb
// on group/resource[/subresource] in namespace ("" means cluster-wide)?
type authz struct {
	verb, group, resource, subresource, namespace string
}

func (a authz) String() string {
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	res := a.resource
	if a.subresource != "" {
		res += "/" + a.subresource
	}
	if a.group != "" {
		res += "." + a.group
	}
	return fmt.Sprintf("%s %s %s", a.verb, res, where)
}

// allowed asks the apiserver (RBAC, as configured by the installed chart)
// with a SubjectAccessReview whether the ServiceAccount user may do a.
func allowed(t *testing.T, user string, a authz) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace,
		},
	}}
	if err := env.Client.Create(context.Background(), sar); err != nil {
		t.Fatalf("SubjectAccessReview %s: %v", a, err)
	}
	return sar.Status.Allowed
}
