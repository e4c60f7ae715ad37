package corpus

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/triage"
)

// How the on-call engineer asks (docs/triage.md, "The incident corpus").
const (
	// EvalInterval is the backtest's evaluation step (the brief's 15 s scrape).
	EvalInterval = 15 * time.Second
	// UncaughtAsk is when a case no P0/P1 caught is asked about: onset + 5 min.
	UncaughtAsk = 5 * time.Minute
	// ControlAsk is when a control is asked about: onset + 10 min (the window then covers 10
	// minutes of it); a warm-up at onset + 5 min (load and warm-up inside the window).
	ControlAsk = 10 * time.Minute
	// alertSearch is how long after its onset a case's first P0/P1 is looked for, and after its
	// end a notification on a control still counts.
	alertSearch = 15 * time.Minute
	afterEnd    = 5 * time.Minute
)

// Outcome is one case's judgement.
type Outcome struct {
	Case testbed.Case
	// Alert is the first P0/P1 episode on the case's subject starting in [onset, onset+15m]
	// (nil: none); Delay its start minus the onset.
	Alert *backtest.EpisodeReport
	Rule  string
	Delay time.Duration
	// Hold is that rule's own `for`: the part of Delay the rule waits by design once its
	// condition holds (the brief's P1 latency holds 3 minutes), so Delay − Hold is how long the
	// signal took to cross the line.
	Hold time.Duration
	// Lines are the brief's lines the case's truth crossed (TruthLines): a harmful case with
	// none owes no page (Owed). DueDelay is the first P0/P1's start less the earliest line's
	// Held: how long after the rules could first have fired one did (negative: a rule read the
	// histogram's estimate past its line before the truth was).
	Lines    []Line
	DueDelay time.Duration
	// Notifications counts the P0/P1 episodes on the subject starting in [onset, end+5m].
	Notifications int
	NotifiedBy    []string
	// Question is what triage was asked; Verdict and Causes what it answered.
	Question triage.Options
	Verdict  triage.Verdict
	Causes   []string
	// CauseModel is the model the first cause names ("" for one that names none: a node's
	// hardware); a node question's causes can name any model served there.
	CauseModel string
	Err        string
	// Report is the triage's whole answer (nil on an error), for a reader who asks why.
	Report *triage.Report
	// Judgement: exactly one of Top1, Wrong, NoDirection, Missed is true for a harmful case
	// (Missed: verdict healthy); a control is Top1 when it reads healthy (a warm-up: healthy or
	// warmup first) and Wrong otherwise.
	Top1, Wrong, NoDirection, Missed bool
}

// Owed says whether a case owes a page: harmful, and its truth crossed one of the brief's lines.
func (o Outcome) Owed() bool { return Harmful(o.Case.Kind) && len(o.Lines) > 0 }

// Due is the earliest moment a line was due (its condition held for its rule's hold).
func (o Outcome) Due() (time.Time, bool) {
	var due time.Time
	for _, l := range o.Lines {
		if due.IsZero() || l.Held.Before(due) {
			due = l.Held
		}
	}
	return due, !due.IsZero()
}

// ReplayOptions narrow and tune a replay; the zero value replays every case with the catalog's
// defaults.
type ReplayOptions struct {
	// Only, when set, selects the cases.
	Only func(testbed.Case) bool
	// Progress, when set, hears each finished step.
	Progress func(done, total int, what string)
	// RateWindow, when set, is the rules' rate window instead of the catalog's (the rendering's
	// --rate-window): how soon the rules page at a finer scrape interval.
	RateWindow time.Duration
}

