package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// remoteResponses keeps a remote cluster's own words out of the GitSync's
// status, Events and the agent's log. The server in a spec.kubeConfig is
// named by a tenant and may be any web server the agent can reach: if its
// reply bodies reached the status, a tenant could read internal services
// through the agent. So every failed reply is replaced by a Status that
// says only the code, the verb and the URL path, and a successful reply
// that is not a Kubernetes object (an HTML page, arbitrary JSON) becomes a
// 502 the same way. Kept from the reply: its code (so not-found, forbidden
// and conflict are still told apart), and for conflicts and invalid
// requests the reason and the field paths and manager names of apply
// conflicts and immutable fields, which the conflict policy needs.
type remoteResponses struct{ next http.RoundTripper }

// maxRemoteErrorBody bounds what is read of a failed reply to find its
// reason.
const maxRemoteErrorBody = 64 << 10

func (t remoteResponses) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// Watch streams, /version and OpenAPI documents are no objects
		// with a kind; their decoders do not quote what they cannot parse.
		if req.URL.Query().Get("watch") == "true" || req.URL.Path == "/version" || strings.HasPrefix(req.URL.Path, "/openapi/") {
			return resp, nil
		}
		ok, err := kubernetesBody(resp)
		if err != nil || ok {
			return resp, err
		}
		return sanitizedResponse(req, resp, http.StatusBadGateway, "a reply that is not a Kubernetes object"), nil
	}
	return sanitizedResponse(req, resp, resp.StatusCode, ""), nil
}

// kubernetesBody reports whether a successful reply is a Kubernetes object:
// protobuf, or JSON/YAML with a kind. The body is restored for the caller.
func kubernetesBody(resp *http.Response) (bool, error) {
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case "application/vnd.kubernetes.protobuf":
		return true, nil
	case "application/json", "application/yaml":
	default:
		return false, nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	if media == "application/yaml" {
		return bytes.Contains(body, []byte("kind:")), nil
	}
	var head struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(body, &head) == nil && head.Kind != "", nil
}

// sanitizedResponse replaces resp with one naming only code, verb and path.
// It is plain text, which client-go quotes as the error message on every
// path (a Status body is not decoded by raw requests such as discovery),
// except for 409 and 422: those stay a Status, so the apply conflict and
// immutable-field causes kept from the reply still reach the applier.
func sanitizedResponse(req *http.Request, resp *http.Response, code int, what string) *http.Response {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRemoteErrorBody))
	_ = resp.Body.Close()
	if what == "" {
		what = strconv.Itoa(resp.StatusCode)
		if text := http.StatusText(resp.StatusCode); text != "" {
			what += " " + text
		}
	}
	msg := fmt.Sprintf("remote cluster answered %s to %s %s", what, req.Method, req.URL.Path)
	header := http.Header{}
	header.Set("Content-Type", "text/plain; charset=utf-8")
	out := []byte(msg)
	if code == http.StatusConflict || code == http.StatusUnprocessableEntity {
		var got metav1.Status
		_ = json.Unmarshal(body, &got)
		out, _ = json.Marshal(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure,
			Code:     int32(code),
			Reason:   knownReason(got.Reason),
			Message:  msg,
			Details:  keptDetails(got.Details),
		})
		header.Set("Content-Type", "application/json")
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if _, err := strconv.Atoi(ra); err == nil {
			header.Set("Retry-After", ra)
		}
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         resp.Proto,
		ProtoMajor:    resp.ProtoMajor,
		ProtoMinor:    resp.ProtoMinor,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(out)),
		ContentLength: int64(len(out)),
		Request:       req,
	}
}

// knownReason returns r when it is one of Kubernetes' reasons, else "".
func knownReason(r metav1.StatusReason) metav1.StatusReason {
	switch r {
	case metav1.StatusReasonUnauthorized, metav1.StatusReasonForbidden, metav1.StatusReasonNotFound,
		metav1.StatusReasonAlreadyExists, metav1.StatusReasonConflict, metav1.StatusReasonGone,
		metav1.StatusReasonInvalid, metav1.StatusReasonServerTimeout, metav1.StatusReasonStoreReadError,
		metav1.StatusReasonTimeout, metav1.StatusReasonTooManyRequests, metav1.StatusReasonBadRequest,
		metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable,
		metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonUnsupportedMediaType,
		metav1.StatusReasonInternalError, metav1.StatusReasonExpired, metav1.StatusReasonServiceUnavailable:
		return r
	}
	return ""
}

// maxKeptField bounds a field path or manager name kept from a reply.
const maxKeptField = 256

// keptDetails keeps apply-conflict causes (manager and field path) and
// immutable-field causes (field path), rewritten from their parts, and the
// retry hint; nothing else of a remote reply's details survives.
func keptDetails(d *metav1.StatusDetails) *metav1.StatusDetails {
	if d == nil {
		return nil
	}
	out := &metav1.StatusDetails{RetryAfterSeconds: d.RetryAfterSeconds}
	for _, c := range d.Causes {
		field := truncate(c.Field, maxKeptField)
		switch {
		case c.Type == metav1.CauseTypeFieldManagerConflict:
			msg := c.Message
			if rest, ok := strings.CutPrefix(msg, "conflict with "); ok {
				if q, err := strconv.QuotedPrefix(rest); err == nil {
					if m, err := strconv.Unquote(q); err == nil {
						out.Causes = append(out.Causes, metav1.StatusCause{Type: c.Type, Field: field,
							Message: "conflict with " + strconv.Quote(truncate(m, maxKeptField))})
					}
				}
			}
		case strings.Contains(c.Message, "field is immutable"):
			out.Causes = append(out.Causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: field, Message: "field is immutable"})
		}
	}
	if len(out.Causes) == 0 && out.RetryAfterSeconds == 0 {
		return nil
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
