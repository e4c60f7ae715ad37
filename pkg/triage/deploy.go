package triage

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Deploy awareness: a version regression is a newly deployed version slower than the version
// it replaced on the same instances. Triage knows which version is new — one that appeared on
// the instance in the DeployLookback before the window or in it (the engine's deploy events), or
// that has traffic in the window and none in the hour before while another version had — and
// compares it with the versions there before it: side by side in the window (a canary), or, when
// the old version left (an in-place upgrade), the old version's hour before against the new
// version's window. Without a known new version no version is compared with another: the old
// against the new would blame the stable version for its own incident.

// DeployLookback is how far before the window a version's first appearance counts as a recent
// deploy.
const DeployLookback = 24 * time.Hour

// Deploy is a version of the model that appeared on an instance.
type Deploy struct {
	Instance, Version string
	At                time.Time
}

// versionAge is when each version of the model appeared on the instance: the deploy's time for
// a recent deploy, the window's start for a version that appeared in the readings without a
// deploy event, and the zero time for a version that was there all along.
func versionAge(rd *Readings, instance string) map[string]time.Time {
	deployed := map[string]time.Time{}
	for _, d := range rd.Deploys {
		if d.Instance != instance || d.At.After(rd.Window.End) {
			continue
		}
		if t, ok := deployed[d.Version]; !ok || d.At.Before(t) {
			deployed[d.Version] = d.At
		}
	}
	var before bool
	for _, s := range rd.Subjects {
		if s.Instance == instance && s.QPS.Before > 0 {
			before = true
		}
	}
	out := map[string]time.Time{}
	for _, s := range rd.Subjects {
		if s.Instance != instance {
			continue
		}
		switch t, ok := deployed[s.Version]; {
		case ok:
			out[s.Version] = t
		case before && !(s.QPS.Before > 0) && s.QPS.Now > 0:
			out[s.Version] = rd.Window.Start
		default:
			out[s.Version] = time.Time{}
		}
	}
	return out
}

// replaced are the subjects on s's instance that were there before s arrived (none when s is
// not new there).
func replaced(rd *Readings, s Subject) (olds []Subject, at time.Time) {
	if s.Version == "" {
		return nil, time.Time{}
	}
	age := versionAge(rd, s.Instance)
	at = age[s.Version]
	if at.IsZero() {
		return nil, time.Time{}
	}
	for _, o := range rd.Subjects {
		// A reading without a version (a server's error counters carry none) is no version.
		if o.Instance == s.Instance && o.Version != s.Version && o.Version != "" {
			if t := age[o.Version]; t.IsZero() || t.Before(at) {
				olds = append(olds, o)
			}
		}
	}
	return olds, at
}

// weighted is the traffic-weighted mean of a reading over subjects (weights: QPS now or before).
func weighted(ss []Subject, now bool, get func(Subject) Pair) float64 {
	var sum, w float64
	for _, s := range ss {
		q, v := s.QPS.Before, get(s).Before
		if now {
			q, v = s.QPS.Now, get(s).Now
		}
		if q > 0 && finite(v) {
			sum += q * v
			w += q
		}
	}
	if w == 0 {
		return math.NaN()
	}
	return sum / w
}

