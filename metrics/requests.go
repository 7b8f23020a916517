package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// CountAPIRequests wraps cfg so every request built from it is counted in
// gitsync_api_requests_total, registered with reg, by what it is:
//   - "watch": a watch opened or re-opened (client-go re-opens each
//     informer's watch every 5–10 minutes);
//   - "lease": a Lease read or write (leader election, replicas sharing);
//   - "review": an access or identity review (a question to the
//     authorizer or authenticator, which stores nothing);
//   - "read": any other GET (a single object or a list);
//   - "write": everything else (applies, dry-runs, status, events,
//     deletes).
//
// A converged agent sends no "read", "review" or "write": this is how an
// operator checks the zero-request steady state on a real cluster, and a
// restarted agent over converged GitSyncs sends no "write". Counting happens
// before the request is sent, so a request that failed counts too.
func CountAPIRequests(cfg *rest.Config, reg prometheus.Registerer) error {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitsync_api_requests_total",
		Help: "Requests the agent sent to the Kubernetes API, by kind: watch, lease, review, read, write.",
	}, []string{"kind"})
	if err := reg.Register(requests); err != nil {
		return err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			requests.WithLabelValues(requestKind(req)).Inc()
			return rt.RoundTrip(req)
		})
	})
	return nil
}

// requestKind names what req is, for gitsync_api_requests_total.
func requestKind(req *http.Request) string {
	switch {
	case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
		return "watch"
	case strings.Contains(req.URL.Path, "/apis/coordination.k8s.io/") && strings.Contains(req.URL.Path, "/leases"):
		return "lease"
	case strings.HasPrefix(req.URL.Path, "/apis/authorization.k8s.io/"), strings.HasPrefix(req.URL.Path, "/apis/authentication.k8s.io/"):
		return "review"
	case req.Method == http.MethodGet:
		return "read"
	}
	return "write"
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
