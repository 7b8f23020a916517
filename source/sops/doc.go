// Package sops decrypts SOPS-encrypted YAML files with age identities.
//
// It implements the part of the SOPS file format (github.com/getsops/sops)
// that gitsync needs, rather than importing the SOPS module: every SOPS
// package that reads a file (the root package, stores, aes) imports its key
// service, which links the AWS, Azure, GCP, HashiCorp Vault and Huawei Cloud
// SDKs and a PostgreSQL driver into the agent. What is implemented: the
// metadata under the top-level "sops" key, age recipients (one key group,
// no Shamir split), AES-256-GCM values "ENC[AES256_GCM,data:…,iv:…,tag:…,
// type:…]" whose additional data is the value's key path, the
// (un)encrypted_suffix and (un)encrypted_regex selections,
// mac_only_encrypted, and the MAC: a SHA-512 over the values in file order,
// encrypted with the data key and the lastmodified time. A file whose MAC
// does not verify is refused, so a changed, added, removed or reordered
// value is never applied. Comments are not decrypted (Kubernetes never
// sees them). PGP and cloud KMS keys are not supported.
//
// Contract: decrypted values live in memory only, in the objects returned
// to the caller. No error, and no String of any type here, holds a
// plaintext value or a private key: errors name the file, the key path and
// the public age recipients.
//
// Because the MAC covers the values in their file order, decryption starts
// from the file's bytes (Decrypt), not from a decoded object whose map has
// lost that order. Plaintext.Object then replaces each ENC[...] value of an
// object rendered from that file (possibly changed by kustomize since) by its
// plaintext, matching ciphertexts, which are unique per value.
package sops
