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
	"github.com/inferscope/inferscope/pkg/units"
)

// triageExitNoDirection: the triage found symptoms but no cause strong enough: escalate.
const triageExitNoDirection = 5

const triageExitHelp = `Exit status: 0 diagnosed (a cause ranks first) or healthy; 2 the command line is wrong;
4 the triage could not run (Prometheus unreachable or refusing, no metric profile);
5 no direction (something is wrong but no cause stands out: escalate, as the triage path says).`

func runTriage(ctx context.Context, path string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(path)
	var conn promConn
	conn.register(fs)
	var o triage.Options
	fs.StringVar(&o.Model, "model", "", "model name")
	fs.StringVar(&o.Version, "version", "", "model version (default all)")
	fs.StringVar(&o.Instance, "instance", "", "one instance (default all)")
	fs.StringVar(&o.Node, "node", "", "the instances on one node; without --model every model served there")
	fs.StringVar(&o.GPU, "gpu", "", "the GPU (index on the node) the GPU readings are about")
	from := fs.String("from", "", "window start")
	to := fs.String("to", "", "window end")
	last := fs.String("last", "", "window length ending at --to or now")
	before := fs.String("before", "1h", "reference window ending where the window starts")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress on standard error")
	help := func() {
		fmt.Fprintf(stdout, `%s --prometheus URL --model M [--version V] [--instance I] [--from T --to T | --last 15m] [flags]
%s --prometheus URL --node N [--gpu G] [--from T --to T | --last 15m] [flags]

Runs the 15-minute triage path as queries: which version and instance jumped and whether QPS
changed, GPU utilisation and memory, the inference engine (queue, cache, preemptions), input
length, hardware (XID, ECC, throttling); ranks the causes with their evidence (before vs now),
what to do next and links to the overview dashboard's panels.

A GPU alert names a node and a GPU, not a model: --node without --model triages every model
served on the node's instances (those whose host is the node) and ranks their causes in one
list, each naming its model; --gpu makes that GPU the subject of the GPU readings (memory,
utilisation, idle under traffic, XID / ECC / throttling) instead of the node's fullest or
idlest GPU.

Flags:
%s
  --model M                    the model (required unless --node is given)
  --version V                  one version (default: every version; a slower one is found)
  --instance I                 one instance (default: every instance serving the model)
  --node N                     only the instances on node N; without --model, every model
                               served there (the question of a GPU alert)
  --gpu G                      with --node (or --instance): GPU G of that node is the subject
                               of the GPU readings (default: every GPU of the node)
  --from TIME, --to TIME       the window, RFC 3339 or Unix seconds (default: the last 15m)
  --last DURATION              the window's length ending at --to or now (default 15m)
  --before DURATION            the reference window ending where the window starts (default 1h);
                               latency and traffic are also compared with their 7-day
                               same-time-of-day baseline
  --json                       print the report as JSON (the data source's triage resource answer)
  --quiet                      no progress lines on standard error

%s
`, path, path, connFlagsHelp(), triageExitHelp)
	}
	if err := parseFlags(fs, args, help); err != nil {
		return err
	}
	if err := parseTriageWindow(&o, *from, *to, *last, *before); err != nil {
		return err
	}
	if err := o.WithDefaults(time.Now()).Validate(); err != nil {
		return usagef("%v", err)
	}
	e, err := conn.engine(ctx)
	if err != nil {
		return err
	}
	if e, err = forSubject(ctx, e, o.WithDefaults(time.Now()).Subject(), nil); err != nil { // in a fleet, the model's own server
		return err
	}
	p := newProgress(stderr, "triage", *quiet)
	o.Progress = p.Step
	r, err := triage.Diagnose(ctx, e, o)
	p.Done()
	if err != nil {
		return workFailed(err, triage.ErrOptions)
	}
	if err := printAnswer(stdout, *asJSON, r, printTriage); err != nil {
		return err
	}
	if r.Verdict == triage.NoDirection {
		return exitStatus{triageExitNoDirection, "triage: no direction: " + r.Summary}
	}
	return nil
}

