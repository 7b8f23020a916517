// Package commitstatus sets the status of a commit on its Git host (GitHub,
// GitLab, Gitea, Bitbucket Cloud) through the host's REST API: pending while
// gitsync applies a revision, success when it is Ready, failure with the
// reason.
//
// Contract: one Post is one HTTP request, bounded by the client's timeout,
// sent only to the API address the Poster was built with. The HTTP client
// (NewHTTPClient) dials through an egress.Dialer, so a tenant-named address
// is judged by the agent's egress policy at connect time; it never follows a
// redirect (the credentials would go along to wherever the host points) and
// never uses a proxy from the environment (the proxy's address would be
// judged instead of the host's). Credentials come only from Credentials, the
// tenant's own Secret: the package holds no other identity. No error carries
// a credential: a host's answer is reduced to its status code and a short
// message with the credentials cut out.
//
// Commenter (GitHub and GitLab) looks up the pull or merge requests holding
// a commit and posts one comment on each, with the same client, address
// rules and credential handling as Poster: a lookup and its posts are a
// few requests, each bounded by the client's timeout; a commit in no
// request posts nothing. It decides nothing about the comment's text.
//
// Queue sends reports for many GitSyncs without holding any of them: one
// queue and one sender per GitSync, the newest reports kept while a host
// is slow, a report that says what the last one said dropped, so the
// caller may queue on every pass and a converged GitSync posts nothing.
//
// The package decides nothing about what to post or when: the caller says
// what happened to a commit; and it reads no Secret itself (the caller's
// post function reads the credentials and builds the Poster).
package commitstatus
