// Package postrender changes rendered objects after the render, whatever
// rendered them (plain YAML, kustomize, a Helm chart): a GitSync's
// spec.patches, spec.commonMetadata and spec.images, applied with
// kustomize's own transformers (PatchTransformer, LabelTransformer,
// AnnotationsTransformer, ImageTagTransformer) on a resource map built
// from the objects, in that order, as a kustomization runs them.
//
// Contract: Apply is a pure function of the objects and the Options; it
// reads no file and no cluster and starts nothing. Its output is charged
// to the render's budget as it is encoded; it runs where the render runs
// (package render calls it, so a change to a kustomize or Helm path, and
// any path with changes at all, runs in the render's sandbox child). A
// change that cannot apply, and a patch whose target matches no object
// (unless the patch is Optional), is an *Error naming the field
// (spec.patches[2]) and no object is returned: nothing half-changed is
// ever applied. Its messages never quote a Secret: a failure on a patch
// that touches a Secret keeps kustomize's text back.
//
// Apply never adds an object; a strategic-merge patch with `$patch: delete`
// may remove one, as in kustomize. It never decrypts: SOPS values stay
// ciphertext until package prepare decrypts them, and prepare's rule that
// decrypted values only land in Secrets judges the objects as changed here.
package postrender
