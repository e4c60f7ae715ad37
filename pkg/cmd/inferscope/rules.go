package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/outfile"
	"github.com/inferscope/inferscope/pkg/profile"
)

// Formats of `rules export`.
var formats = []struct{ name, help string }{
	{"prometheus", "Prometheus rule file (recording rules + alerts), for rule_files"},
	{"alertmanager", "Alertmanager configuration: routes per severity, null receiver, inhibit_rules"},
	{"grafana", "Grafana-managed rule group as the provisioning API takes it (JSON, PUT .../rule-groups/{group})"},
	{"grafana-provisioning", "the same group as a Grafana file-provisioning YAML (provisioning/alerting/)"},
}

// paramFlags registers every catalog parameter as a flag on fs and returns the parameters the
// flags write into, starting from the defaults.
func paramFlags(fs *flag.FlagSet) *alerting.Params {
	p := alerting.Defaults()
	for _, d := range alerting.ParamDefs() {
		fs.Var(paramValue{p: &p, def: d}, d.Flag(), d.Help)
	}
	return &p
}

// paramValue is a flag.Value writing one parameter through Params.Set.
type paramValue struct {
	p   *alerting.Params
	def alerting.ParamDef
}

func (v paramValue) String() string {
	if v.p == nil {
		return ""
	}
	s, _ := v.p.Get(v.def.Name)
	return s
}

func (v paramValue) Set(s string) error {
	if err := v.p.Set(v.def.Name, s); err != nil {
		// The flag package prefixes the flag name; keep only the reason.
		_, why, _ := strings.Cut(err.Error(), ": ")
		return errors.New(why)
	}
	return nil
}

func (v paramValue) IsBoolFlag() bool { return v.def.Kind == alerting.KindBool }

// newFlagSet makes a flag set that prints nothing itself: errors come back as usage errors and
// each command prints its own help.
func newFlagSet(path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string, help func()) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		help()
		return errHelp
	case err != nil:
		return usagef("%v (run with --help for the flags)", err)
	case fs.NArg() > 0:
		return usagef("unexpected argument %q (run with --help for the flags)", fs.Arg(0))
	}
	return nil
}

// printParamHelp lists the parameters by section with their defaults.
func printParamHelp(w io.Writer) {
	section := ""
	for _, d := range alerting.ParamDefs() {
		if d.Section != section {
			section = d.Section
			fmt.Fprintf(w, "\n%s:\n", strings.ToUpper(section[:1])+section[1:])
		}
		def := d.Default
		if def == "" {
			def = `""`
		}
		val := "VALUE"
		switch d.Kind {
		case alerting.KindDuration:
			val = "DURATION"
		case alerting.KindRatio:
			val = "RATIO"
		case alerting.KindInt, alerting.KindNumber:
			val = "N"
		case alerting.KindBool:
			val = "BOOL"
		}
		if len(d.Choices) > 0 {
			val = strings.Join(d.Choices, "|")
		}
		if len(d.Items) > 0 {
			val = strings.Join(d.Items, "|") + "[,...]"
		}
		fmt.Fprintf(w, "  --%s %s\n      %s (default %s)\n", d.Flag(), val, d.Help, def)
	}
}

