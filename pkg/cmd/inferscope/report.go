package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/triage"
)

// reportExitFailOn: --fail-on was given and a reading reached that status.
const reportExitFailOn = 1

const reportExitHelp = `Exit status: 0 the report was printed (whatever the marks, unless --fail-on); 1 a reading
reached the --fail-on status; 2 the command line is wrong; 4 the report could not be read
(Prometheus unreachable or refusing, no metric profile).`

func runReport(ctx context.Context, path string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(path)
	var conn promConn
	conn.register(fs)
	var o triage.HealthOptions
	fs.StringVar(&o.Model, "model", "", "model name")
	fs.StringVar(&o.Version, "version", "", "model version (default all)")
	at := fs.String("at", "", "end of the window (default now)")
	window := fs.String("window", "15m", "window ending at --at")
	failOn := fs.String("fail-on", "", "exit 1 when a reading is critical (critical) or warn or worse (warn)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress on standard error")
	help := func() {
		fmt.Fprintf(stdout, `%s --prometheus URL --model M [--version V] [--at T] [--window 15m] [flags]

The layered health of a model: resource (GPU memory, utilisation, idle under traffic, XID/ECC),
framework (cache hit rate, queue depth, preemptions, warm-up), service (P95 against its 7-day
same-time-of-day baseline, jitter, failures, queue share, QPS) and business (confidence,
fallback answers, input length, versions). Each reading is shown on the instance where it is
worst, now against its baseline or the previous hour, marked ok, WARN or CRIT by the alert
catalog's thresholds (GPU memory 85 %%/92 %%, latency 1.5×/3× baseline, jitter 5, failures 5 %%,
queue share 60 %%).

Flags:
%s
  --model M                    the model (required)
  --version V                  one version (default every version)
  --at TIME                    end of the window, RFC 3339 or Unix seconds (default now)
  --window DURATION            default 15m
  --fail-on STATUS             critical or warn: exit 1 when a reading has that status or worse
  --json                       print the report as JSON
  --quiet                      no progress lines on standard error

%s
`, path, connFlagsHelp(), reportExitHelp)
	}
	if err := parseFlags(fs, args, help); err != nil {
		return err
	}
	var err error
	if *at != "" {
		if o.At, err = gate.ParseTime(*at); err != nil {
			return usagef("--at: %v", err)
		}
	}
	if o.Window, err = engine.ParseDuration(*window); err != nil {
		return usagef("--window: %v", err)
	}
	if o.Window <= 0 { // Health reads 0 as the default window; here it was typed
		return usagef("--window: must be longer than 0, got %s", *window)
	}
	switch *failOn {
	case "", triage.StatusCritical, triage.StatusWarn:
	default:
		return usagef("--fail-on must be critical or warn, got %q", *failOn)
	}
	if strings.TrimSpace(o.Model) == "" {
		return usagef("--model is required")
	}
	if err := o.Validate(); err != nil {
		return usagef("--window: %v", err)
	}
	e, err := conn.engine(ctx)
	if err != nil {
		return err
	}
	if e, err = forSubject(ctx, e, o.Subject(), nil); err != nil { // in a fleet, the model's own server
		return err
	}
	p := newProgress(stderr, "report", *quiet)
	p.Step(1, 1, "reading the four layers of "+o.Model)
	h, err := triage.Health(ctx, e, o)
	p.Done()
	if err != nil {
		return workFailed(err, triage.ErrOptions)
	}
	if err := printAnswer(stdout, *asJSON, h, printReport); err != nil {
		return err
	}
	if *failOn != "" && statusAtLeast(h.Status, *failOn) {
		return exitStatus{reportExitFailOn, fmt.Sprintf("report: %s is %s", o.Model, h.Status)}
	}
	return nil
}

func statusAtLeast(s, limit string) bool {
	rank := map[string]int{triage.StatusOK: 0, triage.StatusWarn: 1, triage.StatusCritical: 2}
	return rank[s] >= rank[limit]
}

func mark(status string) string {
	switch status {
	case triage.StatusCritical:
		return "CRIT"
	case triage.StatusWarn:
		return "WARN"
	}
	return "ok"
}

// printReport writes the four layers for people, top (resource) to bottom (business), as the
// brief's table lists them.
func printReport(w io.Writer, h *triage.HealthReport) error {
	who := h.Model
	if h.Version != "" {
		who += " " + h.Version
	}
	fmt.Fprintf(w, "%s, %s ending %s: %s\n", who, h.Window.Duration, h.Window.End.Format(time.RFC3339), mark(h.Status))
	for _, l := range h.Layers {
		fmt.Fprintf(w, "\n%s — %s  [%s]\n", strings.ToUpper(l.Layer), l.Question, mark(l.Status))
		if len(l.Readings) == 0 {
			fmt.Fprintln(w, "  (no readings: the metrics lack this layer)")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  MARK\tREADING\tNOW\tREFERENCE\tWHERE\tLIMIT\tNOTE")
		for _, r := range l.Readings {
			ref := unitValue(r.Before, r.Unit)
			if r.Reference != "" && r.Before != nil {
				ref += " (" + r.Reference + ")"
			}
			where := strings.TrimSpace(r.Instance + " " + r.Version)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark(r.Status), r.Name, unitValue(r.Now, r.Unit), ref, where, r.Limit, r.Note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range h.Notices {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}