// Replay judges a server's cases on the engine over that fleet's history: one backtest of the
// catalog over the case days at EvalInterval, then one triage per case.
func Replay(ctx context.Context, e *engine.Engine, s *testbed.Scenario, ro ReplayOptions) ([]Outcome, *backtest.Report, error) {
	progress := ro.Progress
	var cases []testbed.Case
	for _, c := range s.Cases() {
		if ro.Only == nil || ro.Only(c) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return nil, nil, fmt.Errorf("corpus: scenario %s has no cases", s.Name())
	}
	from := cases[0].Onset
	for _, c := range cases {
		from = minTime(from, c.Onset)
	}
	params := replayParams(e)
	if ro.RateWindow > 0 {
		params.RateWindow = ro.RateWindow
	}
	catalog, err := alerting.Catalog(params)
	if err != nil {
		return nil, nil, err
	}
	var notifying []string // only P0 and P1 are sent: the P2s need no replay
	scopes := map[string]alerting.Scope{}
	for _, r := range catalog {
		scopes[r.ID] = r.Scope
		if r.Severity == alerting.P0 || r.Severity == alerting.P1 {
			notifying = append(notifying, r.ID)
		}
	}
	total := len(cases) + 1
	to := cases[0].End
	for _, c := range cases {
		if c.End.After(to) {
			to = c.End
		}
	}
	to = minTime(s.End(), to.Add(alertSearch+afterEnd))
	bt, err := chunkedBacktest(ctx, e, params, notifying, from.Add(-time.Hour), to, func(what string) {
		if progress != nil {
			progress(0, total, what)
		}
	})
	if err != nil {
		return nil, bt, err
	}
	reads := Reads{}
	if prof, err := profile.ByName(cases[0].Server); err == nil {
		reads = ReadsOf(prof)
	}
	var out []Outcome
	for i, c := range cases {
		o := judgeAlerts(c, bt, s)
		o.Lines = TruthLines(s, c, params, reads)
		if due, ok := o.Due(); ok && o.Alert != nil {
			o.DueDelay = o.Alert.Start.Sub(due)
		}
		o.Question = question(c, o, s, scopes[o.Rule])
		rep, err := triage.Diagnose(ctx, e, o.Question)
		if err != nil {
			if ctx.Err() != nil {
				return out, bt, ctx.Err()
			}
			o.Err = err.Error()
		} else {
			o.Verdict, o.Report = rep.Verdict, rep
			for _, cz := range rep.Causes {
				o.Causes = append(o.Causes, cz.ID)
			}
			if len(rep.Causes) > 0 {
				o.CauseModel = rep.Causes[0].Model
			}
		}
		judge(&o)
		out = append(out, o)
		if progress != nil {
			progress(i+2, total, c.ID)
		}
	}
	return out, bt, nil
}

// replayParams are the catalog's defaults at EvalInterval, rendered for the engine's server as
// the CLI and the data source render them: the PromQL rules (GPU memory with its warm-up
// filter) then name that server's own metrics, not the custom service's.
func replayParams(e *engine.Engine) alerting.Params {
	params := alerting.Defaults()
	params.Interval = EvalInterval
	params.FollowEngine(e)
	return params
}

// backtestChunk and backtestLead cut the backtest: a rule's answer over two days of a fleet
// passes the engine's answer-size limit, so each chunk is replayed with an hour of lead (the
// `for` holds start before the chunk) and keeps the episodes that start inside it.
const (
	backtestChunk = 6 * time.Hour
	backtestLead  = time.Hour
)

