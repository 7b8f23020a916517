package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCommentBody: the title, revision, reason, the message in a code
// block (its backticks cannot close it) and one diff line per change, then
// how many were left out.
func TestCommentBody(t *testing.T) {
	e := Event{Namespace: "prod", Name: "app", Revision: "main@sha1:abc", State: Ready, Reason: "ReconciliationSucceeded",
		Message: "Applied ``` @everyone", Time: time.Unix(0, 0),
		Changes:     []Change{{"created", "ConfigMap/prod/a"}, {"configured", "Deployment/prod/web"}, {"pruned", "ConfigMap/prod/old"}},
		MoreChanges: 4}
	want := "### ✅ GitSync prod/app is Ready\n\n" +
		"**Revision:** ` main@sha1:abc `\n" +
		"**Reason:** ` ReconciliationSucceeded `\n" +
		"\n````text\nApplied ``` @everyone\n````\n" +
		"\n**Changes to the cluster:**\n\n" +
		"```diff\n+ created ConfigMap/prod/a\n~ configured Deployment/prod/web\n- pruned ConfigMap/prod/old\n```\n" +
		"\nand 4 more\n"
	if diff := cmp.Diff(want, CommentBody(e)); diff != "" {
		t.Errorf("CommentBody (-want +got):\n%s", diff)
	}
	e.Changes, e.MoreChanges, e.State, e.Message = nil, 0, Failed, ""
	if got := CommentBody(e); !strings.HasPrefix(got, "### ❌ GitSync prod/app failed: ReconciliationSucceeded") ||
		!strings.HasSuffix(got, "No object in the cluster changed.\n") {
		t.Errorf("CommentBody of a failure without changes:\n%s", got)
	}
}
