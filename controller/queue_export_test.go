package controller

// QueueLen is how many GitSyncs are ready in the work queue (not those
// being reconciled, nor those waiting for a requeue time); -1 when the
// queue is not a priority queue.
func (r *GitSyncReconciler) QueueLen() int {
	if r.news.queue == nil {
		return -1
	}
	return r.news.queue.Len()
}
