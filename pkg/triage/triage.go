// Package triage runs the field report's 15-minute triage path as engine queries and ranks the
// likely causes of a latency problem, and reads a model's layered health (Health) with the same
// readings. Reading (read.go) talks to the engine; scoring (score.go, segments.go, deploy.go,
// rank.go) is pure: readings in, ranked causes out. The scoring decomposes first — the latency
// change is attributed to queue, compute and network, and the leading segment's candidates are
// looked for first — and compares a new version only with the one it replaced. A window longer
// than an hour is split at its change points (windows.go) and each is triaged on its own.
package triage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gate"
)

// ErrOptions wraps a wrong question (no model, a window the wrong way round): the caller's mistake.
var ErrOptions = errors.New("bad triage options")

// Defaults.
const (
	DefaultWindow = 15 * time.Minute // the triage path's 15 minutes, ending now
	DefaultBefore = time.Hour        // the reference: the hour ending where the window starts
	minWindow     = 2 * time.Minute
	maxWindow     = 24 * time.Hour
	maxBefore     = 24 * time.Hour
)

// Options is one triage question. Zero times mean the DefaultWindow ending at the engine's
// clock; Before is the length of the reference window that ends where the window starts.
type Options struct {
	Model, Version, Instance string
	// Node restricts the triage to the instances on that node (whose host is the node); without
	// a model every model served there is triaged and the causes are merged (a GPU alert).
	Node string
	// GPU (its index on the node) is the subject of the GPU readings: memory, utilisation, idle
	// under traffic, XID / ECC / throttling; "" reads every GPU of the node. Needs Node or Instance.
	GPU      string
	From, To time.Time
	Before   time.Duration
	// Progress, when set, hears each reading phase start (the command's progress line).
	Progress func(step, of int, label string) `json:"-"`
	// eventsFrom, when set before From, is where the window asked about began: a change point
	// narrowed the window to what follows it, and events (XID, ECC) since eventsFrom still count
	// as the window's.
	eventsFrom time.Time
	// lastInterval reads every rate over each counter's last scrape interval (irate): the
	// window is the part after a change point, whose first points a window's rate still mixes
	// with the minutes before the change.
	lastInterval bool
}

// WithDefaults fills the window from now.
func (o Options) WithDefaults(now time.Time) Options {
	if o.To.IsZero() {
		if !o.From.IsZero() {
			o.To = o.From.Add(DefaultWindow)
		} else {
			o.To = now
		}
	}
	if o.From.IsZero() {
		o.From = o.To.Add(-DefaultWindow)
	}
	if o.Before == 0 {
		o.Before = DefaultBefore
	}
	o.From, o.To = o.From.UTC(), o.To.UTC()
	for _, f := range []*string{&o.Model, &o.Version, &o.Instance, &o.Node, &o.GPU} {
		*f = strings.TrimSpace(*f)
		if v, err := engine.OneValue("", *f); err == nil {
			*f = v // "a|" is a; "a|b" stays for Validate to refuse
		}
	}
	return o
}

// Subject is what o names, for engine.CheckSubject.
func (o Options) Subject() engine.Subject {
	var s engine.Subject
	for _, f := range []struct {
		dst *[]string
		v   string
	}{{&s.Model, o.Model}, {&s.Version, o.Version}, {&s.Instance, o.Instance}, {&s.Node, o.node()}, {&s.GPU, o.GPU}} {
		if v := strings.TrimSpace(f.v); v != "" {
			*f.dst = []string{v}
		}
	}
	return s
}

// node is the node the question is restricted to: Node, or the GPU's instance's host.
func (o Options) node() string {
	if o.Node == "" && o.GPU != "" {
		return nodeOf(o.Instance)
	}
	return o.Node
}

// Validate reports the first wrong field, naming it.
func (o Options) Validate() error {
	model, node := strings.TrimSpace(o.Model), strings.TrimSpace(o.Node)
	for _, f := range []struct{ name, v, advice string }{
		{"model", o.Model, ": triage each model, or name their node to triage every model served there"},
		{"version", o.Version, ""}, {"instance", o.Instance, ""}, {"node", o.Node, ""}, {"gpu", o.GPU, ""},
	} {
		if _, err := engine.OneValue(f.name, f.v); err != nil {
			return fmt.Errorf("%w%s", err, f.advice)
		}
	}
	switch {
	case model == "" && node == "":
		return errors.New("model or node is required: name the model to triage, or the node (and gpu) of a GPU alert")
	case model == "" && strings.TrimSpace(o.Version) != "":
		return errors.New("version needs a model: a node's models are triaged with all their versions")
	case strings.TrimSpace(o.GPU) != "" && node == "" && strings.TrimSpace(o.Instance) == "":
		return errors.New("gpu needs node: name the node the GPU is on")
	case node != "" && o.Instance != "" && nodeOf(o.Instance) != node:
		return fmt.Errorf("instance %q is not on node %q", o.Instance, node)
	}
	w := o.To.Sub(o.From)
	if w < minWindow || w > maxWindow {
		return fmt.Errorf("from/to: the window must be between %s and %s long, got %s", dur(minWindow), dur(maxWindow), w)
	}
	if o.Before < minWindow || o.Before > maxBefore {
		return fmt.Errorf("before must be between %s and %s, got %s", dur(minWindow), dur(maxBefore), o.Before)
	}
	return nil
}

// QueryKeys are the parameters OptionsFromQuery reads.
var QueryKeys = []string{"model", "version", "instance", "node", "gpu", "from", "to", "before"}

