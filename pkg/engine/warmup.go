package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// signalLabel tells the lifecycle signals apart in the one query that reads them all.
const signalLabel = "inferscope_signal"

// Lifecycle signals, as values of signalLabel.
const (
	sigReady    = "ready"    // not-ready points of the load state, per instance (and model)
	sigStart    = "start"    // process start time per instance, near a start
	sigResets   = "resets"   // counter resets of a request counter in the last rate window (+ its index)
	sigAppeared = "appeared" // the instance exports request counters, and did not a step earlier
)

// warmState holds the warm-up masks of a query on its fetch grid, keyed by instance and model
// (model "" = every model of the instance).
type warmState struct {
	t     []int64
	masks map[string]derive.Mask
}

func maskKey(instance, model string) string { return instance + "\xff" + model }

// warmup reads the lifecycle signals once per query and builds the masks.
func (x *Exec) warmup(ctx context.Context) (*warmState, error) {
	x.warmOnce.Do(func() { x.warm, x.warmErr = x.loadWarmup(ctx) })
	return x.warm, x.warmErr
}

// warming lists, sorted, the instances with a warming point anywhere on the grid.
func (ws *warmState) warming() []string {
	if ws == nil {
		return nil
	}
	var out []string
	for key, m := range ws.masks {
		inst, _, _ := strings.Cut(key, "\xff")
		if slices.Contains(out, inst) {
			continue
		}
		for _, r := range m {
			if r != 0 {
				out = append(out, inst)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// resolve picks the role's measure among those whose metrics Prometheus has.
func (x *Exec) resolve(role profile.Role) (profile.Measure, bool, string) {
	return resolveIn(x.prof, x.e.Present, role)
}

// resolveIn picks the role's measure of p among the names present, or its first measure where
// the names Prometheus has are not known (present nil).
func resolveIn(p profile.Profile, present map[string]bool, role profile.Role) (profile.Measure, bool, string) {
	if present == nil {
		ms, why := p.Measures(role)
		if len(ms) == 0 {
			return profile.Measure{}, false, why
		}
		return ms[0], true, ""
	}
	return p.Resolve(role, present)
}

// signalsExpr is the one PromQL expression that reads the lifecycle events of the selected
// instances, told apart by signalLabel. Each part is sparse, so a range without any restart
// costs next to nothing: not-ready points of the load state, the process start time only where
// it lies within reach of the point (a start more than the warm-up window, a rate window and a
// step ago cannot mark it), the points whose rate window saw a counter reset, and the points
// where an instance is present and was not one step earlier.
func (x *Exec) signalsExpr() (string, error) {
	il := x.instanceLabel
	var parts []string
	if m, ok, _ := x.resolve(profile.LoadState); ok {
		sel, err := selector(m.Metrics, x.measureMatchers(scopeModel, m))
		if err != nil {
			return "", err
		}
		expr, err := aggregate("min", union([]string{il}, x.modelLabel), sel)
		if err != nil {
			return "", err
		}
		parts = append(parts, withLabel(expr+" < 0.5", signalLabel, sigReady))
	}
	req, ok, _ := x.resolve(profile.Requests)
	if !ok {
		if len(parts) == 0 {
			return "", nil
		}
		return strings.Join(parts, " or "), nil
	}
	ms := x.measureMatchers(x.scopeOf(req), req)
	reqSel, err := selector(req.Metrics, ms)
	if err != nil {
		return "", err
	}
	present, err := aggregate("group", []string{il}, reqSel)
	if err != nil {
		return "", err
	}
	if m, ok, _ := x.resolve(profile.ProcessStart); ok {
		sel, err := selector(m.Metrics, x.measureMatchers(scopeInstance, m))
		if err != nil {
			return "", err
		}
		start, err := aggregate("max", []string{il}, sel)
		if err != nil {
			return "", err
		}
		reach := (x.warmupWindow() + x.rateWindow() + x.g.step).Seconds()
		// Only the inference servers' own processes: process_start_time_seconds exists for
		// every scrape target.
		parts = append(parts, withLabel(start+" > time() - "+formatFloat(reach)+" and on ("+il+") "+present, signalLabel, sigStart))
	}
	// One resets() per counter: over several names at once the series would collide.
	for i, name := range req.Metrics {
		sel, err := prom.Selector(name, ms...)
		if err != nil {
			return "", err
		}
		resets, err := aggregate("sum", []string{il}, "resets("+sel+"["+promqlDuration(x.rateWindow())+"])")
		if err != nil {
			return "", err
		}
		parts = append(parts, withLabel(resets+" > 0", signalLabel, sigResets+strconv.Itoa(i)))
	}
	before, err := selector(req.Metrics, ms)
	if err != nil {
		return "", err
	}
	wasPresent, err := aggregate("group", []string{il}, before+" offset "+promqlDuration(x.g.step))
	if err != nil {
		return "", err
	}
	parts = append(parts, withLabel(present+" unless on ("+il+") "+wasPresent, signalLabel, sigAppeared))
	return strings.Join(parts, " or "), nil
}

func (x *Exec) loadWarmup(ctx context.Context) (*warmState, error) {
	expr, err := x.signalsExpr()
	if err != nil {
		return nil, err
	}
	if expr == "" {
		return x.buildWarmup(nil)
	}
	series, err := x.fetch(ctx, expr)
	if err != nil {
		return nil, fmt.Errorf("reading the warm-up signals: %w", err)
	}
	ws, err := x.buildWarmup(series)
	if err != nil {
		return nil, err
	}
	return ws, x.addLoadTimes(ctx)
}

// buildWarmup turns the lifecycle signals into masks, widened by the rate window.
func (x *Exec) buildWarmup(series []derive.Series) (*warmState, error) {
	t := x.fetchGrid()
	ws := &warmState{t: t, masks: map[string]derive.Mask{}}
	if len(series) == 0 {
		if _, ok, _ := x.resolve(profile.Requests); !ok {
			x.Notice(Info, fmt.Sprintf("warm-up filter: %s exports neither a load state nor a request counter here, so no sample is filtered", x.prof.Title))
		}
		return ws, nil
	}
	type inst struct {
		start, present derive.Series
		resets         []int64
		ready          map[string]derive.Series // by model ("" = instance-wide)
	}
	insts := map[string]*inst{}
	var order []string
	for _, s := range series {
		name := s.Labels[x.instanceLabel]
		in, ok := insts[name]
		if !ok {
			in = &inst{ready: map[string]derive.Series{}}
			insts[name] = in
			order = append(order, name)
		}
		switch sig := s.Labels[signalLabel]; {
		case sig == sigReady:
			in.ready[s.Labels[x.modelLabel]] = readyFromNotReady(s)
		case sig == sigStart:
			in.start = s
		case sig == sigAppeared:
			in.present = presenceFromAppearances(s)
		case strings.HasPrefix(sig, sigResets):
			in.resets = append(in.resets, risingEdges(s)...)
		}
	}
	window := x.warmupWindow()
	// A rate at t holds the observations of [t − rate window, t], and a warming point stands for
	// the step after it too: a mask is widened by both.
	widen := x.rateWindow() + x.g.step
	for _, name := range order {
		in := insts[name]
		if in.present.Empty() {
			// The events are sparse: an instance with signals is present throughout unless an
			// appearance says otherwise, so gaps in the other signals are not appearances.
			in.present = presenceFromAppearances(derive.Series{T: t, V: nanValues(len(t))})
		}
		sig := derive.InstanceSignals{StartTime: in.start, Presence: in.present, Resets: in.resets}
		build := func(model string, ready derive.Series) error {
			sig.Ready = ready
			m, err := derive.WarmupMask(t, sig, window)
			if err != nil {
				return fmt.Errorf("warm-up mask of %s: %w", name, err)
			}
			m = widenMask(m, t, widen.Milliseconds())
			ws.masks[maskKey(name, model)] = m
			return nil
		}
		if err := build("", in.ready[""]); err != nil {
			return nil, err
		}
		models := make([]string, 0, len(in.ready))
		for model := range in.ready {
			if model != "" {
				models = append(models, model)
			}
		}
		sort.Strings(models)
		for _, model := range models {
			if err := build(model, in.ready[model]); err != nil {
				return nil, err
			}
			x.recordWarmup(name, model, ws.masks[maskKey(name, model)], t)
		}
		if len(models) == 0 {
			x.recordWarmup(name, "", ws.masks[maskKey(name, "")], t)
		}
	}
	return ws, nil
}

// readyFromNotReady turns the not-ready points (0) into the load-state signal WarmupMask reads:
// 0 there, 1 at the first point after each not-ready run (the model became ready), unknown
// elsewhere.
func readyFromNotReady(s derive.Series) derive.Series {
	v := nanValues(len(s.V))
	for i, x := range s.V {
		if math.IsNaN(x) {
			continue
		}
		v[i] = 0
		if i+1 < len(v) && math.IsNaN(s.V[i+1]) {
			v[i+1] = 1
		}
	}
	return derive.Series{Labels: s.Labels, T: s.T, V: v}
}

// presenceFromAppearances turns the points where an instance appeared into the presence signal
// WarmupMask reads: present everywhere but the point before each appearance.
func presenceFromAppearances(s derive.Series) derive.Series {
	v := make([]float64, len(s.V))
	for i := range v {
		v[i] = 1
	}
	for i, x := range s.V {
		if !math.IsNaN(x) && i > 0 {
			v[i-1] = math.NaN()
		}
	}
	return derive.Series{Labels: s.Labels, T: s.T, V: v}
}

// risingEdges returns the timestamps where a count series turns positive: the first point
// whose window saw a counter reset.
func risingEdges(s derive.Series) []int64 {
	var out []int64
	was := false
	for i, v := range s.V {
		now := v > 0
		if now && !was {
			out = append(out, s.T[i])
		}
		was = now
	}
	return out
}

// widenMask marks every point within w (exclusive) after a warming point as warming too, with
// that point's reasons.
func widenMask(m derive.Mask, t []int64, w int64) derive.Mask {
	out := make(derive.Mask, len(m))
	last := -1
	for i := range m {
		if m[i] != 0 {
			last = i
		}
		if last >= 0 && t[i]-t[last] < w {
			out[i] = m[i] | m[last]
		}
	}
	return out
}

func (x *Exec) recordWarmup(instance, model string, m derive.Mask, t []int64) {
	for _, iv := range m.Intervals(t) {
		start, end := max(iv.Start, x.g.start), min(iv.End, x.g.end)
		if start > end {
			continue
		}
		x.mu.Lock()
		x.res.Warmup = append(x.res.Warmup, WarmupInterval{
			Instance: instance, Model: model, Start: time.UnixMilli(start).UTC(), End: time.UnixMilli(end).UTC(), Reason: iv.Reason.String(),
		})
		x.mu.Unlock()
	}
}

// apply drops the warming samples of each series (NaN), by its instance and model labels.
// Series of instances without signals are kept as they are.
func (ws *warmState) apply(series []derive.Series, instanceLabel, modelLabel string) ([]derive.Series, error) {
	out := make([]derive.Series, len(series))
	for i, s := range series {
		inst := s.Labels[instanceLabel]
		m, ok := ws.masks[maskKey(inst, s.Labels[modelLabel])]
		if !ok {
			m, ok = ws.masks[maskKey(inst, "")]
		}
		if !ok {
			out[i] = s
			continue
		}
		masked, err := m.Apply(s)
		if err != nil {
			return nil, err
		}
		out[i] = masked
	}
	return out, nil
}