// parseTriageWindow sets o's window from --from/--to or --last, and the reference window from
// --before; a malformed value is a usage error naming its flag.
func parseTriageWindow(o *triage.Options, from, to, last, before string) error {
	var err error
	if from != "" && last != "" {
		return usagef("use --from/--to or --last, not both")
	}
	if from != "" {
		if o.From, err = gate.ParseTime(from); err != nil {
			return usagef("--from: %v", err)
		}
	}
	if to != "" {
		if o.To, err = gate.ParseTime(to); err != nil {
			return usagef("--to: %v", err)
		}
	}
	if last != "" {
		d, err := engine.ParseDuration(last)
		if err != nil {
			return usagef("--last: %v", err)
		}
		if o.To.IsZero() {
			o.To = time.Now()
		}
		o.From = o.To.Add(-d)
	}
	if o.Before, err = engine.ParseDuration(before); err != nil {
		return usagef("--before: %v", err)
	}
	return nil
}

// printTriage writes the report for people.
func printTriage(w io.Writer, r *triage.Report) error {
	who := r.Model
	if r.Version != "" {
		who += " " + r.Version
	}
	switch {
	case r.Instance != "":
		who += " on " + r.Instance
	case r.Node != "" && r.Model != "":
		who += " on node " + r.Node
	case r.Node != "":
		who = "node " + r.Node + " (" + strings.Join(r.Models, ", ") + ")"
		if len(r.Models) == 0 {
			who = "node " + r.Node + " (no model served)"
		}
	}
	if r.GPU != "" {
		who += ", GPU " + r.GPU
	}
	fmt.Fprintf(w, "%s, %s to %s (%s) against the %s before: %s\n%s\n", who, r.Window.Start.Format(time.RFC3339), r.Window.End.Format(time.RFC3339),
		r.Window.Duration, r.Before.Duration, strings.ToUpper(strings.ReplaceAll(string(r.Verdict), "_", " ")), r.Summary)
	if len(r.Causes) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "#\tCAUSE\tSCORE\tCONFIDENCE\tWHERE")
		for i, c := range r.Causes {
			where := c.Instance + " " + c.Version
			if r.Model == "" {
				where = c.Model + " " + where // a node's causes come from several models
			}
			fmt.Fprintf(tw, "%d\t%s\t%.2f\t%s\t%s\n", i+1, c.ID, c.Score, c.Confidence, strings.Join(strings.Fields(where), " "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for i, c := range r.Causes {
		fmt.Fprintf(w, "\n%d. %s (%s layer): %s\n", i+1, c.Title, c.Layer, c.Summary)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "   EVIDENCE\tBEFORE\tNOW\tCHANGE\tNOTE")
		for _, e := range c.Evidence {
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\n", e.What, unitValue(e.Before, e.Unit), unitValue(e.Now, e.Unit), changeText(e.Change), e.Note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "   next: %s\n", c.Next)
		for _, l := range c.Links {
			fmt.Fprintf(w, "   see:  %s › %s  %s\n", l.Row, l.Title, l.URL)
		}
	}
	fmt.Fprintln(w, "\nThe triage path:")
	for _, s := range r.Steps {
		causes := ""
		if len(s.Causes) > 0 {
			causes = " → " + strings.Join(s.Causes, ", ")
		}
		fmt.Fprintf(w, "  %d. [%s min] %s%s\n     %s\n", s.Step, s.Minutes, s.Title, causes, s.Finding)
	}
	for _, n := range r.Notices {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "(%d Prometheus queries)\n", r.Queries)
	return nil
}

// unitValue writes a number in its unit for people; "-" where not measured (units.Value).
func unitValue(v *float64, unit string) string { return units.Value(v, unit) }
