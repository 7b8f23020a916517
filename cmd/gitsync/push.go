package main

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"gitsync.dev/gitsync/source/oci"
)

// Environment variables holding registry credentials; without them the
// docker configuration ($DOCKER_CONFIG, `docker login`) is used.
const (
	ociEnvUsername = "GITSYNC_OCI_USERNAME"
	ociEnvPassword = "GITSYNC_OCI_PASSWORD"
)

// ociClient is the CLI's registry client: credentials from the
// environment, else the docker configuration.
func ociClient(plainHTTP bool) *oci.Client {
	return ociClientAs(plainHTTP, os.Getenv(ociEnvUsername), os.Getenv(ociEnvPassword))
}

// ociClientAs is the CLI's registry client with the credentials user and
// password, else (both empty) those of the docker configuration.
func ociClientAs(plainHTTP bool, user, password string) *oci.Client {
	opts := oci.Options{PlainHTTP: plainHTTP, Keychain: authn.DefaultKeychain, UserAgent: "gitsync/" + readBuild(version, commit, date, nil).version}
	if user != "" || password != "" {
		opts.Auth = &authn.Basic{Username: user, Password: password}
	}
	return oci.New(opts)
}

// newPushCmd returns `gitsync push`, whose one verb is artifact.
func newPushCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "push",
		Short: "Publish manifests for a GitSync or the CLI to read",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newPushArtifactCmd())
	return cmd
}

// newPushArtifactCmd returns `gitsync push artifact DIR oci://…:TAG`.
func newPushArtifactCmd() *cobra.Command {
	var o oci.PushOptions
	var plainHTTP bool
	cmd := &cobra.Command{
		Use:   "artifact DIR oci://REGISTRY/REPOSITORY:TAG",
		Short: "Pack a directory of manifests as an OCI artifact and push it",
		Long: `Pack the files under DIR (without .git) as an OCI artifact in the layout
flux push artifact writes, and push it to the tag named. The same files
always pack to the same digest. Read it back with --url oci://… on diff,
apply and build.

Credentials come from $` + ociEnvUsername + ` and $` + ociEnvPassword + `, else from the
docker configuration (docker login, $DOCKER_CONFIG).`,
		Example: `  # In CI, after the tests passed
  gitsync push artifact ./deploy oci://ghcr.io/org/app-manifests:$(git rev-parse --short HEAD) \
    --source "$(git config --get remote.origin.url)" --revision "main@sha1:$(git rev-parse HEAD)"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := oci.ParseReference(args[1])
			if err != nil {
				return withExitCode(exitError, err)
			}
			if a.Ref.Tag == "" {
				return withExitCode(exitError, fmt.Errorf("%s: name the tag to push, oci://REGISTRY/REPOSITORY:TAG", args[1]))
			}
			dir, err := realDir(args[0])
			if err != nil {
				return withExitCode(exitError, err)
			}
			rev, err := ociClient(plainHTTP).Push(cmd.Context(), dir, a, o)
			if err != nil {
				return withExitCode(exitError, err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "pushed %s:%s\n", a.URL, rev)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Source, "source", "", "Where the files came from (a repository URL), recorded as the artifact's source annotation.")
	fs.StringVar(&o.Revision, "revision", "", "Which revision of the source (e.g. main@sha1:<commit>), recorded as its revision annotation.")
	fs.StringVar(&o.Created, "created", "", "RFC 3339 creation time to record (default: none, so the digest depends on the files alone).")
	fs.BoolVar(&plainHTTP, "plain-http", false, "Speak plain HTTP to the registry (a local registry without TLS).")
	return cmd
}