func runExport(ctx context.Context, path string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(path)
	var conn promConn
	conn.registerReach(fs)
	conn.gateway.register(fs)
	format := fs.String("format", "", "output format")
	output := fs.String("output", "", "write to this file instead of standard output (- = standard output)")
	orgID := fs.Int64("org-id", 1, "Grafana organisation id of the rules (grafana format)")
	fs.Bool("quiet", false, "accepted as by every command; the export prints nothing on standard error")
	p := paramFlags(fs)
	help := func() {
		fmt.Fprintf(stdout, "%s --format FORMAT [flags]\n\nRenders the Inferscope alert-rule catalog (P0/P1/P2, warm-up filtered, with context annotations).\n\nFormats:\n", path)
		for _, f := range formats {
			fmt.Fprintf(stdout, "  %-21s %s\n", f.name, f.help)
		}
		fmt.Fprintf(stdout, "\nFlags:\n  --format FORMAT\n      one of the formats above (required)\n  --output FILE\n      write to FILE instead of standard output (- = standard output); a regular file is\n      replaced atomically and keeps its mode, a symbolic link's target is written, a device or\n      FIFO is written in place\n  --org-id N\n      Grafana organisation of the rules, grafana format (default 1)\n  --quiet\n      accepted as by every command (the export prints no progress)\n  --prometheus URL\n      render for the servers found there: every server of a mixed fleet, each with its own\n      names (one Prometheus rule group per server); --profile, when given, is used as it is.\n      Reached with --basic-auth-user, --basic-auth-password-file, --bearer-token-file,\n      --timeout, --max-answer-size; --profile-label PROFILE.KIND=LABEL renames one profile's label\n\nThe gateway in front of the servers, whose upstream time the network rule reads (without one,\nthe profile's own gateway histogram, if it has one):\n%s\n", gatewayFlagsHelp())
		printParamHelp(stdout)
		fmt.Fprintf(stdout, "\nDurations are Prometheus durations (90s, 5m, 1h30m); ratios are fractions (0.92) or percentages (92%%).\n\n%s\n", exitCodesHelp)
	}
	if err := parseFlags(fs, args, help); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if err := followPrometheus(ctx, fs, &conn, p); err != nil {
		return err
	}
	var (
		body []byte
		err  error
	)
	switch *format {
	case "prometheus":
		body, err = alerting.RenderPrometheus(*p)
	case "alertmanager":
		body, err = alerting.RenderAlertmanager(*p)
	case "grafana", "grafana-provisioning":
		if p.DatasourceUID == "" {
			return usagef("--format %s needs --datasource-uid: the uid of the Inferscope data source the rules query", *format)
		}
		if *format == "grafana" {
			var g alerting.GrafanaGroup
			if g, err = alerting.GrafanaRules(*p, *orgID); err == nil {
				body, err = json.MarshalIndent(g, "", "  ")
				body = append(body, '\n')
			}
		} else {
			body, err = alerting.RenderGrafanaProvisioning(*p)
		}
	case "":
		return usagef("--format is required: %s", formatNames())
	default:
		return usagef("unknown --format %q: use %s", *format, formatNames())
	}
	if err != nil {
		return err
	}
	if *output == "" {
		*output = outfile.Stdout
	}
	return outfile.Write(*output, body, stdout)
}

// followPrometheus, when --prometheus is given, renders for what the engine finds there (every
// server of a fleet) unless --profile names the profiles; the flat label renames and the warm-up
// window are the catalog parameters'.
func followPrometheus(ctx context.Context, fs *flag.FlagSet, conn *promConn, p *alerting.Params) error {
	gc, err := conn.gateway.config()
	if err != nil {
		return usageError{err.Error()}
	}
	gw, err := gateway.New(gc)
	if err != nil {
		return usageError{err.Error()}
	}
	p.SetGateway(gw)
	if conn.url == "" {
		if len(conn.perProfile) > 0 {
			return usagef("--profile-label needs --prometheus")
		}
		return nil
	}
	forced := false
	fs.Visit(func(f *flag.Flag) { forced = forced || f.Name == "profile" })
	if forced {
		return nil
	}
	conn.labels = profile.Labels{Model: p.ModelLabel, Version: p.VersionLabel, Instance: p.InstanceLabel}
	conn.warmup = p.WarmupWindow
	e, err := conn.engine(ctx)
	if err != nil {
		return err
	}
	p.FollowEngine(e)
	return nil
}

func formatNames() string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

func runList(ctx context.Context, path string, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet(path)
	var conn promConn
	conn.registerReach(fs)
	conn.gateway.register(fs)
	fs.Bool("quiet", false, "accepted as by every command; the list prints nothing on standard error")
	p := paramFlags(fs)
	help := func() {
		fmt.Fprintf(stdout, "%s [flags]\n\nLists the catalog: id, severity, hold time, condition; rules the metric profile cannot feed say why, and with --prometheus the rules whose GPU signal the fleet does not export say \"not measured\" and what to enable.\n\nFlags:\n  --quiet\n      accepted as by every command (the list prints no progress)\n  --prometheus URL\n      list for the servers and GPU exporters found there (as rules export)\n%s", path, gatewayFlagsHelp())
		printParamHelp(stdout)
		fmt.Fprintf(stdout, "\n%s\n", exitCodesHelp)
	}
	if err := parseFlags(fs, args, help); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if err := followPrometheus(ctx, fs, &conn, p); err != nil {
		return err
	}
	rules, err := alerting.Catalog(*p)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSEVERITY\tFOR\tCONDITION")
	for _, r := range rules {
		cond := r.Condition
		if r.Unavailable != "" {
			cond = "(not available: " + r.Unavailable + ")"
		}
		for _, server := range p.ProfileNames() {
			if why, ok := r.UnavailableOn[server]; ok {
				cond += " (not on " + server + ": " + why + ")"
			}
		}
		if r.NotMeasured != "" && r.Unavailable == "" {
			cond += " (" + r.NotMeasured + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Severity, r.ForText, cond)
	}
	return tw.Flush()
}
