// Command image builds gitsync's container image without a Docker daemon,
// with go-containerregistry, and pushes it. `make image` and `make image-push`
// run it:
//
//	image build -out bin/image -image REF -version V -revision SHA -created RFC3339 \
//	    -binary linux/amd64=PATH -binary linux/arm64=PATH
//	image push -layout bin/image/oci -image REF
//
// build writes OUT/oci, an OCI image layout holding a multi-platform index,
// and OUT/gitsync.tar, the linux/amd64 image as a `docker load` tarball
// tagged REF. The image is one layer on an empty base: the static binary at
// /gitsync (the entrypoint), CA certificates, and user 65532:65532.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: image build|push [flags]")
	}
	switch args[0] {
	case "build":
		return runBuild(args[1:])
	case "push":
		return runPush(ctx, args[1:])
	}
	return fmt.Errorf("unknown command %q: want build or push", args[0])
}

// binaries is the repeatable -binary platform=path flag.
type binaries struct {
	paths     map[string]string
	platforms []string // in flag order; the index lists images in this order
}

func (b *binaries) String() string { return fmt.Sprint(b.paths) }

func (b *binaries) Set(v string) error {
	p, path, ok := strings.Cut(v, "=")
	if !ok || p == "" || path == "" {
		return fmt.Errorf("%q: want platform=path, e.g. linux/amd64=bin/image/linux_amd64/gitsync", v)
	}
	if b.paths == nil {
		b.paths = map[string]string{}
	}
	if _, dup := b.paths[p]; dup {
		return fmt.Errorf("platform %s given twice", p)
	}
	b.paths[p] = path
	b.platforms = append(b.platforms, p)
	return nil
}

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	var (
		bins    binaries
		s       Spec
		out     = fs.String("out", "bin/image", "output directory: OUT/oci and OUT/gitsync.tar")
		image   = fs.String("image", "", "image reference the tarball is tagged with and the layout names")
		tarPlat = fs.String("tarball-platform", "linux/amd64", "platform of the docker-load tarball")
		created = fs.String("created", "", "creation time, RFC 3339 (default: now)")
	)
	fs.Var(&bins, "binary", "platform=path of a static gitsync binary (repeat per platform)")
	fs.StringVar(&s.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to install")
	fs.StringVar(&s.Version, "version", "", "version label")
	fs.StringVar(&s.Revision, "revision", "", "revision (commit) label")
	fs.StringVar(&s.Source, "source", "https://github.com/gitsync-dev/gitsync", "source repository label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(bins.platforms) == 0 || *image == "" || s.Version == "" {
		return errors.New("build needs -binary, -image and -version")
	}
	ref, err := name.ParseReference(*image)
	if err != nil {
		return fmt.Errorf("-image %q: %w", *image, err)
	}
	s.Binaries, s.Created = bins.paths, time.Now().UTC().Truncate(time.Second)
	if *created != "" {
		if s.Created, err = time.Parse(time.RFC3339, *created); err != nil {
			return fmt.Errorf("-created: %w", err)
		}
	}
	idx, err := Build(s, bins.platforms)
	if err != nil {
		return err
	}
	if err := writeLayout(filepath.Join(*out, "oci"), idx, ref); err != nil {
		return err
	}
	if err := writeTarball(filepath.Join(*out, "gitsync.tar"), idx, *tarPlat, ref); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image %s (index %s, %s)\n  %s\n  %s (%s, docker load / ctr images import / kind load image-archive)\n",
		ref, d, strings.Join(bins.platforms, ", "), filepath.Join(*out, "oci"), filepath.Join(*out, "gitsync.tar"), *tarPlat)
	return nil
}

func runPush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	dir := fs.String("layout", "bin/image/oci", "OCI layout written by build")
	image := fs.String("image", "", "reference to push to, e.g. registry.example.com/gitsync:0.2.0")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *image == "" {
		return errors.New("push needs -image")
	}
	ref, err := name.ParseReference(*image)
	if err != nil {
		return fmt.Errorf("-image %q: %w", *image, err)
	}
	d, err := push(ctx, *dir, ref)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", ref.Context(), d)
	return nil
}