// chunkedBacktest replays the rules over [from, to] chunk by chunk and merges the episodes; a
// rule that could not be replayed fails it (it would read as "not caught").
func chunkedBacktest(ctx context.Context, e *engine.Engine, params alerting.Params, rules []string, from, to time.Time, progress func(string)) (*backtest.Report, error) {
	var merged *backtest.Report
	for a := from; a.Before(to); a = a.Add(backtestChunk) {
		b := minTime(to, a.Add(backtestChunk))
		lead := a
		if a.After(from) {
			lead = a.Add(-backtestLead)
		}
		bt, err := backtest.Run(ctx, e, backtest.Options{Params: params, From: lead, To: b, Rules: rules}, func(done, all int, id string) {
			progress(fmt.Sprintf("backtest %s rule %d/%d %s", a.Format("01-02 15:04"), done, all, id))
		})
		if err != nil {
			return merged, fmt.Errorf("corpus: backtest: %w", err)
		}
		for i, r := range bt.Rules {
			if r.Error != "" {
				return merged, fmt.Errorf("corpus: backtest of %s: %s", r.ID, r.Error)
			}
			var keep []backtest.EpisodeReport
			for _, ep := range r.Episodes {
				if !ep.Start.Before(a) && ep.Start.Before(b) {
					keep = append(keep, ep)
				}
			}
			bt.Rules[i].Episodes = keep
		}
		if merged == nil {
			merged = bt
			continue
		}
		merged.Queries += bt.Queries
		merged.Seconds += bt.Seconds
		for i := range merged.Rules {
			merged.Rules[i].Episodes = append(merged.Rules[i].Episodes, bt.Rules[i].Episodes...)
		}
	}
	if merged == nil {
		return nil, fmt.Errorf("corpus: empty backtest range %s..%s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return merged, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// judgeAlerts finds the case's first P0/P1 and the notifications on its subject.
func judgeAlerts(c testbed.Case, bt *backtest.Report, s *testbed.Scenario) Outcome {
	o := Outcome{Case: c}
	for _, r := range bt.Rules {
		if r.Severity != alerting.P0 && r.Severity != alerting.P1 {
			continue
		}
		for i := range r.Episodes {
			ep := &r.Episodes[i]
			if !concerns(c, ep.Labels, s) || ep.Start.Before(c.Onset) {
				continue
			}
			if ep.Start.Before(c.End.Add(afterEnd)) {
				o.Notifications++
				o.NotifiedBy = append(o.NotifiedBy, r.ID)
			}
			if ep.Start.Before(c.Onset.Add(alertSearch)) && (o.Alert == nil || ep.Start.Before(o.Alert.Start)) {
				o.Alert, o.Rule, o.Delay, o.Hold = ep, r.ID, ep.Start.Sub(c.Onset), ruleHold(r.For)
			}
		}
	}
	return o
}

// ruleHold reads a rule's `for` as the backtest reports it ("3m", "0s"); none reads 0.
func ruleHold(f string) time.Duration {
	d, err := model.ParseDuration(f)
	if err != nil {
		return 0
	}
	return time.Duration(d)
}

// concerns says whether an alert series is about the case's subject: it names the case's model
// (any instance: no other case runs on the model within an hour), or it names no model of the
// fleet and names the case's instance or node — a GPU series then one of the model's GPUs
// there. A warm-up concerns the whole instance.
func concerns(c testbed.Case, labels map[string]string, s *testbed.Scenario) bool {
	models := s.Models()
	var model string
	for _, v := range labels {
		if slices.Contains(models, v) {
			model = v
		}
	}
	onInstance := false
	gpu, hasGPU := "", false
	for k, v := range labels {
		if v == c.Instance || v == c.Node() || v == testbed.ProbeInstance(c.Instance) {
			onInstance = true
		}
		if k == "gpu" {
			gpu, hasGPU = v, true
		}
	}
	if c.Kind == testbed.CaseWarmup || c.Kind == testbed.CaseLostCapacity {
		return onInstance || model == c.Model
	}
	if model != "" {
		return model == c.Model
	}
	if !onInstance {
		return false
	}
	if hasGPU {
		n, err := strconv.Atoi(gpu)
		return err == nil && slices.Contains(s.ModelGPUs(c.Model), n)
	}
	return true
}

// question is what the on-call engineer asks: what the first P0/P1's triage link opens, over the
// default 15-minute window ending when it fires — a service alert's model (and the inference
// instance its labels name), a GPU alert's node and GPU (its link names no model: GPU series
// carry none); without an alert the case's model at onset + UncaughtAsk; a control at onset +
// ControlAsk.
func question(c testbed.Case, o Outcome, s *testbed.Scenario, scope alerting.Scope) triage.Options {
	q := triage.Options{Model: c.Model}
	var gpu [2]string // node and GPU of a GPU alert
	if o.Alert != nil && scope == alerting.ScopeGPU {
		gpu = gpuSubject(o.Alert.Labels)
	}
	switch {
	case c.Kind == testbed.CaseWarmup:
		q.To = c.Onset.Add(UncaughtAsk)
	case c.Kind.Control():
		q.To = c.Onset.Add(ControlAsk)
	case gpu != [2]string{}:
		q.To = o.Alert.Start
		q.Model, q.Node, q.GPU = "", gpu[0], gpu[1]
	case o.Alert != nil:
		q.To = o.Alert.Start
		for _, v := range o.Alert.Labels {
			if slices.Contains(s.Instances(), v) {
				q.Instance = v
			}
		}
	default:
		q.To = c.Onset.Add(UncaughtAsk)
	}
	q.From = q.To.Add(-triage.DefaultWindow)
	return q
}

// gpuSubject is the node and GPU a GPU alert's labels name, as its triage link carries them:
// a KV cache's memory alert names the node alone (its link asks about the whole node); empty
// without a node.
func gpuSubject(labels map[string]string) [2]string {
	node, gpu := labels[alerting.NodeOutLabel], labels[alerting.GPULabel]
	if node == "" {
		return [2]string{}
	}
	return [2]string{node, gpu}
}

// judge scores the answer against the contract's set.
func judge(o *Outcome) {
	first := ""
	if len(o.Causes) > 0 {
		first = o.Causes[0]
	}
	k := o.Case.Kind
	if k.Control() || k == testbed.CaseWarmup {
		ok := o.Err == "" && (o.Verdict == triage.Healthy || (k == testbed.CaseWarmup && o.Verdict == triage.Diagnosed && first == triage.CauseWarmup))
		o.Top1, o.Wrong = ok, !ok
		return
	}
	switch {
	case o.Err != "" || o.Verdict == triage.NoDirection:
		o.NoDirection = true
	case o.Verdict == triage.Healthy:
		o.Missed = true
	case o.CauseModel != "" && o.CauseModel != o.Case.Model:
		o.Wrong = true // a cause of another model served on the node
	case slices.Contains(Acceptable(o.Case), first):
		o.Top1 = true
	default:
		o.Wrong = true
	}
}
