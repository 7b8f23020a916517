package main

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/agent"
	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/testenv"
)

// TestInstallCRDWritesOnce: --install-crds over the CRD it installed
// before (a restart) reads it and writes nothing; a CRD someone changed
// (its digest gone) is applied again.
//
// Checked without the digest check: the second install sent its
// server-side apply (1 write).
func TestInstallCRDWritesOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := agent.InstallCRD(ctx, env.Config, env.Scheme); err != nil {
		t.Fatal(err)
	}
	again := &testenv.RequestCounter{}
	if err := agent.InstallCRD(ctx, again.Wrap(env.Config), env.Scheme); err != nil {
		t.Fatal(err)
	}
	if n := again.Writes.Load(); n != 0 {
		t.Errorf("install over the installed CRD sent %d writes, want 0: %v", n, again.Requests())
	}

	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gitsyncs.gitsync.dev"}, crd); err != nil {
		t.Fatal(err)
	}
	delete(crd.Annotations, v1.AnnotationCRDDigest)
	if err := env.Client.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	changed := &testenv.RequestCounter{}
	if err := agent.InstallCRD(ctx, changed.Wrap(env.Config), env.Scheme); err != nil {
		t.Fatal(err)
	}
	if n := changed.Writes.Load(); n != 1 {
		t.Errorf("install over a changed CRD sent %d writes, want its 1 apply: %v", n, changed.Requests())
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gitsyncs.gitsync.dev"}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Annotations[v1.AnnotationCRDDigest] == "" {
		t.Errorf("the re-applied CRD has no %s annotation", v1.AnnotationCRDDigest)
	}
}
