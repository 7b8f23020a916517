package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/health"
	"gitsync.dev/gitsync/object"
)

// TestJudgeHealth: how the objects not ready turn into the state of a wait.
func TestJudgeHealth(t *testing.T) {
	res := func(name string, s health.Status) health.Result {
		return health.Result{ID: object.ID{Kind: "Deployment", Namespace: "prod", Name: name}, Status: s, Message: "kstatus says " + name}
	}
	many := make([]health.Result, 12)
	for i := range many {
		many[i] = res(fmt.Sprint("d", i), health.InProgress)
	}
	tests := []struct {
		name    string
		pending []health.Result
		waited  time.Duration
		// wantMsg and wantErr are substrings; wantReason is the Stalled reason.
		wantMsg, wantErr, wantReason string
	}{
		{name: "all ready", waited: time.Hour},
		{name: "waiting", pending: []health.Result{res("web", health.InProgress)}, waited: time.Minute,
			wantMsg: "Waiting for 1 object to become ready: Deployment/prod/web (InProgress)"},
		{name: "many waiting", pending: many, waited: time.Minute,
			wantMsg: "Waiting for 12 objects to become ready: Deployment/prod/d0 (InProgress), "},
		{name: "timed out", pending: []health.Result{res("web", health.InProgress)}, waited: 5 * time.Minute,
			wantErr: "not ready after 5m0s: Deployment/prod/web is InProgress (kstatus says web)", wantReason: v1.ReasonHealthCheckFailed},
		{name: "failed at once", pending: []health.Result{res("web", health.Failed), res("db", health.InProgress)}, waited: time.Second,
			wantErr: "Deployment/prod/web failed: kstatus says web", wantReason: v1.ReasonHealthCheckFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := judgeHealth(tt.pending, tt.waited, 5*time.Minute)
			if tt.wantMsg == "" && msg != "" || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message = %q, want %q", msg, tt.wantMsg)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("error = %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if se := asSyncError(err, ""); !se.Stalled || se.Reason != tt.wantReason {
				t.Errorf("error is %+v, want Stalled %s", se, tt.wantReason)
			}
		})
	}
	if msg, _ := judgeHealth(many, 0, time.Minute); !strings.HasSuffix(msg, "Deployment/prod/d9 (InProgress) and 2 more") {
		t.Errorf("12 objects: message %q, want 10 named and 2 more", msg)
	}
}
