// Package notify tells people when a GitSync's state changes: it builds the
// message for a generic webhook (a JSON body signed with HMAC-SHA256),
// Slack, Microsoft Teams or Discord, and sends it with one HTTP request.
//
// Contract: Send posts one Event to one Target with the client it is given
// and no other; the caller builds that client so that it dials through the
// agent's egress policy, follows no redirect and uses no proxy
// (commitstatus.NewHTTPClient). The package reads no Secret: the caller
// reads the Target's address and key from the tenant's Secret. No error
// carries the address or the key (an incoming-webhook URL is a
// credential): a failed request is reduced to its status code or the
// transport's cause with both cut out.
//
// CommentBody renders an Event as the Markdown of a pull or merge request
// comment (providers github and gitlab): the Event's fields and the
// objects its sync changed, by name only, free text in code blocks; the
// caller posts it with a commitstatus.Commenter.
//
// Queue sends Items off the caller's path: one sender per (GitSync,
// destination), in order, each send bounded by a timeout, and a token
// bucket per (GitSync, destination) so a flapping GitSync cannot flood a
// channel; while the bucket is empty the newest Items wait and the oldest
// are dropped. It never retries a failed send.
//
// The package decides nothing about when to notify: the caller says a
// transition happened; Queue never drops an Item for saying the same as an
// earlier one.
package notify