func versions(ss []Subject) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Version)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// effective is the subject as its decomposition and causes see it: a new version without an
// hour before of its own takes the before of the versions it replaced on the instance (the
// model's before there), and says so.
func effective(rd *Readings, s Subject) (Subject, string) {
	if finite(s.Queue.Before) && finite(s.Compute.Before) && s.QPS.Before > 0 {
		return s, ""
	}
	olds, _ := replaced(rd, s)
	if len(olds) == 0 {
		return s, ""
	}
	fill := func(p *Pair, get func(Subject) Pair) {
		if !finite(p.Before) {
			p.Before = weighted(olds, false, get)
		}
	}
	e := s
	fill(&e.QPS, func(x Subject) Pair { return x.QPS })
	fill(&e.P50, func(x Subject) Pair { return x.P50 })
	fill(&e.P95, func(x Subject) Pair { return x.P95 })
	fill(&e.P99, func(x Subject) Pair { return x.P99 })
	fill(&e.Jitter, func(x Subject) Pair { return x.Jitter })
	fill(&e.Queue, func(x Subject) Pair { return x.Queue })
	fill(&e.Compute, func(x Subject) Pair { return x.Compute })
	fill(&e.Network, func(x Subject) Pair { return x.Network })
	fill(&e.Prefill, func(x Subject) Pair { return x.Prefill })
	fill(&e.Decode, func(x Subject) Pair { return x.Decode })
	fill(&e.ErrorRatio, func(x Subject) Pair { return x.ErrorRatio })
	fill(&e.TimeoutRatio, func(x Subject) Pair { return x.TimeoutRatio })
	return e, fmt.Sprintf("before = %s on %s in the hour before (the version(s) %s replaced)", versions(olds), s.Instance, s.Version)
}

// regressionCause: s is a version deployed on its instance in or before the window, slower than
// the versions it replaced there. Compute is compared where the split measures it (a version's
// code changes its compute; its queue follows the load), else the service time.
func regressionCause(rd *Readings, s Subject, th Thresholds, who string) (candidate, bool) {
	olds, at := replaced(rd, s)
	if len(olds) == 0 || !(s.QPS.Now > 0) {
		return candidate{}, false
	}
	svcOf := func(x Subject) Pair { return x.ServiceMean() }
	cmpOf := func(x Subject) Pair { return x.Compute }
	// Side by side (a canary) where the old versions still serve; else the old versions' hour
	// before (an in-place upgrade).
	sideBySide := !math.IsNaN(weighted(olds, true, svcOf))
	refSvc, refCmp, when := weighted(olds, true, svcOf), weighted(olds, true, cmpOf), "in the window"
	if !sideBySide {
		refSvc, refCmp, when = weighted(olds, false, svcOf), weighted(olds, false, cmpOf), "in the hour before (it was replaced in place)"
	}
	svc := s.ServiceMean()
	r, what := ratio(s.Compute.Now, refCmp), "compute"
	if !finite(r) {
		r, what = ratio(svc.Now, refSvc), "service"
	}
	lim := th.RegressionLimit
	sc := 0.9 * grade(r, 1+lim*0.3, 1+lim*1.8)
	if !(sc > 0) {
		return candidate{}, false
	}
	deployed := "deployed " + at.UTC().Format("2006-01-02 15:04 UTC")
	if !slices.ContainsFunc(rd.Deploys, func(d Deploy) bool { return d.Instance == s.Instance && d.Version == s.Version }) {
		deployed = "appeared in the window"
	}
	oldNames := versions(olds)
	return candidate{id: CauseModelRegression, instance: s.Instance, version: s.Version, score: sc,
		summary: fmt.Sprintf("%s (%s) is %.0f %% slower in %s time (×%.2f) than %s on the same instance %s (mean %s vs %s)",
			who, deployed, (r-1)*100, what, r, oldNames, when, msText(pick(what == "compute", s.Compute.Now, svc.Now)), msText(pick(what == "compute", refCmp, refSvc))),
		evidence: []Evidence{
			ev("mean service time: the version(s) replaced (before) vs the new version (now)", "s", Pair{refSvc, svc.Now},
				"before = "+oldNames+" on "+s.Instance+" "+when+"; now = "+s.Version+" ("+deployed+")"),
			ev("mean compute time: the version(s) replaced (before) vs the new version (now)", "s", Pair{refCmp, s.Compute.Now}, ""),
			ev("P95 latency", "s", s.P95, "")}}, true
}

