package controller

import "k8s.io/apimachinery/pkg/types"

// refusedFor reports whether the agent may not list and watch the Secret
// key, so it is read with GETs (WebhookLookup then caches them).
func (w *secretWatch) refusedFor(key types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, ok := w.secrets[key]
	return ok && ws.refused
}
