package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/utils/clock"
)

// watchQuiet is how long the directory must be quiet before the diff re-runs:
// an editor's save or a git checkout is a burst of events, not one.
const watchQuiet = 300 * time.Millisecond

// watch runs the diff, then again after every burst of changes under the
// local directory, until ctx is cancelled (Ctrl-C). Errors of one run are
// printed and the loop goes on: a half-typed manifest is not fatal.
func (o *diffOptions) watch(ctx context.Context, tgt *connectedCluster) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return withExitCode(exitError, fmt.Errorf("watch %s: %w", o.Source.Dir, err))
	}
	defer w.Close()
	if err := watchTree(w, o.Source.Dir); err != nil {
		return withExitCode(exitError, fmt.Errorf("watch %s: %w", o.Source.Dir, err))
	}
	changed := make(chan struct{}, 1)
	settled := make(chan struct{}, 1)
	go debounce(ctx, clock.RealClock{}, watchQuiet, changed, settled)

	o.watchRun(ctx, tgt)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if !relevantChange(ev) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					_ = watchTree(w, ev.Name) // a new directory's files matter too
				}
			}
			notify(changed)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			fmt.Fprintln(o.ErrOut, "warning: watch:", err)
		case <-settled:
			o.watchRun(ctx, tgt)
		}
	}
}

// watchRun runs one diff, headed by the time; on a terminal the screen is
// cleared first so the latest diff is all there is to read.
func (o *diffOptions) watchRun(ctx context.Context, tgt *connectedCluster) {
	if isTerminal(o.Out) {
		fmt.Fprint(o.Out, "\x1b[H\x1b[2J")
	}
	fmt.Fprintf(o.Out, "# %s  gitsync diff %s\n", time.Now().Format(time.TimeOnly), o.Source.Dir)
	err := o.runOnce(ctx, tgt)
	if ctx.Err() != nil {
		return
	}
	if code := reportError(o.ErrOut, err); code != exitOK {
		fmt.Fprintf(o.Out, "# exit status %d; watching for changes (Ctrl-C to stop)\n", code)
	} else {
		fmt.Fprintln(o.Out, "# watching for changes (Ctrl-C to stop)")
	}
}

// watchTree adds dir and every directory below it, except hidden ones (.git).
func watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		return w.Add(path)
	})
}

// relevantChange drops events the renderer would not see: hidden files and
// directories (.git, editor swap files), backup files and attribute changes.
func relevantChange(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	base := filepath.Base(ev.Name)
	return !strings.HasPrefix(base, ".") && !strings.HasSuffix(base, "~")
}

// notify sends on a one-slot channel without blocking.
func notify(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// debounce sends one value on out after a burst of values on in has been
// followed by quiet without any, until ctx is cancelled.
func debounce(ctx context.Context, clk clock.Clock, quiet time.Duration, in <-chan struct{}, out chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
		}
		t := clk.NewTimer(quiet)
	burst:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-in:
				t.Stop()
				t = clk.NewTimer(quiet)
			case <-t.C():
				break burst
			}
		}
		notify(out)
	}
}
