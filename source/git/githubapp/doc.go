// Package githubapp mints GitHub App installation tokens: the credentials a
// GitSync uses for Git over HTTPS when its source Secret holds a GitHub
// App's id and private key instead of a password or an ssh key.
//
// A token is minted by signing a short JWT with the app's private key (RS256,
// issued 60 s in the past, valid for 9 minutes) and exchanging it at
// POST {base}/app/installations/{id}/access_tokens; without an installation
// id the installation is looked up for the repository first
// (GET {base}/repos/{owner}/{repo}/installation). Tokens are cached per
// (app, installation, API base URL, private key digest), shared by every
// caller presenting the same app, and minted again once less than
// Options.RefreshBefore of their life remains.
//
// It never: sends a request through a client the caller did not give it (the
// caller's client dials through the egress policy), follows a redirect, or
// puts the private key, a JWT or a token into an error.
package githubapp
