// Command inferscope is the command-line front of Inferscope's engine. Its first command
// exports the alert-rule catalog in the three forms the stack needs:
//
//	inferscope rules export --format prometheus > inferscope-rules.yml
//	inferscope rules export --format alertmanager --p0-webhook-url https://pager.example/hook > alertmanager.yml
//	inferscope rules export --format grafana --datasource-uid inferscope > group.json
//	inferscope rules export --format grafana-provisioning --datasource-uid inferscope > provisioning/alerting/inferscope-rules.yaml
//	inferscope rules list
//
// Every threshold, hold time and routing choice is a flag (`inferscope rules export --help`).
// Commands are entries of one table, so report, triage, gate and backtest join it the same way.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0 // done
	exitError = 1 // the command ran and failed (cannot write the output, rendering refused)
	exitUsage = 2 // the command line is wrong: unknown command or flag, bad parameter value
)

// usageError is a wrong command line; it exits with exitUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errHelp ends a command after it printed the help that was asked for.
var errHelp = errors.New("help requested")

// command is one entry of the command tree: a leaf runs, a node has sub-commands.
type command struct {
	name    string
	summary string
	usage   string // for leaves: the synopsis after the command path
	run     func(ctx context.Context, path string, args []string, stdout, stderr io.Writer) error
	subs    []*command
}

// commands is the tree: `inferscope <group> <command>`.
var commands = &command{name: "inferscope", summary: "inference-service monitoring: the engine from the command line", subs: []*command{
	{name: "rules", summary: "the alert-rule catalog and its renderings", subs: []*command{
		{name: "export", summary: "render the rules for Prometheus, Alertmanager or Grafana", usage: "--format FORMAT [flags]", run: runExport},
		{name: "list", summary: "list the rules with their severity and condition", usage: "[flags]", run: runList},
	}},
	{name: "report", summary: "the layered health of a model: resource, framework, service, business", usage: "--prometheus URL --model M [--version V] [--at T] [--window 15m] [flags]", run: runReport},
	{name: "triage", summary: "the 15-minute triage path as queries: ranked causes with evidence (exit 0 diagnosed or healthy, 5 no direction)", usage: "--prometheus URL --model M [--version V] [--instance I] [--from T --to T | --last 15m] [flags]", run: runTriage},
	{name: "gate", summary: "release gate: compare a canary version with the current one (exit 0 pass, 1 fail, 3 insufficient data)", usage: "--prometheus URL --model M --baseline V --canary V [flags]", run: runGate},
	{name: "backtest", summary: "replay the alert rules over Prometheus history: how often each would have fired", usage: "--prometheus URL [--from T --to T | --last 7d] [--rule ID ...] [flags]", run: runBacktest},
}}

const exitCodesHelp = `Exit status: 0 done; 1 the command failed (for example the output could not be
written); 2 the command line is wrong (unknown command or flag, a bad value).`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, commands, "inferscope", args, stdout, stderr)
	var ue usageError
	var coded interface{ ExitCode() int }
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &coded): // a command that chooses its status (gate verdicts)
		fmt.Fprintf(stderr, "inferscope: %v\n", err)
		return coded.ExitCode()
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "inferscope: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "inferscope: %v\n", err)
		return exitError
	}
}

func dispatch(ctx context.Context, c *command, path string, args []string, stdout, stderr io.Writer) error {
	if c.run != nil {
		return c.run(ctx, path, args, stdout, stderr)
	}
	if len(args) == 0 {
		printTree(stderr, c, path)
		return usagef("%s needs a command", path)
	}
	switch args[0] {
	case "-h", "--help", "help":
		printTree(stdout, c, path)
		return errHelp
	}
	for _, s := range c.subs {
		if s.name == args[0] {
			return dispatch(ctx, s, path+" "+s.name, args[1:], stdout, stderr)
		}
	}
	return usagef("unknown command %q for %s (run %s --help)", args[0], path, path)
}

func printTree(w io.Writer, c *command, path string) {
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n", path, c.summary)
	var walk func(c *command, p string)
	walk = func(c *command, p string) {
		if c.run != nil {
			fmt.Fprintf(w, "  %s %s\n      %s\n", p, c.usage, c.summary)
			return
		}
		for _, s := range c.subs {
			walk(s, p+" "+s.name)
		}
	}
	walk(c, path)
	fmt.Fprintf(w, "\nRun a command with --help for its flags.\n\n%s\n", exitCodesHelp)
}
