package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress reports long work on standard error: one rewritten line on a terminal, one line per
// step otherwise (logs keep the trail). Standard output stays clean for the answer and --json.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	quiet bool
	what  string
	start time.Time
	width int
}

// newProgress reports on w unless quiet; what names the work ("backtest").
func newProgress(w io.Writer, what string, quiet bool) *progress {
	return &progress{w: w, tty: isTerminal(w), quiet: quiet, what: what, start: time.Now()}
}

// Step says that step i of n (1-based) is starting.
func (p *progress) Step(i, n int, label string) {
	if p == nil || p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("%s: [%d/%d] %s (%.1f s)", p.what, i, n, label, time.Since(p.start).Seconds())
	if p.tty {
		pad := max(0, p.width-len(line))
		fmt.Fprintf(p.w, "\r%s%*s", line, pad, "")
		p.width = len(line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// Done ends the report (clears the terminal line).
func (p *progress) Done() {
	if p == nil || p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprintf(p.w, "\r%*s\r", p.width, "")
		p.width = 0
	}
}

// isTerminal says whether w is a character device (a terminal), not a file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
