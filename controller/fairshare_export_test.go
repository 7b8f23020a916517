package controller

// FairWaiting is how many GitSyncs wait for their namespace's share of the
// workers.
func (r *GitSyncReconciler) FairWaiting() int { return r.fair.waiting() }
