// Package v9 is a fixture for the API reference generator.
//
// +groupName=example.dev
package v9
