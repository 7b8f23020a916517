package controller

import "time"

// SetCommitStatusTimeout sets how long r waits for one commit status post;
// call it before the agent posts anything.
func SetCommitStatusTimeout(r *GitSyncReconciler, d time.Duration) {
	r.commits.timeout = d
}
