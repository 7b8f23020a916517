// Package webui serves gitsync's web view: a local page of every GitSync
// (state, revision, last applied time, message) and, for one GitSync, the
// tree of its objects with their health, its Events, its history and a
// preview of what a branch would change. Pages are rendered on the server
// (html/template escapes every value); a small script swaps a page's
// content when the Backend reports a change, and moves focus with the
// keyboard.
//
// The server owns no credential and decides nothing: what it shows and
// the three actions it offers (reconcile, suspend, resume) come from a
// Backend, which acts as the person running it. It listens on loopback
// only and guards that edge itself: a request must name the server's own
// loopback host (so a DNS-rebound name cannot read the pages), and an
// action must carry the page's token and come from the page's own origin
// (so another site open in the same browser cannot post one).
package webui
