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
// The package decides nothing about when to post: the caller remembers what
// it posted and posts only on change.
package commitstatus