// OptionsFromQuery reads the resource's parameters: model, version, instance, node, gpu, from,
// to, before. from and to accept RFC 3339 or Unix seconds; before is a duration. Defaults are
// not applied.
func OptionsFromQuery(v url.Values) (Options, error) {
	o := Options{Model: v.Get("model"), Version: v.Get("version"), Instance: v.Get("instance"), Node: v.Get("node"), GPU: v.Get("gpu")}
	var err error
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &o.From}, {"to", &o.To}} {
		if s := v.Get(f.name); s != "" {
			if *f.dst, err = gate.ParseTime(s); err != nil {
				return o, fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	if s := v.Get("before"); s != "" {
		if o.Before, err = engine.ParseDuration(s); err != nil {
			return o, fmt.Errorf("before: %w", err)
		}
	}
	return o, nil
}

// Verdict is the triage's answer.
type Verdict string

// Verdicts. NoDirection is the brief's "no direction after 15 minutes: escalate".
const (
	Diagnosed   Verdict = "diagnosed"
	NoDirection Verdict = "no_direction"
	Healthy     Verdict = "healthy"
)

// Window is a time range of the report.
type Window struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Duration string    `json:"duration"`
}

func newWindow(start, end time.Time) Window {
	return Window{Start: start.UTC(), End: end.UTC(), Duration: dur(end.Sub(start))}
}

// Evidence is one number behind a cause, before vs now; nil where not measured.
type Evidence struct {
	What   string   `json:"what"`
	Unit   string   `json:"unit"`
	Before *float64 `json:"before"`
	Now    *float64 `json:"now"`
	Change *float64 `json:"change"` // now / before − 1
	Note   string   `json:"note,omitempty"`
}

// Link points at the overview dashboard's panel that shows the evidence.
type Link struct {
	Title   string `json:"title"`
	Row     string `json:"row"`
	PanelID int    `json:"panelId"`
	URL     string `json:"url"`
}

// Cause is one ranked explanation.
type Cause struct {
	ID         string     `json:"id"`
	Title      string     `json:"title"`
	Layer      string     `json:"layer"`
	Score      float64    `json:"score"`
	Confidence string     `json:"confidence"`
	Summary    string     `json:"summary"`
	Model      string     `json:"model,omitempty"` // the model it was found on
	Instance   string     `json:"instance,omitempty"`
	Version    string     `json:"version,omitempty"`
	Evidence   []Evidence `json:"evidence"`
	Next       string     `json:"next"`
	Links      []Link     `json:"links"`
	// Window is the change point the cause was found in, in a window longer than LongWindow.
	Window *Window `json:"window,omitempty"`
	// unseen: see candidate.
	unseen bool
}

// Step is one of the triage path's five steps with what it found.
type Step struct {
	Step    int      `json:"step"`
	Title   string   `json:"title"`
	Minutes string   `json:"minutes"`
	Finding string   `json:"finding"`
	Causes  []string `json:"causes"`
}

// Report is the triage's answer (the triage resource's JSON).
type Report struct {
	Model    string `json:"model"` // "" for a node question
	Version  string `json:"version"`
	Instance string `json:"instance"`
	// Node and GPU of a node question (a GPU alert), and the models triaged there.
	Node    string   `json:"node,omitempty"`
	GPU     string   `json:"gpu,omitempty"`
	Models  []string `json:"models,omitempty"`
	Window  Window   `json:"window"`
	Before  Window   `json:"before"`
	Verdict Verdict  `json:"verdict"`
	Summary string   `json:"summary"`
	Causes  []Cause  `json:"causes"`
	// Confidence says how sure the verdict is: the first cause's confidence when diagnosed,
	// low for no direction; a healthy verdict is medium where several signals are not measured.
	Confidence string `json:"confidence"`
	// Segments attribute the latency change of the subject that changed most (SegmentsOf) to
	// queue, compute (prefill and decode where the server times them), network and server
	// overhead; Lead is the segment that explains the change ("" when latency did not change).
	Segments   []SegmentChange `json:"segments"`
	Lead       string          `json:"lead,omitempty"`
	SegmentsOf string          `json:"segmentsOf,omitempty"`
	// NotMeasured lists the signals the triage could not read and what each would have told.
	NotMeasured []string `json:"notMeasured"`
	Steps       []Step   `json:"steps"`
	Notices     []string `json:"notices"`
	// Episodes are the change points of a window longer than LongWindow, each triaged on its
	// own; the causes are theirs, each with its window.
	Episodes []Episode `json:"episodes,omitempty"`
	// Change is the change point found inside a short window: Window is then the part after it,
	// compared with the hour before it (Change.Asked is the window asked about).
	Change *RecentChange `json:"change,omitempty"`
	// Queries counts the Prometheus queries the triage sent.
	Queries int `json:"queries"`
}

// Diagnose runs the triage path for o on the engine's Prometheus and ranks the causes.
func Diagnose(ctx context.Context, e *engine.Engine, o Options) (*Report, error) {
	o = o.WithDefaults(e.Clock())
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	if o.Model == "" {
		nr, err := ReadNode(ctx, e, o)
		if err != nil {
			return nil, err
		}
		r := ScoreNode(nr, DefaultThresholds())
		settleNode(&r, nr)
		return &r, nil
	}
	if o.To.Sub(o.From) > LongWindow {
		return diagnoseLong(ctx, e, o)
	}
	return diagnoseShort(ctx, e, o)
}

func dur(d time.Duration) string { return model.Duration(d).String() }
