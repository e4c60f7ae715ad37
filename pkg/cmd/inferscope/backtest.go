package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/units"
)

const backtestExitHelp = `Exit status: 0 done (whether or not rules fired); 2 the command line is wrong (unknown flag,
bad parameter, unknown rule, bad range); 4 the backtest could not run (Prometheus unreachable or
refusing, no metric profile detected).`

// rulesFlag collects repeated --rule flags (a comma-separated list works too).
type rulesFlag struct{ ids *[]string }

func (f rulesFlag) String() string {
	if f.ids == nil {
		return ""
	}
	return strings.Join(*f.ids, ",")
}

func (f rulesFlag) Set(s string) error {
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			*f.ids = append(*f.ids, id)
		}
	}
	return nil
}

func runBacktest(ctx context.Context, path string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(path)
	var conn promConn
	conn.register(fs)
	// Every catalog parameter is a flag, as for `rules export`, except the profile, the label
	// names and the warm-up window: those are the connection's (--profile, auto-detected by
	// default, --model-label, …, --warmup-window) and the rules follow them.
	p := alerting.Defaults()
	connParams := map[string]bool{"profile": true, "modelLabel": true, "versionLabel": true, "instanceLabel": true, "warmupWindow": true}
	for _, d := range alerting.ParamDefs() {
		if !connParams[d.Name] {
			fs.Var(paramValue{p: &p, def: d}, d.Flag(), d.Help)
		}
	}
	from := fs.String("from", "", "start of the history, RFC 3339 or Unix seconds")
	to := fs.String("to", "", "end of the history (default now)")
	last := fs.String("last", "", "the history is this long, ending at --to (default 7d)")
	var rules []string
	fs.Var(rulesFlag{&rules}, "rule", "replay only this rule (repeatable)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress on standard error")
	help := func() {
		fmt.Fprintf(stdout, `%s --prometheus URL [--from T --to T | --last 7d] [--rule ID ...] [flags]

Replays the alert-rule catalog over Prometheus history as Grafana would evaluate the provisioned
rules (same queries, interval, last-value reduce, NoData = OK, for-hold) and reports how many
times each rule would have fired, for how long, and which episodes overlap a warm-up or a deploy.

Flags:
%s
  --from TIME, --to TIME       the history, RFC 3339 or Unix seconds (default: the 7 days ending now)
  --last DURATION              the history's length ending at --to (default 7d; not with --from)
  --rule ID                    replay only this rule; repeatable (default: the whole catalog)
  --json                       print the report as JSON (the data source's backtest resource answer)
  --quiet                      no progress on standard error
`, path, connFlagsHelp())
		printParamHelp(stdout)
		fmt.Fprintf(stdout, "\n(--profile is the connection's flag above: the rules follow the detected or named profile, every server of a mixed fleet.)\nDurations are Prometheus durations (90s, 5m, 1h30m, 7d); ratios are fractions (0.92) or percentages (92%%).\n\n%s\n", backtestExitHelp)
	}
	if err := parseFlags(fs, args, help); err != nil {
		return err
	}
	var o backtest.Options
	var err error
	if *to != "" {
		if o.To, err = gate.ParseTime(*to); err != nil {
			return usagef("--to: %v", err)
		}
	}
	switch {
	case *from != "" && *last != "":
		return usagef("use either --from or --last, not both")
	case *from != "":
		if o.From, err = gate.ParseTime(*from); err != nil {
			return usagef("--from: %v", err)
		}
	case *last != "":
		d, err := engine.ParseDuration(*last)
		if err != nil || d <= 0 {
			return usagef("--last: %q is not a positive duration such as 7d or 36h", *last)
		}
		if o.To.IsZero() {
			o.To = time.Now()
		}
		o.From = o.To.Add(-d)
	}
	o.Rules = rules
	o.Params = p
	if err := o.WithDefaults(time.Now()).Validate(); err != nil {
		return usagef("%v", err)
	}
	e, err := conn.engine(ctx)
	if err != nil {
		return err
	}
	// The rules and the engine read the same names: every server of a fleet (or the one
	// profile, detected or forced, of the connection), with the connection's label renames and
	// warm-up window.
	o.Params.FollowEngine(e)
	o.Params.WarmupWindow = e.WarmupWindow

	prog := newProgress(stderr, "backtest", *quiet)
	r, err := backtest.Run(ctx, e, o, func(done, total int, id string) { prog.Step(done, total, id) })
	prog.Done()
	if err != nil {
		return workFailed(err, backtest.ErrOptions)
	}
	return printAnswer(stdout, *asJSON, r, printBacktest)
}

// printBacktest writes the report for people: one line per rule, then the episodes.
func printBacktest(w io.Writer, r *backtest.Report) error {
	fmt.Fprintf(w, "Backtest %s .. %s, evaluated every %s (%d Prometheus queries, %.1f s)\n\n",
		r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Interval, r.Queries, r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSEVERITY\tFOR\tFIRED\tFIRING\tOVERLAPS\tNOTE")
	for _, rr := range r.Rules {
		overlaps := 0
		for _, ep := range rr.Episodes {
			if len(ep.Overlaps) > 0 {
				overlaps++
			}
		}
		note := ""
		switch {
		case rr.Unavailable != "":
			note = "unavailable: " + rr.Unavailable
		case rr.Error != "":
			note = "error: " + rr.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", rr.ID, rr.Severity, rr.For, rr.Fired, humanSeconds(rr.FiringSeconds), overlaps, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSERIES\tSTART\tEND\tFIRING\tPEAK\tOVERLAPS")
	n := 0
	for _, rr := range r.Rules {
		for _, ep := range rr.Episodes {
			n++
			end := ep.End.Format(time.RFC3339)
			if ep.Open {
				end += " (open)"
			}
			var ov []string
			for _, x := range ep.Overlaps {
				what := x.Kind + " " + x.Instance
				if x.Kind == backtest.KindDeploy {
					what += " " + strings.TrimSpace(x.Model+" "+x.Version)
				}
				ov = append(ov, what)
			}
			peak := ep.Peak
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rr.ID, labelsText(ep.Labels), ep.Start.Format(time.RFC3339), end,
				humanSeconds(ep.Seconds), units.Value(&peak, ep.Unit), strings.Join(ov, ", "))
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "No rule fired.")
	} else if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Warmups)+len(r.Deploys) > 0 {
		fmt.Fprintln(w)
		for _, x := range append(append([]backtest.Event{}, r.Warmups...), r.Deploys...) {
			fmt.Fprintf(w, "%s %s %s .. %s %s\n", x.Kind, x.Instance, x.Start.Format(time.RFC3339), x.End.Format(time.RFC3339), strings.TrimSpace(x.Model+" "+x.Version))
		}
	}
	for _, n := range r.Notices {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func labelsText(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// humanSeconds writes a duration in whole minutes or seconds ("28m", "1h5m", "0s").
func humanSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	if d == 0 {
		return "0s"
	}
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}
