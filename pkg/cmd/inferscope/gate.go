package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/units"
)

// Exit statuses of `inferscope gate` beyond exitOK (pass) and exitUsage.
const (
	gateExitFail         = 1 // the canary is worse than allowed
	gateExitInsufficient = 3 // too little traffic or too few points to decide: never a pass
)

const gateExitHelp = `Exit status: 0 pass; 1 fail (the canary is worse than allowed); 2 the command line is wrong;
3 insufficient data (too little traffic to decide: never a pass); 4 the gate could not be
evaluated (Prometheus unreachable or refusing, no metric profile).`

// exitStatus is an error that chooses the command's exit status.
type exitStatus struct {
	code int
	msg  string
}

func (e exitStatus) Error() string { return e.msg }
func (e exitStatus) ExitCode() int { return e.code }

// ratioFlag is a threshold written as a fraction or a percentage.
type ratioFlag struct{ v *float64 }

func (f ratioFlag) String() string {
	if f.v == nil {
		return ""
	}
	return fmt.Sprintf("%g", *f.v)
}

func (f ratioFlag) Set(s string) error {
	x, err := gate.ParseRatio(s)
	if err != nil {
		return err
	}
	*f.v = x
	return nil
}

func runGate(ctx context.Context, path string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(path)
	var conn promConn
	conn.register(fs)
	o := gate.Options{LatencyThreshold: gate.DefaultLatencyThreshold, MemoryThreshold: gate.DefaultMemoryThreshold}
	fs.StringVar(&o.Model, "model", "", "model name")
	fs.StringVar(&o.Baseline, "baseline", "", "the current version")
	fs.StringVar(&o.Canary, "canary", "", "the canary version")
	window := fs.String("window", "2h", "window compared, ending at --at")
	at := fs.String("at", "", "end of the window, RFC 3339 or Unix seconds (default now)")
	fs.Var(ratioFlag{&o.LatencyThreshold}, "latency-threshold", "latency increase that fails")
	fs.Var(ratioFlag{&o.MemoryThreshold}, "memory-threshold", "GPU memory increase that fails")
	fs.Float64Var(&o.MinRequests, "min-requests", gate.DefaultMinRequests, "requests each version must serve in the window")
	fs.IntVar(&o.MinPoints, "min-points", gate.DefaultMinPoints, "latency points both versions must have")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress lines on standard error")
	help := func() {
		fmt.Fprintf(stdout, `%s --prometheus URL --model M --baseline V --canary V [flags]

Compares a canary version with the current one over a window: P95 and mean latency on the
instances serving both, GPU memory where it can be attributed, mean confidence where the
metrics have it. Fails when latency is worse by more than --latency-threshold or memory up by
more than --memory-threshold; too little traffic is "insufficient data", never a pass.

Flags:
%s
  --model M, --baseline V, --canary V   what to compare (required)
  --window DURATION            default 2h
  --at TIME                    end of the window, RFC 3339 or Unix seconds (default now)
  --latency-threshold RATIO    default 10%%
  --memory-threshold RATIO     default 5%%
  --min-requests N             per version in the window (default %d)
  --min-points N               latency points both versions have (default %d)
  --json                       print the report as JSON (the data source's gate resource answer)
  --quiet                      no progress lines on standard error

%s
`, path, connFlagsHelp(), gate.DefaultMinRequests, gate.DefaultMinPoints, gateExitHelp)
	}
	if err := parseFlags(fs, args, help); err != nil {
		return err
	}
	var err error
	if o.Window, err = engine.ParseDuration(*window); err != nil {
		return usagef("--window: %v", err)
	}
	if *at != "" {
		if o.At, err = gate.ParseTime(*at); err != nil {
			return usagef("--at: %v", err)
		}
	}
	if err := o.WithDefaults(time.Now()).Validate(); err != nil {
		return usagef("%v", err)
	}
	e, err := conn.engine(ctx)
	if err != nil {
		return err
	}
	od := o.WithDefaults(time.Now())
	if e, err = forSubject(ctx, e, od.Subject(), map[string]string{od.Baseline: "--baseline", od.Canary: "--canary"}); err != nil { // in a fleet, the model's own server
		return err
	}
	p := newProgress(stderr, "gate", *quiet)
	p.Step(1, 1, fmt.Sprintf("comparing %s %s with %s", o.Model, o.Canary, o.Baseline))
	r, err := gate.Evaluate(ctx, e, o)
	p.Done()
	if err != nil {
		return workFailed(err, gate.ErrOptions)
	}
	if err := printAnswer(stdout, *asJSON, r, printGate); err != nil {
		return err
	}
	switch r.Verdict {
	case gate.Fail:
		return exitStatus{gateExitFail, "gate: fail: " + r.Reason}
	case gate.InsufficientData:
		return exitStatus{gateExitInsufficient, "gate: insufficient data: " + r.Reason}
	}
	return nil
}

// printGate writes the report for people.
func printGate(w io.Writer, r *gate.Report) error {
	fmt.Fprintf(w, "%s %s (canary) vs %s, %s window ending %s: %s\n%s\n\n", r.Model, r.Canary, r.Baseline, r.Window.Duration,
		r.Window.End.Format(time.RFC3339), strings.ToUpper(strings.ReplaceAll(string(r.Verdict), "_", " ")), r.Reason)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tBASELINE\tCANARY\tCHANGE\tLIMIT\tRESULT")
	for _, c := range r.Checks {
		result := "skipped"
		switch {
		case c.Insufficient:
			result = "insufficient"
		case c.Passed != nil && *c.Passed:
			result = "ok"
		case c.Passed != nil:
			result = "FAIL"
		case c.Baseline != nil:
			result = "info"
		}
		limit := "-"
		if c.Threshold != nil {
			if c.Name == gate.CheckTraffic {
				limit = fmt.Sprintf(">= %g", *c.Threshold)
			} else {
				limit = fmt.Sprintf("+%g %%", math.Round(*c.Threshold*1000)/10)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, units.Value(c.Baseline, c.Unit), units.Value(c.Canary, c.Unit), changeText(c.Change), limit, result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%s: %s\n", c.Name, c.Reason)
	}
	for _, n := range r.Notices {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// changeText writes a relative change (now / before − 1) as a percentage, or as a multiple once
// the reading has grown tenfold: a share that rose from 0.03 % to 13.5 % reads ×449, not
// +44788.2 %.
func changeText(v *float64) string {
	switch {
	case v == nil:
		return "-"
	case *v >= 99:
		return fmt.Sprintf("×%.0f", *v+1)
	case *v >= 9:
		return fmt.Sprintf("×%.1f", *v+1)
	}
	return fmt.Sprintf("%+.1f %%", *v*100)
}
