package v1alpha1_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestGetShowsMessage: `kubectl get gitsync` (a Table request without
// -o wide, which hides columns of priority > 0) shows the Ready message,
// so a Stalled GitSync says why in the plain listing.
//
// Checked: with the Message column back at priority=1 the test fails on
// the column's priority.
func TestGetShowsMessage(t *testing.T) {
	c := installCRD(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	gs := &v1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       v1.GitSyncSpec{Source: v1.GitSource{URL: "https://example.com/app.git"}},
	}
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	const msg = "path \"deploy\" at main@sha1:abc renders no objects"
	meta.SetStatusCondition(&gs.Status.Conditions, metav1.Condition{
		Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonRenderFailed, Message: msg,
	})
	if err := c.Status().Update(ctx, gs); err != nil {
		t.Fatal(err)
	}

	table := getTable(t, "/apis/gitsync.dev/v1alpha1/namespaces/"+ns+"/gitsyncs")
	col := -1
	for i, d := range table.ColumnDefinitions {
		if d.Name == "Message" {
			col = i
			if d.Priority != 0 {
				t.Errorf("column Message has priority %d; kubectl get hides it without -o wide", d.Priority)
			}
		}
	}
	if col < 0 {
		t.Fatalf("no Message column in %+v", table.ColumnDefinitions)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(table.Rows))
	}
	if got := table.Rows[0].Cells[col]; got != msg {
		t.Errorf("Message cell = %v, want %q", got, msg)
	}
}

// getTable asks the apiserver for path as a Table, as kubectl get does.
func getTable(t *testing.T, path string) *metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(env.Config.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", req.URL, resp.Status)
	}
	table := &metav1.Table{}
	if err := json.NewDecoder(resp.Body).Decode(table); err != nil {
		t.Fatal(err)
	}
	return table
}
