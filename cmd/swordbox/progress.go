package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how a run of cells advances: a bar when w is a terminal,
// otherwise one plain line per finished cell (no carriage returns in logs).
type progress struct {
	w       io.Writer
	name    string
	n       int
	bar     *progressbar.ProgressBar
	label   string // the cell under way
	started time.Time
}

// newProgress returns the progress display of a run of n cells; show false
// (--no-progress) prints nothing.
func newProgress(w io.Writer, name string, n int, show bool) *progress {
	p := &progress{w: w, name: name, n: n}
	if !show {
		p.w = nil
		return p
	}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions(n, progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true))
	}
	return p
}

// update is the suite's progress callback: cell i of n (0-based) is about
// to start, so i cells have finished; i == n means all are done.
func (p *progress) update(i, n int, label string) {
	if p.w == nil {
		return
	}
	if p.bar != nil {
		p.bar.Describe(label)
		_ = p.bar.Set(i)
		return
	}
	if i > 0 && p.label != "" {
		fmt.Fprintf(p.w, "%s: cell %d/%d done in %s: %s\n", p.name, i, n, time.Since(p.started).Round(100*time.Millisecond), p.label)
	}
	p.label, p.started = label, time.Now()
}

// finish ends the bar (leaving it at what was reached).
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
