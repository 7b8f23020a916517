// Package helm renders a Helm chart directory of a repository into
// manifests, as `helm template` would, with the Helm SDK as a library.
//
// Contract:
//   - Pure: every byte comes through the caller's Files, which confines reads
//     to the repository and charges them against the render's caps. Helm's own
//     directory loader is not used (it follows symlinks anywhere). Nothing is
//     fetched: a dependency charts/ does not hold is added from a file://
//     directory of the repository or from an archive the caller downloaded
//     (Options.Dependencies, found with Needs, read through Files.Archive and
//     checked against its digest), every archive unpacked within the
//     render's caps (Files.Charge); `lookup` sees an empty cluster, DNS
//     functions answer "", and values.schema.json is validated without loading any $ref (Helm's own
//     validator resolves them against the agent's disk and the network).
//   - Capabilities are what the caller gives (Options.Capabilities: the
//     target cluster's version and served API list, as `helm install` sees
//     them), else Helm's defaults (DefaultKubeVersion, the API versions
//     client-go knows). They are in Options.Digest, so a render cached for
//     one API list is not reused for another. This package never asks a
//     cluster for them.
//   - Test hooks (helm.sh/hook: test, test-success) are dropped; other hooks are
//     kept as plain objects, applied with the rest. NOTES.txt and partials are
//     not objects. No release or release Secret is ever written.
//   - Output is what Helm hands to the cluster, named by its path in the
//     repository: each template document as `helm template` prints it
//     (trimmed, then ended by one newline, so a block scalar that ends a
//     template keeps its final line break), each CRD file whole; decoding,
//     validation and the object caps stay with the caller.
package helm
