package triage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
)

// A GPU alert names a node and a GPU, not a model: GPU series carry no model label. A node
// question triages every model served on the node's instances (instances whose host is the
// node, the engine's GPU join rule), each restricted to those instances, and merges them into
// one ranked report.

// NodeReadings are the readings of a node question: one Readings per model served there.
type NodeReadings struct {
	Node, GPU      string
	Instance       string // one instance of the node, when the question names one
	Window, Before Span
	Models         []*Readings // by model name
	// Changes are the change points found inside the window, by model: that model's readings
	// cover the part after its change (as a model question's do).
	Changes map[string]*RecentChange
	Notices []string
	Queries int
}

// ReadNode finds the models served on o.Node in the window (completed with the defaults) or the
// reference before it and reads each on the node's instances.
func ReadNode(ctx context.Context, e *engine.Engine, o Options) (*NodeReadings, error) {
	o = o.WithDefaults(e.Clock())
	r := newReader(e, o)
	nr := &NodeReadings{Node: r.rd.Node, GPU: o.GPU, Instance: o.Instance, Window: r.rd.Window, Before: r.rd.Before,
		Changes: map[string]*RecentChange{}}
	if o.Progress != nil {
		o.Progress(1, 2, "which models serve node "+nr.Node)
	}
	// The node's instances: every instance's traffic, kept where its host is the node.
	sel := engine.Select{KeepWarmup: true, RateInterval: r.rate}
	if o.Instance != "" {
		sel.Instance = []string{o.Instance}
	}
	res, err := r.run(ctx, engine.Throughput{Select: sel, By: "instance"})
	if err != nil {
		return nil, err
	}
	var instances []string
	for _, s := range res.Series {
		in := s.Labels[r.instLbl]
		if in != "" && nodeOf(in) == nr.Node && anyFinite(s.V) {
			instances = appendUnique(instances, in)
		}
	}
	var models []string
	if len(instances) > 0 {
		if e.Profile.ModelLabel == "" {
			return nil, fmt.Errorf("%w: node: %s metrics carry no model label, so the models on a node cannot be told apart: name the model", ErrOptions, e.Profile.Title)
		}
		res, err := r.run(ctx, engine.Throughput{Select: engine.Select{Instance: instances, KeepWarmup: true, RateInterval: r.rate}, By: "model"})
		if err != nil {
			return nil, err
		}
		for _, s := range res.Series {
			if m := s.Labels[e.Profile.ModelLabel]; m != "" && anyFinite(s.V) {
				models = appendUnique(models, m)
			}
		}
	}
	if len(models) == 0 {
		r.notice(fmt.Sprintf("no model was served on node %s in %s–%s: no instance's host is %q (the instance label without its port)",
			nr.Node, nr.Before.Start.Format(time.RFC3339), nr.Window.End.Format(time.RFC3339), nr.Node))
	}
	nr.Notices, nr.Queries = r.rd.Notices, r.rd.Queries
	// One model at a time: each read already runs its queries in parallel, up to maxParallel.
	for i, m := range models {
		mo := o
		mo.Model, mo.Version, mo.Node = m, "", nr.Node
		mo.Progress = nil
		if o.Progress != nil {
			mo.Progress = func(_, _ int, label string) {
				o.Progress(2, 2, fmt.Sprintf("%s (model %d of %d): %s", m, i+1, len(models), label))
			}
		}
		// A GPU alert fires a minute or two into its incident, as a latency alert does: each model
		// looks for its change point the same way.
		rd, rc, err := readRecent(ctx, e, mo)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		if rc != nil {
			nr.Changes[m] = rc
			rd.Notices = append(rd.Notices, recentNotice(rc, newWindow(rd.Window.Start, rd.Window.End)))
		}
		nr.Models = append(nr.Models, rd)
		nr.Queries += rd.Queries
		nr.Notices = append(nr.Notices, rd.Notices...)
	}
	nr.Notices = uniqueSorted(nr.Notices)
	return nr, nil
}

// settleNode applies a model's change point to the node's report as a model question does: the
// report's change is the first cause's model's (else the strongest of any model's), and a
// diagnosis that rests on a change one point old is graded as settleRecent does.
func settleNode(rep *Report, nr *NodeReadings) {
	var rc *RecentChange
	if len(rep.Causes) > 0 {
		rc = nr.Changes[rep.Causes[0].Model]
	}
	if rc == nil { // no cause, or one naming no model (a GPU's, a node's hardware)
		for _, m := range slices.Sorted(maps.Keys(nr.Changes)) {
			if c := nr.Changes[m]; rc == nil || c.Now/c.Level > rc.Now/rc.Level {
				rc = c
			}
		}
	}
	if rc != nil {
		rep.Change = rc
		settleRecent(rep, rc)
	}
}

func uniqueSorted(list []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
