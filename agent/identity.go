package agent

import (
	"context"
	"os"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serviceAccountPrefix starts the user name of every ServiceAccount.
const serviceAccountPrefix = "system:serviceaccount:"

// identity returns the namespace and ServiceAccount the agent runs as,
// whose workload, RBAC and Namespace no prune may delete. The options win
// (gitsync run's flags), then the chart's environment (POD_NAMESPACE,
// GITSYNC_SERVICE_ACCOUNT from the downward API), then what the apiserver
// says we are (a SelfSubjectReview). Not a ServiceAccount (a laptop user):
// both empty.
func identity(ctx context.Context, cfg *rest.Config, ns, sa string) (namespace, serviceAccount string) {
	namespace = firstNonEmpty(ns, os.Getenv("POD_NAMESPACE"))
	serviceAccount = firstNonEmpty(sa, os.Getenv("GITSYNC_SERVICE_ACCOUNT"))
	if namespace != "" && serviceAccount != "" {
		return namespace, serviceAccount
	}
	reviewedNS, reviewedSA := reviewSelf(ctx, cfg)
	return firstNonEmpty(namespace, reviewedNS), firstNonEmpty(serviceAccount, reviewedSA)
}

// reviewSelf asks the apiserver who the agent's credentials are, and
// returns the ServiceAccount's namespace and name when they are one.
func reviewSelf(ctx context.Context, cfg *rest.Config) (namespace, serviceAccount string) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", ""
	}
	return parseServiceAccount(review.Status.UserInfo.Username)
}

// parseServiceAccount splits "system:serviceaccount:NS:NAME".
func parseServiceAccount(user string) (namespace, name string) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", ""
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" {
		return "", ""
	}
	return namespace, name
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
