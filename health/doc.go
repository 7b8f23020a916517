// Package health reports the readiness of applied objects using kstatus
// (sigs.k8s.io/cli-utils) and waits for them by watch, never by sleeping.
//
// Contract: Check is pure; Wait returns as soon as every object is Current or
// one has Failed, or when its timeout expires, and never writes.
package health
