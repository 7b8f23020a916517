// Package redact keeps the sensitive values that entered one sync out of
// every message made from it.
//
// A Redactor is told each value as it enters (the data of a Secret the
// GitSync names, a decrypted SOPS value, a variable from a Secret, a
// credential) and masks it, as "***", in any text handed to it: raw, in the
// forms encoders and quoting turn it into (JSON and Go string escapes,
// \uXXXX escapes, doubled escapes, base64), and the runs of the value
// between the characters those forms escape, so an echo that escaped or
// split the value is masked too. It is the one redactor of gitsync: the
// agent's conditions, Events, log lines and commit statuses, and the CLI's
// diffs and messages, are made from text it has masked.
//
// Contract: it never logs, stores or returns a value it was told, and it
// masks only; it never decides what is sensitive (its callers tell it).
// Values shorter than MinLength are not searched for: they would blank out
// common words.
package redact