// deployMemoryCause: a version deployed on the instance since the hour before the window, and
// the node's fullest GPU now past its critical memory line, where it was under that line in that
// hour and at least climbLine lower — the brief's headline case, an in-place upgrade whose new version needs more
// memory than the card has. It is read from the memory at the window's last point, after the new
// version loaded (a load may peak higher on its way), and needs no latency of the new version:
// its warm-up's samples are dropped, and the cliff comes before they return. The version is the
// change that came with the memory; the summary says what was read, so a co-tenant's memory rising
// at the same moment can be told apart. Servers that pre-allocate (a KV cache read) are judged by
// their cache instead.
func deployMemoryCause(rd *Readings, in *Instance, th Thresholds) (candidate, bool) {
	if finite(in.KVCache.Now) || !(in.GPUMemLast >= th.GPUMemCrit) || !(in.GPUMem.Before < th.GPUMemCrit) || !(in.GPUMemLast-in.GPUMem.Before >= climbLine) {
		return candidate{}, false
	}
	var d *Deploy
	for i := range rd.Deploys {
		x := &rd.Deploys[i]
		if x.Instance == in.Name && x.At.After(rd.Before.Start) && !x.At.After(rd.Window.End) && (d == nil || x.At.After(d.At)) {
			d = x
		}
	}
	if d == nil {
		return candidate{}, false
	}
	return candidate{id: CauseModelRegression, instance: in.Name, version: d.Version,
		score: 0.6 + 0.3*grade(in.GPUMemLast, th.GPUMemCrit, 1),
		summary: fmt.Sprintf("%s (deployed %s) needs more GPU memory than was free: since its deploy %s is at %.1f %%, past its %.0f %% critical line, where it held %.1f %% in the hour before",
			subjectText(rd.Model, d.Version)+" on "+in.Name, d.At.UTC().Format("2006-01-02 15:04 UTC"), gpuText(rd, in.Node), in.GPUMemLast*100, th.GPUMemCrit*100, in.GPUMem.Before*100),
		evidence: []Evidence{ev("GPU memory used (the node's fullest GPU): the hour before vs the window's last point", "percentunit", Pair{in.GPUMem.Before, in.GPUMemLast},
			fmt.Sprintf("deployed %s; peak %.1f %% in the window", d.At.UTC().Format("15:04"), in.GPUMemPeak*100))}}, true
}

func pick(c bool, a, b float64) float64 {
	if c {
		return a
	}
	return b
}

// unknownAge lists the instances where several versions serve and none is known to be new: they
// are not compared (gate compares them).
func unknownAge(rd *Readings) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range rd.Subjects {
		if seen[s.Instance] {
			continue
		}
		seen[s.Instance] = true
		age := versionAge(rd, s.Instance)
		var vs []string
		known := false
		for v, t := range age {
			if v != "" {
				vs = append(vs, v)
			}
			known = known || !t.IsZero()
		}
		if len(vs) > 1 && !known {
			sort.Strings(vs)
			out = append(out, fmt.Sprintf("%s on %s", strings.Join(vs, " and "), s.Instance))
		}
	}
	return out
}

// deployWarmup names the version whose deploy the instance's warm-up in the window belongs to:
// a version that appeared on the instance from deployGrace before a warm-up's start to its end
// (or, found from the readings alone, in the window); "" for a warm-up without a deploy.
func deployWarmup(rd *Readings, in *Instance) string {
	age := versionAge(rd, in.Name)
	var out []string
	for v, at := range age {
		if at.IsZero() || v == "" {
			continue
		}
		fromData := !slices.ContainsFunc(rd.Deploys, func(d Deploy) bool { return d.Instance == in.Name && d.Version == v })
		for _, w := range in.Warmup {
			if !w.End.After(rd.Window.Start) || !w.Start.Before(rd.Window.End) {
				continue
			}
			if fromData || (!at.Before(w.Start.Add(-deployGrace)) && !at.After(w.End)) {
				out = append(out, v)
				break
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// deployGrace: a version's first sample counts as the deploy behind a warm-up that starts up to
// this long after it (the deploy events' grid, and a model's load time).
const deployGrace = 2 * deployStep
