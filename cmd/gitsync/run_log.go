package main

import (
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"gitsync.dev/gitsync/agent"
	"gitsync.dev/gitsync/controller"
)

// newLogger returns the agent's logger, zap through controller-runtime:
// JSON for log collectors (in a cluster, or when stderr is not a terminal),
// console for a person at a terminal. No line carries a stack trace: a
// failed sync is an expected event whose line names the GitSync, revision
// and reason, and the reconciler's own line replaces controller-runtime's
// "Reconciler error" for the same failure (controller.WithoutReportedErrors).
func newLogger(format string, verbose bool) (logr.Logger, error) {
	return buildLogger(os.Stderr, format, verbose, agent.InCluster(), term.IsTerminal(int(os.Stderr.Fd())))
}

// buildLogger is newLogger with its environment as arguments.
func buildLogger(w io.Writer, format string, verbose, inCluster, terminal bool) (logr.Logger, error) {
	opts := []zap.Opts{zap.WriteTo(w), zap.JSONEncoder(), zap.StacktraceLevel(zapcore.DPanicLevel)}
	switch format {
	case "json":
	case "console":
		opts = append(opts, zap.ConsoleEncoder())
	case "auto", "":
		if terminal && !inCluster {
			opts = append(opts, zap.ConsoleEncoder())
		}
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: want json, console or auto", format)
	}
	level := zapcore.InfoLevel
	if verbose {
		level = zapcore.DebugLevel
	}
	opts = append(opts, zap.Level(level))
	return controller.WithoutReportedErrors(zap.New(opts...)), nil
}
