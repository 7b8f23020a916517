package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
)

// Output formats accepted by -o.
const (
	outputText = ""
	outputJSON = "json"
	outputYAML = "yaml"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colorEnabled reports whether output to w may carry ANSI colours: only on a
// terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb.
func colorEnabled(w io.Writer) bool {
	return colorAllowed(isTerminal(w))
}

// colorAllowed is the rule of colorEnabled for a destination that is, or is
// not, a terminal.
func colorAllowed(terminal bool) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return terminal
}

// colour is an ANSI SGR code.
type colour string

const (
	colourRed    colour = "31"
	colourGreen  colour = "32"
	colourYellow colour = "33"
	colourCyan   colour = "36"
	colourBold   colour = "1"
)

// printer writes human output, coloured when the destination allows it.
type printer struct {
	out   io.Writer
	color bool
}

func newPrinter(w io.Writer) *printer {
	return &printer{out: w, color: colorEnabled(w)}
}

// paint wraps s in colour c when colours are on.
func (p *printer) paint(c colour, s string) string {
	if !p.color || s == "" {
		return s
	}
	return "\x1b[" + string(c) + "m" + s + "\x1b[0m"
}

// Printf writes formatted text.
func (p *printer) Printf(format string, args ...any) {
	fmt.Fprintf(p.out, format, args...)
}

// Diff writes a unified diff, indented, with added lines green, removed
// lines red and hunk headers cyan.
func (p *printer) Diff(text string) {
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		var c colour
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			c = colourBold
		case strings.HasPrefix(line, "+"):
			c = colourGreen
		case strings.HasPrefix(line, "-"):
			c = colourRed
		case strings.HasPrefix(line, "@@"):
			c = colourCyan
		}
		if c != "" {
			line = p.paint(c, line)
		}
		fmt.Fprintln(p.out, "    "+line)
	}
}

// newTable returns a tabwriter laid out like kubectl's tables.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// validateOutput checks an -o value against the formats a command accepts.
func validateOutput(got string, allowed ...string) error {
	for _, a := range allowed {
		if got == a {
			return nil
		}
	}
	var names []string
	for _, a := range allowed {
		if a != outputText {
			names = append(names, a)
		}
	}
	return fmt.Errorf("output format %q not supported; use one of: %s", got, strings.Join(names, ", "))
}

// progress shows a spinner with a label and the elapsed time on a terminal
// while a long step runs. Off a terminal it prints nothing, so logs and pipes
// stay clean.
type progress struct {
	out   io.Writer
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	label string
	// count of total objects are done, once Count was called.
	count, total int
}

// startProgress starts a spinner on w (when w is a terminal) for label.
func startProgress(w io.Writer, label string) *progress {
	p := &progress{out: w, label: label, start: time.Now(), stop: make(chan struct{})}
	if !isTerminal(w) {
		return p
	}
	p.done.Add(1)
	go p.spin()
	return p
}

// Count sets how many of total objects are done; from then on the line is a
// bar. Safe for concurrent use (the applier calls it from its workers).
func (p *progress) Count(done, total int) {
	p.mu.Lock()
	p.count, p.total = done, total
	p.mu.Unlock()
}

// progressBar renders done of total as a fixed-width bar with the counts.
func progressBar(done, total, width int) string {
	if total <= 0 {
		return ""
	}
	done = min(max(done, 0), total)
	filled := done * width / total
	return "[" + strings.Repeat("=", filled) + strings.Repeat(" ", width-filled) + "] " + fmt.Sprintf("%d/%d", done, total)
}

// Step changes the label of a running progress.
func (p *progress) Step(label string) {
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (p *progress) spin() {
	defer p.done.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.stop:
			fmt.Fprint(p.out, "\r\x1b[2K")
			return
		case <-t.C:
			if i < 5 { // quick steps finish without a flicker
				continue
			}
			p.mu.Lock()
			label, count, total := p.label, p.count, p.total
			p.mu.Unlock()
			elapsed := time.Since(p.start).Truncate(time.Second)
			if total > 0 {
				fmt.Fprintf(p.out, "\r\x1b[2K%s %s %s", label, progressBar(count, total, 30), elapsed)
				continue
			}
			fmt.Fprintf(p.out, "\r\x1b[2K%s %s %s", spinnerFrames[i%len(spinnerFrames)], label, elapsed)
		}
	}
}

// Done stops the spinner and clears its line.
func (p *progress) Done() {
	select {
	case <-p.stop:
		return
	default:
		close(p.stop)
	}
	p.done.Wait()
}
