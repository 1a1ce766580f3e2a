// Package cli holds the terminal helpers graphmill's commands share:
// progress bars that appear only on a terminal, and step timing lines.
package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/graphmill/graphmill/internal/jsonnull"
	"github.com/graphmill/graphmill/internal/units"
)

// Stderr is where progress and step lines go (stdout is kept for results,
// so that --json output can be piped).
var Stderr io.Writer = os.Stderr

// IsTerminal reports whether stderr is a terminal.
func IsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// Bar is a progress bar on stderr, silent when stderr is not a terminal.
// It shows the count, the average rate since the bar started in the bar's
// unit ("12.5 epochs/s", "1.3M nodes/s") and the time left at that rate.
type Bar struct {
	b     *progressbar.ProgressBar
	unit  string
	total int64

	mu    sync.Mutex
	desc  string
	start time.Time
	n     int64
}

// NewBar starts a bar for total units called unit ("epochs", "nodes",
// "parts"; -1 total for an unknown one).
func NewBar(total int64, desc, unit string) *Bar {
	if !IsTerminal() {
		return &Bar{}
	}
	return &Bar{
		b: progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(Stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionClearOnFinish(),
		),
		unit: unit, total: total, desc: desc, start: time.Now(),
	}
}

// Rate formats n units done in elapsed as an average rate and, with a
// known total, the time left at that rate: "1.3M nodes/s, 12s left".
func Rate(n, total int64, elapsed time.Duration, unit string) string {
	if n <= 0 || elapsed <= 0 {
		return ""
	}
	r := float64(n) / elapsed.Seconds()
	var s string
	switch {
	case r >= 10:
		s = units.Count(int64(r)) + " " + unit + "/s"
	case r >= 0.1:
		s = fmt.Sprintf("%.2g %s/s", r, unit)
	default:
		s = fmt.Sprintf("%s per %s", units.Duration(time.Duration(float64(time.Second)/r)), singular(unit))
	}
	if total > 0 && n < total {
		s += ", " + units.Duration(time.Duration(float64(total-n)/r*float64(time.Second))) + " left"
	}
	return s
}

func singular(unit string) string {
	if len(unit) > 1 && unit[len(unit)-1] == 's' {
		return unit[:len(unit)-1]
	}
	return unit
}

func (b *Bar) render() {
	rate := Rate(b.n, b.total, time.Since(b.start), b.unit)
	if rate != "" {
		b.b.Describe(b.desc + "  " + rate)
	} else {
		b.b.Describe(b.desc)
	}
}

// Set moves the bar to n.
func (b *Bar) Set(n int64) {
	if b.b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n = n
	b.render()
	b.b.Set64(n)
}

// Add advances the bar by n.
func (b *Bar) Add(n int) {
	if b.b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(n)
	b.render()
	b.b.Set64(b.n)
}

// Describe changes the bar's description (the rate is appended to it).
func (b *Bar) Describe(s string) {
	if b.b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.desc = s
	b.render()
}

// Finish clears the bar.
func (b *Bar) Finish() {
	if b.b != nil {
		b.b.Finish()
	}
}

// Step prints "what ... done in 1.2s" around fn, with a spinner and the
// elapsed time while fn runs on a terminal.
func Step(what string, fn func() error) error {
	start := time.Now()
	var sp *progressbar.ProgressBar
	if IsTerminal() {
		sp = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(Stderr),
			progressbar.OptionSetDescription(what),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
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
				if sp != nil {
					sp.Add(0)
				}
			}
		}
	}()
	err := fn()
	close(stop)
	<-done
	if sp != nil {
		sp.Finish()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(Stderr, "%-40s %s\n", what, units.Duration(time.Since(start)))
	return nil
}

// WriteJSON writes v as indented JSON (a command's --json output), with
// NaN and infinite values as null.
func WriteJSON(w io.Writer, v any) error {
	b, err := jsonnull.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Measured formats a figure with format, or "-" where it was not
// measured (x <= 0: a ratio, rate or size of a run that did not happen):
// a report never prints a missing figure as a value.
func Measured(x float64, format string) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

// MeasuredPtr is Measured for a figure kept as a pointer (nil: not
// measured).
func MeasuredPtr(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// Seconds is s seconds as a Duration (for units.Duration).
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// ParseMaxMemory parses --max-memory ("" is no bound).
func ParseMaxMemory(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := units.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("--max-memory: %w", err)
	}
	if n <= 0 {
		return 0, fmt.Errorf("--max-memory %q: want a positive size such as 2GiB", s)
	}
	return n, nil
}
