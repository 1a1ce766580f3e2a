// Package cli holds the terminal helpers graphmill's commands share:
// progress bars that appear only on a terminal, and step timing lines.
package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/graphmill/graphmill/internal/units"
)

// Stderr is where progress and step lines go (stdout is kept for results,
// so that --json output can be piped).
var Stderr io.Writer = os.Stderr

// IsTerminal reports whether stderr is a terminal.
func IsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// Bar is a progress bar on stderr, silent when stderr is not a terminal.
type Bar struct{ b *progressbar.ProgressBar }

// NewBar starts a bar for total units (-1 for an unknown total, shown as a
// spinner).
func NewBar(total int64, desc string) *Bar {
	if !IsTerminal() {
		return &Bar{}
	}
	return &Bar{progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("it"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)}
}

// Set moves the bar to n.
func (b *Bar) Set(n int64) {
	if b.b != nil {
		b.b.Set64(n)
	}
}

// Add advances the bar by n.
func (b *Bar) Add(n int) {
	if b.b != nil {
		b.b.Add(n)
	}
}

// Describe changes the bar's description.
func (b *Bar) Describe(s string) {
	if b.b != nil {
		b.b.Describe(s)
	}
}

// Finish clears the bar.
func (b *Bar) Finish() {
	if b.b != nil {
		b.b.Finish()
	}
}

// Step prints "what ... done in 1.2s" around fn, with a spinner while fn
// runs on a terminal.
func Step(what string, fn func() error) error {
	start := time.Now()
	bar := NewBar(-1, what)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				bar.Add(0)
			}
		}
	}()
	err := fn()
	close(stop)
	<-done
	bar.Finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(Stderr, "%-40s %s\n", what, units.Duration(time.Since(start)))
	return nil
}
