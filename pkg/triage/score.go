package triage

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/units"
)

// Scoring is pure: Score turns Readings into the ranked report. Each cause's score in [0, 1]
// adds graded pieces of evidence (grade: 0 at a "nothing unusual" level, 1 at an unmistakable
// one), so a cause with several consistent signs ranks above one with a single sign. Scores are
// computed per instance (and version) and each cause keeps its strongest instance.

// Thresholds are the catalog's numbers the scoring and the health marks use.
type Thresholds struct {
	GPUMemWarn, GPUMemCrit     float64 // memory used ratio
	KVCacheWarn, KVCacheCrit   float64 // KV-cache usage ratio, the memory line of servers that report it
	Jitter                     float64 // P99/P50
	LatencyWarn, LatencyCrit   float64 // P95 / 7-day baseline
	ErrorRatio                 float64 // failed share
	QueueShare                 float64 // queue share of the service time
	CacheDrop                  float64 // cache hit rate below this share of its reference
	RegressionLimit            float64 // a version this much slower than the others (gate's 10 %)
	DiagnosedScore, AnomalyLow float64 // top score that diagnoses; below it with no symptom: healthy
}

// DefaultThresholds are pkg/alerting's defaults (the brief's numbers) and the gate's limit.
func DefaultThresholds() Thresholds {
	p := alerting.Defaults()
	return Thresholds{GPUMemWarn: p.GPUMemWarn, GPUMemCrit: p.GPUMemCrit, KVCacheWarn: DefaultKVCacheWarn, KVCacheCrit: DefaultKVCacheCrit, Jitter: p.JitterRatio,
		LatencyWarn: p.LatencyWarnRatio, LatencyCrit: p.LatencyCritRatio, ErrorRatio: p.ErrorRatio,
		QueueShare: p.QueueShare, CacheDrop: p.CacheDropRatio, RegressionLimit: 0.10,
		DiagnosedScore: 0.5, AnomalyLow: 0.25}
}

// KV-cache lines: vLLM's scheduler preempts (recomputes or swaps) running requests when no KV
// block is free, and in practice usage runs at 70-85 % under steady load; above 85 % a burst
// of long prompts starts preemptions, above 92 % (the GPU-memory critical line, for the same
// reason: the last blocks go to fragmentation and reallocation) they are near certain.
const (
	DefaultKVCacheWarn = 0.85
	DefaultKVCacheCrit = 0.92
)

// MinScore: causes below it have no real evidence and are not listed.
const MinScore = 0.05

// The segment rule is the derive package's (the split's regimes read the same): a segment rises
// when it is riseRatio× its reference and at least stepFloor above it.
const riseRatio = 1.5

var splitRule = derive.DefaultSplitOptions()

// stepFloor is the smallest step that counts on a subject whose time per request was total
// seconds before: 5 ms, or a tenth of a fast service's time, never under 1 ms
// (derive.SplitOptions.RiseFloor). A 3 ms queue step on a 20 ms embedder is 15 % on every
// request; on a 2 s generation it is noise.
func stepFloor(total float64) float64 { return splitRule.RiseFloor(total) }

// grade maps x linearly from 0 at lo to 1 at hi (clamped); NaN grades 0.
func grade(x, lo, hi float64) float64 {
	if math.IsNaN(x) || x <= lo {
		return 0
	}
	if x >= hi {
		return 1
	}
	return (x - lo) / (hi - lo)
}

// combine adds independent signs: 1 − ∏(1 − s).
func combine(s ...float64) float64 {
	p := 1.0
	for _, x := range s {
		p *= 1 - math.Max(0, math.Min(1, x))
	}
	return 1 - p
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func ratio(a, b float64) float64 {
	if !finite(a) || !finite(b) || b <= 0 {
		return math.NaN()
	}
	return a / b
}

func num(x float64) *float64 {
	if !finite(x) {
		return nil
	}
	return &x
}

// notMeasuredNote marks a reading the exporters do not give (its notice says what would).
func notMeasuredNote(p Pair) string {
	if !finite(p.Now) {
		return "not measured"
	}
	return ""
}

func ev(what, unit string, p Pair, note string) Evidence {
	e := Evidence{What: what, Unit: unit, Before: num(p.Before), Now: num(p.Now), Note: note}
	if r := ratio(p.Now, p.Before); finite(r) {
		c := r - 1
		if math.Abs(c) < 1e-9 {
			c = 0 // float dust: a flat reading does not change
		}
		e.Change = num(c)
	}
	return e
}

// candidate is a cause found on one instance (and version).
type candidate struct {
	id                       string
	score                    float64
	model, instance, version string
	summary                  string
	evidence                 []Evidence
	// unseen: a node's hardware event the model's own requests show no sign of (gathered.own).
	unseen bool
	// queueRatio: the queue cause's mean queue time against the hour before.
	queueRatio float64
	// ofGPU: a reading of the GPU that no model's requests show yet (an idle GPU without
	// fallbacks or a slower service, memory climbing under flat compute): in a node question it
	// names no model, GPU series carrying none.
	ofGPU bool
}

// Score ranks the causes in rd under th and writes the report.
func Score(rd *Readings, th Thresholds) Report {
	q := question{model: rd.Model, version: rd.Version, instance: rd.Instance, node: rd.Node, gpu: rd.GPU,
		window: rd.Window, before: rd.Before, notices: rd.Notices, queries: rd.Queries}
	return score(q, []*Readings{rd}, th)
}

// ScoreNode ranks the causes found on every model of a node question in one list (each cause
// keeps its strongest model and instance) and writes the report.
func ScoreNode(nr *NodeReadings, th Thresholds) Report {
	q := question{instance: nr.Instance, node: nr.Node, gpu: nr.GPU, window: nr.Window, before: nr.Before,
		notices: nr.Notices, queries: nr.Queries, byNode: true}
	r := score(q, nr.Models, th)
	for _, rd := range nr.Models {
		r.Models = append(r.Models, rd.Model)
	}
	return r
}

// question is what the report answers.
type question struct {
	model, version, instance, node, gpu string
	window, before                      Span
	notices                             []string
	queries                             int
	byNode                              bool
}

// subject names the question for people: the model (and version), or the node (and GPU).
func (q question) subject() string {
	if !q.byNode {
		return subjectText(q.model, q.version)
	}
	if q.gpu != "" {
		return fmt.Sprintf("GPU %s of %s", q.gpu, q.node)
	}
	return q.node
}

func score(q question, rds []*Readings, th Thresholds) Report {
	r := Report{Model: q.model, Version: q.version, Instance: q.instance, Node: q.node, GPU: q.gpu,
		Window: newWindow(q.window.Start, q.window.End), Before: newWindow(q.before.Start, q.before.End),
		Notices: append([]string{}, q.notices...), Queries: q.queries}
	g := gather(q, rds, th)
	r.Causes = q.causes(g.best)
	r.Steps = steps(rds, r.Causes, th)
	g.segmentsReport(&r)
	r.NotMeasured = notMeasured(rds)
	r.Notices = append(r.Notices, g.notes...)
	top := 0.0
	if len(r.Causes) > 0 {
		top = r.Causes[0].Score
	}
	switch {
	case top >= th.DiagnosedScore:
		r.Verdict = Diagnosed
		c := r.Causes[0]
		r.Summary = fmt.Sprintf("%s: %s", c.Title, c.Summary)
		r.Confidence = c.Confidence
	case len(g.symptoms) == 0 && (top < th.AnomalyLow || onlyUnseen(r.Causes, th)):
		r.Verdict = Healthy
		r.Summary = healthySummary(q, rds, g.subjects, g.unfeltNodes)
		if top >= th.AnomalyLow {
			r.Summary += "; a hardware event on its node shows in none of its requests (listed below for the node's owners: " + r.Causes[0].Summary + ")"
		}
		r.Confidence = "high"
		if len(r.NotMeasured) > 3 {
			r.Confidence = "medium" // healthy in what was read; part of the picture is missing
		}
	default:
		r.Verdict = NoDirection
		what := strings.Join(g.symptoms, "; ")
		if what == "" {
			what = "weak signs only"
		}
		if lt := g.lead.leadTextOrEmpty(); lt != "" {
			what += "; " + lt
		}
		if c := candidatesText(r.Causes); c != "" {
			what += "; " + c
		}
		r.Summary = fmt.Sprintf("No clear direction (%s): escalate to the service's owners with this report", what)
		r.Confidence = "low"
	}
	return r
}

// onlyUnseen says whether every cause past the anomaly line is a node's hardware event that the
// model's own requests show no sign of: with no symptom either, the model is healthy and the
// event belongs to the node's hardware alert (the cause stays listed, its summary says so).
func onlyUnseen(cs []Cause, th Thresholds) bool {
	seen := false
	for _, c := range cs {
		if c.Score >= th.AnomalyLow {
			if !c.unseen {
				return false
			}
			seen = true
		}
	}
	return seen
}

// candidatesText names the first causes of an undiagnosed answer with their scores and
// confidence: an event near the window's end (an XID, a GPU gone idle) is a candidate before
// the latency shows it, said as such, not a diagnosis.
func candidatesText(cs []Cause) string {
	var out []string
	for i, c := range cs {
		if i == 3 {
			break
		}
		out = append(out, fmt.Sprintf("%s %.2f (%s)", c.ID, c.Score, c.Confidence))
	}
	if len(out) == 0 {
		return ""
	}
	return "candidates below the diagnosis line: " + strings.Join(out, ", ")
}

// causes makes the report's causes of the best candidates, strongest first (then by id).
func (q question) causes(best map[string]candidate) []Cause {
	out := []Cause{}
	for id, c := range best {
		info := causeInfos[id]
		version := c.version
		if version == "" {
			version = q.version
		}
		gpu := ""
		if info.layer == LayerResource {
			gpu = q.gpu
		}
		out = append(out, Cause{ID: id, Title: info.title, Layer: info.layer, Score: c.score, Confidence: confidence(c.score),
			Summary: c.summary, Model: c.model, Instance: c.instance, Version: c.version, Evidence: c.evidence, Next: info.next, unseen: c.unseen,
			Links: links(id, q.before.Start, q.window.End, c.model, version, c.instance, gpu)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// healthySummary says why nothing is wrong: nothing was served, or everything is within limits.
// unfelt are the nodes whose GPU memory is past its lines unfelt (gathered.unfeltNodes).
func healthySummary(q question, rds []*Readings, subjects int, unfelt []string) string {
	switch {
	case subjects == 0 && q.byNode:
		return fmt.Sprintf("no model was served on %s in the window or the hour before: nothing to diagnose", q.node)
	case subjects == 0:
		return fmt.Sprintf("%s served no traffic in the window or the hour before: nothing to diagnose", q.subject())
	case q.byNode:
		return fmt.Sprintf("%s looks healthy: the models served there (%s) are within their limits for latency, errors, jitter and GPU memory and no change against the hour before crosses its line",
			q.subject(), strings.Join(modelNames(rds), ", "))
	}
	if len(unfelt) > 0 {
		return fmt.Sprintf("%s looks healthy: latency, errors and jitter are within their limits and no change against the hour before crosses its line; GPU memory on %s is past its line, but none of its requests there show it (see the notices)",
			q.subject(), strings.Join(unfelt, ", "))
	}
	return fmt.Sprintf("%s looks healthy: latency, errors, jitter and GPU memory are within their limits and no change against the hour before crosses its line", q.subject())
}

func modelNames(rds []*Readings) []string {
	out := make([]string, 0, len(rds))
	for _, rd := range rds {
		out = append(out, rd.Model)
	}
	return out
}

func confidence(s float64) string {
	switch {
	case s >= 0.75:
		return "high"
	case s >= 0.5:
		return "medium"
	}
	return "low"
}

// selected says whether a subject is the version asked about (all versions when none is).
func selected(rd *Readings, s Subject) bool {
	return rd.Version == "" || s.Version == "" || s.Version == rd.Version
}

// warmFraction is the share of [from, to] covered by the warm-ups.
func warmFraction(ws []Warmup, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	// Merge overlaps so two reasons for one stretch count once.
	type iv struct{ s, e time.Time }
	var ivs []iv
	for _, w := range ws {
		s, e := maxTime(w.Start, from), minTime(w.End, to)
		if e.After(s) {
			ivs = append(ivs, iv{s, e})
		}
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].s.Before(ivs[j].s) })
	var total time.Duration
	var cur *iv
	for i := range ivs {
		switch {
		case cur == nil:
			cur = &ivs[i]
		case !ivs[i].s.After(cur.e):
			cur.e = maxTime(cur.e, ivs[i].e)
		default:
			total += cur.e.Sub(cur.s)
			cur = &ivs[i]
		}
	}
	if cur != nil {
		total += cur.e.Sub(cur.s)
	}
	return float64(total) / float64(to.Sub(from))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// warming says whether the instance warmed up inside the window: the readings of that
// instance then partly describe a warm-up, and the other causes found there weigh half.
func warming(rd *Readings, in *Instance) bool {
	return in != nil && warmFraction(in.Warmup, rd.Window.Start, rd.Window.End) > 0
}

const warmNote = "weighed half: the instance warmed up in the window"

// instanceCauses score the causes read per instance: traffic, GPU idle, hardware, framework,
// input length, warm-up.
func instanceCauses(rd *Readings, in *Instance, th Thresholds) []candidate {
	var out []candidate
	add := func(c candidate, ok bool) {
		if ok {
			out = append(out, c)
		}
	}
	warm := warming(rd, in)
	subj := subjectText(rd.Model, rd.Version)
	add(trafficCause(rd, in, subj, warm))
	add(gpuIdleCause(rd, in, subj))
	add(hardwareCause(rd, in))
	add(frameworkCause(in, th, warm))
	add(inputShiftCause(in))
	add(warmupCause(rd, in))
	add(lostCapacityCause(rd, in))
	add(kvExhaustedCause(in, th))
	add(memoryClimbCause(rd, in, th))
	add(deployMemoryCause(rd, in, th))
	return out
}

// climbLine: GPU memory that rose this much from the hour before has climbed, not stood.
const climbLine = 0.05

// memoryClimbCause: in a question about a node (a GPU alert's), GPU memory that climbed past its
// critical line in the window — up at least climbLine from the hour before, not the node's
// standing level — is memory pressure by itself: near the card's limit allocations fail or
// reallocate (the brief's saw-tooth latency, out-of-memory) before the latency shows it. Where
// the server pre-allocates its memory, the KV cache speaks for it instead (kvExhaustedCause).
func memoryClimbCause(rd *Readings, in *Instance, th Thresholds) (candidate, bool) {
	if rd.Node == "" || finite(in.KVCache.Now) || !(in.GPUMemPeak >= th.GPUMemCrit) ||
		!(in.GPUMemPeak-in.GPUMem.Before >= climbLine) || standingMemory(*in, th) {
		return candidate{}, false
	}
	return candidate{id: CauseComputeMemory, instance: in.Name, ofGPU: true,
		score: (0.6 + 0.3*grade(in.GPUMemPeak, th.GPUMemCrit, 1)) * warmHalf(warming(rd, in)),
		summary: fmt.Sprintf("GPU memory on %s climbed past its %.0f %% critical line in the window: %.1f %% at its peak, %.1f %% on average, %.1f %% in the hour before; near the card's limit allocations fail or reallocate before the latency shows it",
			gpuText(rd, in.Node), th.GPUMemCrit*100, in.GPUMemPeak*100, in.GPUMem.Now*100, in.GPUMem.Before*100),
		evidence: []Evidence{ev("GPU memory used", "percentunit", in.GPUMem, fmt.Sprintf("peak %.1f %%; critical %.0f %%", in.GPUMemPeak*100, th.GPUMemCrit*100))}}, true
}

// kvExhaustedCause: the KV cache past its critical line at some point of the window while
// requests are preempted. That is the exhaustion itself, harmful before the latency shows it
// (each preempted request is recomputed or swapped out), whatever compute did; and an event the
// means of a window it began in barely move, so it is read from the window's highest points.
// The compute causes read the same cache with the compute rise; the surer of the two stands.
func kvExhaustedCause(in *Instance, th Thresholds) (candidate, bool) {
	if !kvExhausted(in, th) {
		return candidate{}, false
	}
	pre := in.PreemptionPeak - nanZero(in.Preemption.Before)
	return candidate{id: CauseKVCache, instance: in.Name, score: 0.6 + 0.3*grade(pre, preemptLine, 10*preemptLine),
		summary: fmt.Sprintf("the KV cache of %s reached %.1f %% in the window (%.1f %% on average, %.1f %% in the hour before) and up to %.1f %% of the requests were preempted (%.1f %% before): the cache is exhausted",
			in.Name, in.KVCachePeak*100, in.KVCache.Now*100, in.KVCache.Before*100, in.PreemptionPeak*100, in.Preemption.Before*100),
		evidence: []Evidence{ev("KV-cache usage", "percentunit", in.KVCache, fmt.Sprintf("peak %.1f %%; critical %.0f %%", in.KVCachePeak*100, th.KVCacheCrit*100)),
			ev("preemptions per request", "percentunit", in.Preemption, fmt.Sprintf("peak %.1f %%; line: +%.1f points", in.PreemptionPeak*100, preemptLine*100))}}, true
}

// kvExhausted: the instance's KV cache peaked past its critical line in the window while its
// preemptions per request rose by preemptLine or more.
func kvExhausted(in *Instance, th Thresholds) bool {
	return in != nil && in.KVCachePeak >= th.KVCacheCrit && in.PreemptionPeak-nanZero(in.Preemption.Before) >= preemptLine
}

// lostCapacityCause: an instance that stopped serving, whose traffic the model's other instances
// took over (they gained at least half of what it lost, each against its usual traffic). The
// model then runs on fewer instances: the queue on the others is the consequence, and
// restoring the instance (or adding one) the remedy, whether or not their latency has moved
// yet. Stopped serving is read from its load state (outOfService), or, where the server exports
// none, from its traffic: at least drainedLine of its usual traffic gone with no warm-up or
// restart seen (drained by the balancer, or down). An instance out of service whose traffic
// went nowhere (requests failing, or the demand gone with it) is a candidate only.
func lostCapacityCause(rd *Readings, in *Instance) (candidate, bool) {
	since, out := outOfService(rd, in)
	ref, _ := trafficRef(in)
	now := endTraffic(rd, in)
	lost := ref - now
	drained := !out && warmFraction(in.Warmup, rd.Window.Start, rd.Window.End) == 0 && lost >= drainedLine*ref
	if !(out || drained) || !(in.QPS.Before > 0) || !(lost > 0) {
		return candidate{}, false
	}
	others := othersTraffic(rd, in)
	moved := others.Now-others.Before >= 0.5*lost
	if drained && !moved {
		return candidate{}, false // less traffic on one instance, not moved: not capacity
	}
	how, note := fmt.Sprintf("%s has not been ready since %s with no restart seen: it stopped serving", in.Name, since.Format("15:04")), "not ready since "+since.Format("15:04")
	if drained {
		how, note = fmt.Sprintf("%s serves %.0f %% of its usual traffic with no warm-up or restart seen: it was drained or stopped serving", in.Name, 100*now/ref), "no load state read"
	}
	c := candidate{id: CauseQueue, instance: in.Name, score: 0.3,
		summary: fmt.Sprintf("%s %s (%s at the window's end vs %s usually)", how, subjectText(rd.Model, rd.Version), rateText(now), rateText(ref)),
		evidence: []Evidence{ev("requests per second on "+in.Name, "reqps", Pair{ref, now}, note+"; before = its usual traffic, now = at the window's end"),
			ev("requests per second on the model's other instances", "reqps", others, "before = their usual traffic")}}
	if !moved {
		c.summary += "; its traffic did not move to the model's other instances (requests failing, or the demand went with it)"
		return c, true
	}
	qr := 0.0
	for _, s := range rd.Subjects {
		if s.Instance != in.Name && selected(rd, s) {
			qr = math.Max(qr, nanZero(ratio(s.Queue.Now, s.Queue.Before)))
		}
	}
	c.score = 0.6 + 0.3*grade(qr, riseRatio, 4)
	c.summary += fmt.Sprintf("; the model's other instances took its traffic (%s vs %s usually): lost capacity, and their queue grows with it (up to %.2f× the hour before)",
		rateText(others.Now), rateText(others.Before), qr)
	return c, true
}

// drainedLine: an instance that lost this share of its usual traffic to the model's other
// instances lost capacity (a balancer's spread moves a few per cent, not a quarter).
const drainedLine = 0.25

// othersTraffic is the model's traffic on its instances other than in, at the window's end
// against their usual (each one's trafficRef: the 7-day same-time-of-day mean takes the daily
// curve out of the comparison): from the model's traffic over all its instances against the
// hour before where the question reads part of the model, else the sum of the others read.
func othersTraffic(rd *Readings, in *Instance) Pair {
	if rd.Instance != "" || rd.Node != "" {
		return Pair{rd.ModelQPS.Before - in.QPS.Before, rd.ModelQPS.Now - nanZero(in.QPS.Now)}
	}
	var p Pair
	for i := range rd.Instances {
		o := &rd.Instances[i]
		ref, _ := trafficRef(o)
		if now := endTraffic(rd, o); o.Name != in.Name && ref > 0 && finite(now) {
			p.Before += ref
			p.Now += now
		}
	}
	return p
}

// endTraffic is an instance's traffic at the window's end where the question reads the whole
// model (the last point), else its mean in the window, as othersTraffic compares it; an instance
// that answered nothing serves 0.
func endTraffic(rd *Readings, in *Instance) float64 {
	if rd.Instance == "" && rd.Node == "" && finite(in.QPSLast) {
		return math.Max(0, in.QPSLast)
	}
	return math.Max(0, nanZero(in.QPS.Now))
}

// warmHalf halves the scores of causes a warm-up can mimic while the instance warms up.
func warmHalf(warm bool) float64 {
	if warm {
		return 0.5
	}
	return 1
}

// trafficCause: traffic against the 7-day same-time-of-day mean (the hour before moves with
// the daily curve).
func trafficCause(rd *Readings, in *Instance, subj string, warm bool) (candidate, bool) {
	half := warmHalf(warm)
	ref, refName := trafficRef(in)
	if r := ratio(in.QPS.Now, ref); finite(r) {
		c := candidate{id: CauseTrafficSurge, instance: in.Name, score: 0.85 * grade(r, 1.25, 2) * half,
			summary: fmt.Sprintf("%s on %s receives %.2f× %s (%s vs %s)", subj, in.Name, r, refName, rateText(in.QPS.Now), rateText(ref)),
			evidence: []Evidence{ev("requests per second", "reqps", in.QPS, ""),
				ev("requests per second against the 7-day same-time-of-day mean", "reqps", Pair{in.QPSBaseline, in.QPS.Now}, "before = the mean of the previous 7 days at this time of day")}}
		if warm {
			c.evidence[0].Note = warmNote
		}
		// More traffic on one instance matched by less on the model's other instances is traffic
		// moved from instances that lost capacity, not a surge: the queue it builds is the
		// capacity's.
		if moved, others := movedTraffic(rd, in); r >= 1.25 && moved {
			c.score *= 0.3
			c.summary += fmt.Sprintf("; but the model's instances that lost traffic serve %s less than in the hour before: the instance took over their traffic (lost capacity)", rateText(-others))
			c.evidence = append(c.evidence, ev("the model's requests per second over all its instances", "reqps", modelTraffic(rd), ""))
		}
		return c, true
	}
	return candidate{}, false
}

// movedTraffic says whether the instance's extra traffic (against the hour before) is at least
// half matched by less traffic on some of the model's other instances (those that lost traffic:
// at most lostLine of what they served in the hour before; an instance that stopped serving
// counts as 0), and returns what they lost (negative). The
// others that gained too (they shared the lost instance's traffic) do not hide it. A question
// that sees only part of the model (an instance or a node) reads the others from the model's
// traffic per instance, else from its total; without either, it cannot tell.
func movedTraffic(rd *Readings, in *Instance) (bool, float64) {
	inc := in.QPS.Now - in.QPS.Before
	if !finite(inc) {
		return false, math.NaN()
	}
	others := instanceTraffic(rd)
	if others == nil {
		if !finite(rd.ModelQPS.Before) || !finite(rd.ModelQPS.Now) {
			return false, math.NaN()
		}
		lost := math.Min(0, (rd.ModelQPS.Now-rd.ModelQPS.Before)-inc)
		return inc > 0 && lost <= -0.5*inc, lost
	}
	lost, n := 0.0, 0
	for name, p := range others {
		if name == in.Name || !finite(p.Before) {
			continue
		}
		n++
		if lostTraffic(p) {
			lost += p.Now - p.Before
		}
	}
	if n == 0 {
		return false, math.NaN()
	}
	return inc > 0 && lost <= -0.5*inc, lost
}

// instanceTraffic is the model's traffic per instance against the hour before (an instance that
// stopped answering serves 0): from the instances read where the question reads the whole model,
// else from the model's traffic per instance; nil where only the model's total was read.
func instanceTraffic(rd *Readings) map[string]Pair {
	if rd.Instance != "" || rd.Node != "" {
		return rd.ModelByInstance
	}
	out := make(map[string]Pair, len(rd.Instances))
	for _, o := range rd.Instances {
		out[o.Name] = Pair{o.QPS.Before, nanZero(o.QPS.Now)}
	}
	return out
}

// lostTraffic says whether an instance serves at most lostLine of its traffic of the hour before.
func lostTraffic(p Pair) bool { return p.Now <= lostLine*p.Before }

// lostLine: an instance serving at most this share of its traffic of the hour before lost it
// (stopped, or lost part of its capacity); above it, the hour's daily curve moves every
// instance's traffic alike, and the fall of the model's other instances in an evening hour is
// not traffic moved to this one.
const lostLine = 2.0 / 3

// trafficRef is the instance's usual traffic and what it is: the 7-day same-time-of-day mean,
// else the hour before.
func trafficRef(in *Instance) (float64, string) {
	if in.QPSBaseline > 0 {
		return in.QPSBaseline, "its 7-day same-time-of-day mean"
	}
	return in.QPS.Before, "the hour before"
}

// trafficRatio is the instance's traffic against its usual traffic, as the traffic cause reads it.
func trafficRatio(in *Instance) float64 {
	ref, _ := trafficRef(in)
	return ratio(in.QPS.Now, ref)
}

// surgeLine and surgeFloor: a surge explains a queue by itself when the instance receives at
// least surgeLine × its traffic against one reference and surgeFloor × against the other. The
// 7-day same-time-of-day mean takes the daily curve out but not a weekday's difference from the
// weekend; the hour before takes the week out but not the daily curve: a step in the arrivals
// stands out against both. Half again the arrivals on a service sized for its usual load, with
// compute flat, pushes a batching server towards saturation, where the wait grows much faster
// than the load (1/(1 − utilisation)); below the line the queue is the batching's or the
// concurrency's (the queue cause) as far as the readings tell.
const (
	surgeLine  = 1.5
	surgeFloor = 1.25
)

// trafficExplainsQueue says whether the instance's traffic stepped past the surge line (above),
// not moved from the model's other instances: the surge, not the queue it builds, is then the
// cause. The ratio returned is against its usual traffic (trafficRatio).
func trafficExplainsQueue(rd *Readings, instance string) (float64, bool) {
	in := rd.instance(instance)
	if in == nil {
		return math.NaN(), false
	}
	r := trafficRatio(in)
	if moved, _ := movedTraffic(rd, in); moved || !surgeStep(r, ratio(in.QPS.Now, in.QPS.Before)) {
		return r, false
	}
	return r, true
}

// flatLine: traffic within it of both references stands where it stood (a balancer's spread and
// an hour of the daily curve move it a few per cent).
const flatLine = 1.1

// trafficFlat says whether the instance's traffic stands within flatLine of its usual level and
// of the hour before (both read; less traffic counts as flat).
func trafficFlat(in *Instance) bool {
	usual, hour := trafficRatio(in), ratio(in.QPS.Now, in.QPS.Before)
	return finite(usual) && finite(hour) && usual < flatLine && hour < flatLine
}

// surgeStep applies the surge line to the traffic against its usual level and against the hour
// before; with only one of them it must pass the line.
func surgeStep(usual, hour float64) bool {
	switch {
	case finite(usual) && finite(hour):
		return math.Max(usual, hour) >= surgeLine && math.Min(usual, hour) >= surgeFloor
	case finite(usual):
		return usual >= surgeLine
	}
	return hour >= surgeLine
}

// modelTraffic is the model's QPS over all its instances in each window.
func modelTraffic(rd *Readings) Pair {
	var p Pair
	for _, in := range rd.Instances {
		if finite(in.QPS.Before) {
			p.Before += in.QPS.Before
		}
		if finite(in.QPS.Now) {
			p.Now += in.QPS.Now
		}
	}
	return p
}

// gpuIdleCause: a GPU of the instance sat idle under traffic (the engine's condition held), or
// went idle in the window (gpuWentIdle).
func gpuIdleCause(rd *Readings, in *Instance, subj string) (candidate, bool) {
	if len(in.IdleGPUs) == 0 {
		return gpuWentIdle(rd, in, subj)
	}
	// GPU series carry no model: the idle condition holds for every model served on the
	// node. The model whose own requests show the GPU gone (answered by the fallback path,
	// a slower service) is the one on that GPU, and ranks above the others.
	fb := grade(in.Fallback.Now, 0.01, 0.10)
	slow := 0.0
	for _, s := range rd.Subjects {
		if s.Instance == in.Name && selected(rd, s) {
			svc := s.ServiceMean()
			slow = math.Max(slow, grade(ratio(svc.Now, svc.Before), 1.1, 1.5))
		}
	}
	summary := fmt.Sprintf("GPU %s of %s sat at zero utilisation while %s was served (%s) and its model was ready", strings.Join(in.IdleGPUs, ", "), in.Node, subj, rateText(in.QPS.Now))
	if fb > 0 {
		summary += fmt.Sprintf("; %.0f %% of its requests were answered by the fallback path", in.Fallback.Now*100)
	}
	utilWhat := "lowest GPU utilisation on the node"
	if rd.GPU != "" {
		utilWhat = fmt.Sprintf("lowest utilisation of GPU %s (the GPU asked about)", rd.GPU)
	}
	return candidate{id: CauseGPUIdle, instance: in.Name, score: 0.8 + 0.15*math.Max(fb, slow), ofGPU: fb == 0 && slow == 0,
		summary: summary,
		evidence: []Evidence{ev(utilWhat, "percentunit", in.GPUUtil, ""),
			ev("requests per second against the 7-day same-time-of-day mean", "reqps", Pair{in.QPSBaseline, in.QPS.Now}, ""),
			ev("share of requests answered by the fallback path", "percentunit", in.Fallback, "the model whose requests leave the GPU is the one on it")}}, true
}

// gpuWentIdle: the engine's idle-under-traffic condition holds after 10 minutes at zero (the
// alert's guard against brief idling); a triage asked in the first minutes sees the drop
// itself: no GPU of the node sat at zero in the hour before, one sits at zero at every point
// of the window, and the model is served there. It is the model's cause only where its own
// requests show the GPU gone (answered by the fallback path, or its service time 10 % above
// the hour before: gathered.own); it scores below the held condition.
func gpuWentIdle(rd *Readings, in *Instance, subj string) (candidate, bool) {
	if len(in.WentIdle) == 0 || !(in.QPS.Now > 0) {
		return candidate{}, false
	}
	fb := grade(in.Fallback.Now-math.Max(in.Fallback.Before, 0), 0.01, 0.10)
	slow := 0.0
	for _, s := range rd.Subjects {
		if s.Instance == in.Name && selected(rd, s) {
			svc := s.ServiceMean()
			slow = math.Max(slow, grade(ratio(svc.Now, svc.Before), 1.1, 1.5))
		}
	}
	summary := fmt.Sprintf("GPU %s of %s went to zero utilisation in the window after working through the hour before, while %s was served (%s); the idle-under-traffic condition holds after 10 minutes at zero",
		strings.Join(in.WentIdle, ", "), in.Node, subj, rateText(in.QPS.Now))
	if fb > 0 {
		summary += fmt.Sprintf("; %.0f %% of its requests were answered by the fallback path (%.0f %% before)", in.Fallback.Now*100, in.Fallback.Before*100)
	}
	return candidate{id: CauseGPUIdle, instance: in.Name, score: 0.55 + 0.25*math.Max(fb, slow), summary: summary, ofGPU: fb == 0 && slow == 0,
		evidence: []Evidence{ev("lowest GPU utilisation on the node", "percentunit", in.GPUUtil, "GPU "+strings.Join(in.WentIdle, ", ")+" at zero at every point of the window"),
			ev("share of requests answered by the fallback path", "percentunit", in.Fallback, notMeasuredNote(in.Fallback))}}, true
}

// hardwareEvent says whether the instance's GPUs had an XID, an uncorrected ECC error, a storm
// of corrected ones or hardware throttling in the window.
func hardwareEvent(in *Instance) bool {
	return in.XID.Now > 0 || in.ECCUncorrected.Now > 0 || correctedStorm(in) || len(in.Throttle) > 0
}

// correctedStormLine: corrected ECC errors in the window from which, with more of them than in
// the whole hour before, the GPU's memory started failing. Each correction costs nothing, and a
// GPU may count a few over its life; dozens at once, where there were none, is DCGM's "excessive
// single-bit errors" health warning, and they come with row remapping and page retirement.
const correctedStormLine = 10

// correctedStorm: the node's GPUs counted at least correctedStormLine corrected ECC errors in the
// window, more than in the reference window before it (an hour by default, four times the
// default window: a steady trickle counts more there). The counts are compared as they are, so
// a reference window set shorter than the window asked (--before) is a weaker test.
func correctedStorm(in *Instance) bool {
	return in.ECCCorrected.Now >= correctedStormLine && in.ECCCorrected.Now > nanZero(in.ECCCorrected.Before)
}

// hardwareCause: XID events, uncorrected ECC errors, a storm of corrected ones or hardware
// throttling on the node. A storm of corrected errors weighs least: it says the memory is
// failing, not that it failed.
func hardwareCause(rd *Readings, in *Instance) (candidate, bool) {
	if hardwareEvent(in) {
		xid, ecc, storm := in.XID.Now > 0, in.ECCUncorrected.Now > 0, correctedStorm(in)
		s := combine(0.6*b2f(xid), 0.5*b2f(ecc), 0.4*b2f(storm), 0.5*b2f(len(in.Throttle) > 0))
		var parts []string
		if xid {
			parts = append(parts, fmt.Sprintf("%.0f XID event(s)", in.XID.Now))
		}
		if ecc {
			parts = append(parts, fmt.Sprintf("%.0f uncorrected ECC error(s)", in.ECCUncorrected.Now))
		}
		if storm {
			parts = append(parts, fmt.Sprintf("%.0f corrected ECC errors (%.0f in the hour before: the memory is failing)", in.ECCCorrected.Now, nanZero(in.ECCCorrected.Before)))
		}
		if len(in.Throttle) > 0 {
			parts = append(parts, "clocks held down by "+strings.Join(in.Throttle, ", "))
		}
		return candidate{id: CauseHardware, instance: in.Name, score: s,
			summary: fmt.Sprintf("%s on %s in the window", strings.Join(parts, ", "), gpuText(rd, in.Node)),
			evidence: []Evidence{ev("XID events", "none", in.XID, notMeasuredNote(in.XID)), ev("uncorrected ECC errors", "none", in.ECCUncorrected, notMeasuredNote(in.ECCUncorrected)),
				ev("corrected ECC errors", "none", in.ECCCorrected, notMeasuredNote(in.ECCCorrected)),
				{What: "hardware clock-event reasons active", Unit: "none", Now: num(float64(len(in.Throttle))), Note: strings.Join(in.Throttle, ", ")}}}, true
	}
	return candidate{}, false
}

// frameworkCause: a cache finding less, preemptions, waiting sequences piling up.
func frameworkCause(in *Instance, th Thresholds, warm bool) (candidate, bool) {
	half := warmHalf(warm)
	drop := 1 - ratio(in.CacheHit.Now, in.CacheHit.Before)
	pre := in.Preemption.Now - in.Preemption.Before
	wait := math.NaN()
	if !in.WaitingIsQueue {
		wait = ratio(in.Waiting.Now, math.Max(in.Waiting.Before, 0.5))
	}
	if s := combine(0.7*grade(drop, 1-th.CacheDrop-0.05, 0.5), 0.6*grade(pre, 0.005, 0.05), 0.5*grade(wait, 2, 6)) * half; s > 0 {
		var parts []string
		if finite(drop) && drop > 0 {
			parts = append(parts, fmt.Sprintf("cache hit rate %.0f %% vs %.0f %%", in.CacheHit.Now*100, in.CacheHit.Before*100))
		}
		if finite(pre) && pre > 0 {
			parts = append(parts, fmt.Sprintf("preemptions %.1f %% of requests", in.Preemption.Now*100))
		}
		if finite(wait) && wait > 1 {
			parts = append(parts, fmt.Sprintf("waiting requests ×%.1f", wait))
		}
		c := candidate{id: CauseFramework, instance: in.Name, score: s,
			summary: fmt.Sprintf("%s on %s", strings.Join(parts, ", "), in.Name),
			evidence: []Evidence{ev("cache hit rate", "percentunit", in.CacheHit, ""), ev("preemptions per request", "percentunit", in.Preemption, ""),
				ev("waiting requests", "none", in.Waiting, "")}}
		if warm {
			c.evidence[0].Note = warmNote + " (a restarted engine's caches are cold)"
		}
		return c, true
	}
	return candidate{}, false
}

// inputShiftCause: inputs longer than in the hour before.
func inputShiftCause(in *Instance) (candidate, bool) {
	if r := ratio(in.InputMean.Now, in.InputMean.Before); finite(r) {
		return candidate{id: CauseInputShift, instance: in.Name, score: 0.8 * grade(r, 1.3, 3),
			summary:  fmt.Sprintf("inputs on %s are %.2f× as long as in the hour before (mean %.0f vs %.0f)", in.Name, r, in.InputMean.Now, in.InputMean.Before),
			evidence: []Evidence{ev("mean input length", "none", in.InputMean, "")}}, true
	}
	return candidate{}, false
}

// warmupCause: the instance warmed up in the window.
func warmupCause(rd *Readings, in *Instance) (candidate, bool) {
	if f := warmFraction(in.Warmup, rd.Window.Start, rd.Window.End); f > 0 {
		var reasons []string
		for _, w := range in.Warmup {
			if w.End.After(rd.Window.Start) && w.Start.Before(rd.Window.End) {
				reasons = appendUnique(reasons, w.Reason)
			}
		}
		winSec := rd.Window.End.Sub(rd.Window.Start).Seconds()
		befSec := rd.Before.End.Sub(rd.Before.Start).Seconds()
		c := candidate{id: CauseWarmup, instance: in.Name, score: 0.6 + 0.35*grade(f, 0, 0.5),
			summary: fmt.Sprintf("%s warmed up for %.0f %% of the window (%s): its samples were dropped by the warm-up filter, recorded and not alerted on",
				in.Name, f*100, strings.Join(reasons, "; ")),
			evidence: []Evidence{ev("seconds of warm-up", "s", Pair{warmFraction(in.Warmup, rd.Before.Start, rd.Before.End) * befSec, f * winSec}, strings.Join(reasons, "; "))}}
		for _, s := range rd.Subjects {
			if s.Instance == in.Name && selected(rd, s) && finite(s.P95Raw.Now) {
				c.evidence = append(c.evidence, ev("P95 without the warm-up filter ("+versionText(s.Version)+")", "s", s.P95Raw, "what the warm-up filter kept out of alerts"))
			}
		}
		// A deploy restarts the model: its warm-up is expected, not a problem (whether the new
		// version is slower is the regression's question).
		if v := deployWarmup(rd, in); v != "" {
			c.score = deployWarmupScore
			c.summary += fmt.Sprintf("; it is the warm-up of the deploy of %s: expected, nothing to act on", v)
		} else if since, ok := outOfService(rd, in); ok {
			c.score = math.Min(c.score, 0.3)
			c.summary = fmt.Sprintf("%s has not been ready since %s, with no restart, reset or reappearance seen: out of service (its traffic goes to the model's other instances: lost capacity) or a reload that has not ended, not a warm-up to diagnose",
				in.Name, since.Format("15:04"))
		}
		return c, true
	}
	return candidate{}, false
}

// deployWarmupScore is a deploy's warm-up: listed, under every line.
const deployWarmupScore = 0.15

// notReadyOnly is the warm-up reason of a load state that says not ready, and nothing else.
var notReadyOnly = derive.WarmNotReady.String()

// outOfService says whether the instance's warm-up in the window is only its load state saying
// not ready, up to the window's end: an instance that stopped serving, or one in a reload that
// has not ended, not one seen coming up (a restart, a counter reset or a reappearance would say
// so). It returns when the not-ready stretch began.
func outOfService(rd *Readings, in *Instance) (time.Time, bool) {
	var since time.Time
	reachesEnd := false
	for _, w := range in.Warmup {
		if !w.End.After(rd.Window.Start) || !w.Start.Before(rd.Window.End) {
			continue
		}
		if w.Reason != notReadyOnly {
			return time.Time{}, false
		}
		if since.IsZero() || w.Start.Before(since) {
			since = w.Start
		}
		reachesEnd = reachesEnd || !w.End.Before(rd.Window.End.Add(-time.Minute))
	}
	return since, reachesEnd
}

func versionText(v string) string {
	if v == "" {
		return "all versions"
	}
	return v
}

// subjectCauses score the causes read per version on an instance: queue, compute (memory, KV
// cache, a new version, or compute alone), network. raw is the subject as read, s the subject
// as compared (a new version's before is the versions' it replaced).
// lead is the subject's leading segment (decompose), "" where none leads.
func subjectCauses(rd *Readings, raw, s Subject, in *Instance, th Thresholds, lead string) []candidate {
	var out []candidate
	// The service types the subject is read from drop the warm-up's samples (the engine's
	// warm-up filter): a change they still show happened outside the warm-up, so these causes
	// are not weighed down on a warming instance (a deploy's restart must not hide its version).
	half := 1.0
	who := subjectText(rd.Model, s.Version) + " on " + s.Instance
	svc := s.ServiceMean()

	if c, ok := queueCause(s, in, th, half, who); ok {
		out = append(out, c)
	}
	out = append(out, computeCauses(rd, s, in, th, half, who, lead)...)

	// Network: the gateway's time beyond the service's own. Three signs: how much it rose, its
	// share of the time, and how many times its own reference it is while the service's own time
	// holds (the brief's signature; a gateway that pools the instances dilutes the absolute rise
	// by the faulty instance's share of the traffic, and the relative one less).
	rise := s.Network.Now - s.Network.Before
	nShare := ratio(s.Network.Now, s.Network.Now+svc.Now)
	svcSteady := ratio(svc.Now, svc.Before) < riseRatio
	nr := ratio(s.Network.Now, s.Network.Before)
	floor := s.floor()
	if sc := 0.4*grade(rise, floor, 0.05) + 0.3*grade(nShare, 0.3, 0.7)*b2f(rise > 0) +
		0.3*grade(nr, riseRatio, 3)*b2f(rise >= floor && svcSteady); sc > 0 {
		if !svcSteady {
			sc *= 0.7 // the service slowed down too: the network is not alone
		}
		inst, whoN := s.Instance, who
		if rd.NetworkPerModel {
			inst, whoN = "", subjectText(rd.Model, s.Version)+" (every instance: the gateway does not tell them apart)"
		}
		out = append(out, candidate{id: CauseNetwork, instance: inst, version: s.Version, score: sc,
			summary: fmt.Sprintf("the gateway waits %s beyond the service's own %s for %s (%s in the hour before): the time is spent on the network path, not in the model",
				msText(s.Network.Now), msText(svc.Now), whoN, msText(s.Network.Before)),
			evidence: []Evidence{ev("network / gateway segment (gateway upstream − service time)", "s", s.Network, ""),
				ev("service time (queue + compute)", "s", svc, ""),
				ev("end-to-end jitter (P99/P50) of the service", "none", s.Jitter, "the service's own latency distribution")}})
	}

	// Regression: a version deployed on this instance, slower than the one it replaced.
	if c, ok := regressionCause(rd, raw, th, who); ok {
		out = append(out, c)
	}
	return out
}

// queueCause: a rising queue over a stable compute, or a queue holding most of the time. Where
// the server says why requests wait (vLLM's waiting by reason), the summary says whether the
// backlog is load (waiting for capacity) or blocked requests (deferred).
func queueCause(s Subject, in *Instance, th Thresholds, half float64, who string) (candidate, bool) {
	svc := s.ServiceMean()
	qr := ratio(s.Queue.Now, s.Queue.Before)
	qRising := qr >= riseRatio && s.Queue.Now-s.Queue.Before >= s.floor()
	share := Pair{ratio(s.Queue.Before, svc.Before), ratio(s.Queue.Now, svc.Now)}
	sc := (0.55*grade(qr, riseRatio, 5)*b2f(qRising) + 0.4*grade(share.Now, 0.45, th.QueueShare+0.15)) * half
	if !(sc > 0) {
		return candidate{}, false
	}
	e := []Evidence{ev("queue share of service time", "percentunit", share, fmt.Sprintf("alert line %.0f %%", th.QueueShare*100)),
		ev("mean queue time", "s", s.Queue, ""), ev("mean compute time", "s", s.Compute, "")}
	why := ""
	if in != nil {
		e = append(e, ev("queue depth", "none", in.QueueDepth, ""))
		if w, reason := backlogReason(in); reason != "" {
			e = append(e, ev("waiting requests deferred (not waiting for capacity)", "percentunit", w, reason))
			why = "; " + reason
		}
	}
	return candidate{id: CauseQueue, instance: s.Instance, version: s.Version, score: sc, queueRatio: qr,
		summary: fmt.Sprintf("queue time is %.0f %% of the service time on %s (%s vs %s in the hour before) while compute stays at %s%s",
			share.Now*100, who, msText(s.Queue.Now), msText(s.Queue.Before), msText(s.Compute.Now), why),
		evidence: e}, true
}

// deferredLine: from this share of the waiting requests deferred on, the backlog is blocked
// requests rather than load.
const deferredLine = 0.5

// backlogReason is the deferred share of the waiting requests and what it says, "" where the
// server gives no reason for waiting.
func backlogReason(in *Instance) (Pair, string) {
	share := Pair{ratio(in.WaitingDeferred.Before, in.Waiting.Before), ratio(in.WaitingDeferred.Now, in.Waiting.Now)}
	if !finite(in.WaitingDeferred.Now) || !finite(share.Now) {
		return share, ""
	}
	if share.Now >= deferredLine {
		return share, fmt.Sprintf("%.0f %% of the waiting requests are deferred (blocked, e.g. on a LoRA adapter slot or a KV transfer), not waiting for capacity: find what blocks them before adding replicas", share.Now*100)
	}
	return share, fmt.Sprintf("the backlog is load: %.0f %% of the waiting requests wait for capacity, %.0f %% are deferred", (1-share.Now)*100, share.Now*100)
}

// computeCauses: compute rising, explained by memory pressure (GPU memory, or the KV cache
// where the server reports it), by KV-cache exhaustion (the cache near full with requests
// preempted), or by none of the signals measured here (compute). Where the server times
// compute's phases, the summary names the phase that grew. A memory cause needs memory past
// its warning line: without it, a compute rise is "compute", not memory.
func computeCauses(rd *Readings, s Subject, in *Instance, th Thresholds, half float64, who, lead string) []candidate {
	svc := s.ServiceMean()
	cr := ratio(s.Compute.Now, s.Compute.Before)
	cRising := cr >= riseRatio && s.Compute.Now-s.Compute.Before >= s.floor()
	mp := memoryPressure(rd, in, th)
	memW := 0.5
	if cRising {
		memW = 1
	}
	memG := grade(mp.value.Now, mp.warn, mp.crit)
	phase := phaseGrowth(s)
	computeScore := (0.5 + 0.2*grade(cr, riseRatio, 4)) * half
	sc := (0.5*grade(cr, riseRatio, 4)*b2f(cRising) + 0.45*memG*memW) * half
	if cRising && in != nil && !standingMemory(*in, th) {
		// A compute rise explained by memory that rose past its line is at least as sure as the
		// same rise unexplained ("compute"); memory standing at its level explains nothing.
		sc = math.Max(sc, computeScore+0.1*memG)
	}
	var out []candidate
	if memG > 0 && sc > 0 {
		c := candidate{id: CauseComputeMemory, instance: s.Instance, version: s.Version, score: sc,
			summary: fmt.Sprintf("compute time of %s is %s (%.1f× the hour before) with %s", who, msText(s.Compute.Now), cr, mp.text),
			evidence: []Evidence{ev("mean compute time", "s", s.Compute, ""),
				ev(mp.what, "percentunit", mp.value, mp.note),
				ev("compute share of service time", "percentunit", Pair{ratio(s.Compute.Before, svc.Before), ratio(s.Compute.Now, svc.Now)}, "")}}
		if in != nil && finite(in.KVCache.Now) {
			// The KV cache near full: with requests preempted it is KV-cache exhaustion.
			pre := in.Preemption.Now - in.Preemption.Before
			if preG := grade(pre, preemptLine, 10*preemptLine); preG > 0 {
				c.id = CauseKVCache
				c.score = combine(sc, 0.3*preG*memW*half)
				if x, ok := kvExhaustedCause(in, th); ok {
					// The exhaustion itself, read with the compute rise it came with.
					c.score = math.Max(c.score, x.score)
				}
				c.summary = fmt.Sprintf("the KV cache of %s is near full (%.1f %%, %.1f %% in the hour before) and %.1f %% of the requests are preempted (%.1f %% before): compute time of %s is %s (%.1f× the hour before)",
					in.Name, in.KVCache.Now*100, in.KVCache.Before*100, in.Preemption.Now*100, in.Preemption.Before*100, who, msText(s.Compute.Now), cr)
				c.evidence = append(c.evidence, ev("preemptions per request", "percentunit", in.Preemption, fmt.Sprintf("line: +%.1f points", preemptLine*100)))
			} else {
				// A pre-allocated KV cache fills with the sequences in flight: when compute slows,
				// each request holds its blocks longer and usage climbs. Without preemptions the
				// full cache slows nothing by itself, so it does not explain the compute rise.
				c.score = math.Min(c.score, besideComputeCap)
				c.summary += "; no request is preempted, so the full KV cache may as well follow the slower requests (each holds its blocks longer) as cause them"
			}
		} else if in != nil && standingMemory(*in, th) {
			// Memory standing where it stood before the change (a server that sizes its cache to
			// the card at start) explains no change: the rise alone must not make it a diagnosis.
			c.score = math.Min(c.score, besideComputeCap)
			c.summary += "; the memory stood there in the hour before too, so it does not explain the rise"
		}
		if phase != "" {
			c.summary += "; " + phase
			c.evidence = append(c.evidence, ev("mean prefill time", "s", s.Prefill, ""), ev("mean decode time", "s", s.Decode, ""))
		}
		out = append(out, c)
	}
	// Compute that leads the latency change is the segment's finding even under its own 1.5×
	// line: the change the engineer was paged for is in compute. Not where the instance's GPUs
	// had a hardware event in the window: that is a measured explanation (hardwareCause).
	if (cRising || (cr > 1 && lead == SegCompute)) && (in == nil || !hardwareEvent(in)) {
		c := candidate{id: CauseCompute, instance: s.Instance, version: s.Version, score: computeScore,
			summary: fmt.Sprintf("compute time of %s is %s (%.1f× the hour before, %s); the cause is not among the signals measured here (%s)",
				who, msText(s.Compute.Now), cr, msText(s.Compute.Before), flatSignals(rd, in, mp)),
			evidence: []Evidence{ev("mean compute time", "s", s.Compute, ""),
				ev("compute share of service time", "percentunit", Pair{ratio(s.Compute.Before, svc.Before), ratio(s.Compute.Now, svc.Now)}, ""),
				ev(mp.what, "percentunit", mp.value, mp.note+notMeasuredNote(mp.value))}}
		if phase != "" {
			c.summary += "; " + phase
			c.evidence = append(c.evidence, ev("mean prefill time", "s", s.Prefill, ""), ev("mean decode time", "s", s.Decode, ""))
		}
		out = append(out, c)
	}
	return out
}

// preemptLine: preemptions per request rising by this much (0.2 points) is past noise.
const preemptLine = 0.002

// besideComputeCap keeps a memory reading that does not explain a compute rise under the
// diagnosis line (a KV cache near full without preemptions, GPU memory standing where it stood):
// a candidate beside "compute", not its explanation.
const besideComputeCap = 0.45

// flatSignals says which compute signals were read and stayed in line, and which were not read.
func flatSignals(rd *Readings, in *Instance, mp pressure) string {
	var read, not []string
	add := func(what string, measured bool) {
		if measured {
			read = append(read, what)
		} else {
			not = append(not, what)
		}
	}
	mem := "memory"
	switch {
	case finite(mp.value.Now) && mp.value.Now > mp.warn && mp.value.Before > mp.warn:
		mem = fmt.Sprintf("memory (%.0f %%, past its warning line but where it stood before)", mp.value.Now*100)
	case finite(mp.value.Now) && mp.value.Now > mp.warn:
		// Risen past the line without explaining the rise (a pre-allocated KV cache filling
		// with the slower requests).
		mem = fmt.Sprintf("memory (%.0f %%, %.0f %% in the hour before, past its warning line without explaining the rise)", mp.value.Now*100, mp.value.Before*100)
	}
	add(mem, finite(mp.value.Now))
	if in != nil {
		add("input length", finite(in.InputMean.Now))
		add("XID/ECC", finite(in.XID.Now) || finite(in.ECCUncorrected.Now))
		add("clock throttling", in.ThrottleMeasured)
	}
	add("version changes", rd.DeploysRead)
	out := "in line: " + strings.Join(read, ", ")
	if len(read) == 0 {
		out = "nothing else measured"
	}
	if len(not) > 0 {
		out += "; not measured: " + strings.Join(not, ", ")
	}
	return out
}

// pressure is the memory-pressure signal of an instance and its lines.
type pressure struct {
	value            Pair
	warn, crit       float64
	what, note, text string
}

// memoryPressure is the instance's memory-pressure signal: the model's KV-cache usage where the
// server reports it (vLLM pre-allocates 90 % of the GPU's memory by default, so GPU memory used
// is always high there and says nothing), else GPU memory used.
func memoryPressure(rd *Readings, in *Instance, th Thresholds) pressure {
	if in == nil {
		return pressure{value: nanPair(), warn: th.GPUMemWarn, crit: th.GPUMemCrit, what: "GPU memory used", text: "no GPU memory reading"}
	}
	if finite(in.KVCache.Now) {
		return pressure{value: in.KVCache, warn: th.KVCacheWarn, crit: th.KVCacheCrit,
			what: "KV-cache usage (the server's memory pressure; its GPU memory is pre-allocated)",
			note: fmt.Sprintf("warning %.0f %%, critical %.0f %%; GPU memory used %.1f %% (pre-allocated, not judged)", th.KVCacheWarn*100, th.KVCacheCrit*100, in.GPUMem.Now*100),
			text: fmt.Sprintf("the KV cache of %s at %.1f %% (%.1f %% in the hour before)", in.Name, in.KVCache.Now*100, in.KVCache.Before*100)}
	}
	what := "GPU memory used (fullest GPU of the node)"
	if rd.GPU != "" {
		what = fmt.Sprintf("GPU memory used (GPU %s, the GPU asked about)", rd.GPU)
	}
	return pressure{value: in.GPUMem, warn: th.GPUMemWarn, crit: th.GPUMemCrit, what: what,
		note: fmt.Sprintf("warning %.0f %%, critical %.0f %%; peak %.1f %%", th.GPUMemWarn*100, th.GPUMemCrit*100, in.GPUMemPeak*100),
		text: fmt.Sprintf("GPU memory on %s at %.1f %% (peak %.1f %%)", gpuText(rd, in.Node), in.GPUMem.Now*100, in.GPUMemPeak*100)}
}

// phasesAlike is how close the two phases' ratios are when both grew "alike".
const phasesAlike = 1.2

// phaseGrowth names the compute phase that grew (the one holding most of compute's increase),
// "" where the server does not time the phases.
func phaseGrowth(s Subject) string {
	dp, dd := s.Prefill.Now-s.Prefill.Before, s.Decode.Now-s.Decode.Before
	if !finite(dp) || !finite(dd) {
		return ""
	}
	rp, rdec := ratio(s.Prefill.Now, s.Prefill.Before), ratio(s.Decode.Now, s.Decode.Before)
	switch {
	case rp >= totalRise && rdec >= totalRise && math.Max(rp, rdec) < phasesAlike*math.Min(rp, rdec):
		// Decode being the longer phase, it holds most of a rise both share: the ratios tell.
		return fmt.Sprintf("prefill (×%.1f) and decode (×%.1f) grew alike: every forward pass is slower (the GPU, its clocks, a co-tenant), not one phase", rp, rdec)
	case dd > 0 && dd >= 2*math.Max(dp, 0):
		return fmt.Sprintf("decode grew (%s vs %s, ×%.1f) while prefill stays at %s (×%.2f): token generation is slower, look at memory pressure, preemptions and batch size",
			msText(s.Decode.Now), msText(s.Decode.Before), rdec, msText(s.Prefill.Now), rp)
	case dp > 0 && dp >= 2*math.Max(dd, 0):
		return fmt.Sprintf("prefill grew (%s vs %s, ×%.1f) while decode stays at %s (×%.2f): prompts take longer to process, look at input lengths and the prefix cache",
			msText(s.Prefill.Now), msText(s.Prefill.Before), rp, msText(s.Decode.Now), rdec)
	case dp > 0 && dd > 0:
		return fmt.Sprintf("prefill (×%.1f) and decode (×%.1f) both grew", rp, rdec)
	}
	return ""
}

// symptomsOf lists what is out of line whatever the cause (the verdict's "something is wrong").
// The instances in unfelt (a model's question: GPU memory the model's own requests there show no
// sign of, unfeltMemory) give no memory symptom.
func symptomsOf(rd *Readings, th Thresholds, unfelt []*Instance) []string {
	var out []string
	add := func(s string) {
		for _, x := range out {
			if x == s {
				return
			}
		}
		out = append(out, s)
	}
	for _, raw := range rd.Subjects {
		if !selected(rd, raw) {
			continue
		}
		s, _ := effective(rd, raw) // a new version against the one it replaced
		who := s.Instance
		if s.Version != "" {
			who = s.Version + " on " + s.Instance
		}
		if s.BaselineRatio >= th.LatencyWarn {
			add(fmt.Sprintf("P95 %.1f× its baseline (%s)", s.BaselineRatio, who))
		} else if r := ratio(s.P95.Now, s.P95.Before); r >= th.LatencyWarn {
			add(fmt.Sprintf("P95 %.1f× the hour before (%s)", r, who))
		}
		if s.Jitter.Now > th.Jitter && !(s.Jitter.Before > th.Jitter && s.Jitter.Now < riseRatio*s.Jitter.Before) {
			// A spread that stood past the line before (a generation server's P99/P50 follows its
			// output lengths) is the service's shape, not a sign of the change.
			add(fmt.Sprintf("jitter %.1f (%s)", s.Jitter.Now, who))
		}
		if s.ErrorRatio.Now > th.ErrorRatio {
			add(fmt.Sprintf("%.1f %% errors (%s)", s.ErrorRatio.Now*100, who))
		}
	}
	for _, in := range rd.Instances {
		if slices.ContainsFunc(unfelt, func(u *Instance) bool { return u.Name == in.Name }) {
			continue
		}
		if finite(in.KVCache.Now) {
			if in.KVCache.Now > th.KVCacheWarn {
				add(fmt.Sprintf("KV cache %.0f %% on %s", in.KVCache.Now*100, in.Name))
			} else if in.KVCachePeak > th.KVCacheCrit {
				// A cache that filled in the window's last minutes barely moves its mean.
				add(fmt.Sprintf("KV cache peaked at %.0f %% on %s (%.0f %% on average in the window)", in.KVCachePeak*100, in.Name, in.KVCache.Now*100))
			}
		} else if in.GPUMem.Now > th.GPUMemWarn && !standingMemory(in, th) {
			add(fmt.Sprintf("GPU memory %.0f %% on %s", in.GPUMem.Now*100, in.Node))
		} else if in.GPUMemPeak > th.GPUMemCrit {
			// A climb past the critical line in the window's last minutes barely moves its mean.
			add(fmt.Sprintf("GPU memory peaked at %.0f %% on %s (%.0f %% on average in the window)", in.GPUMemPeak*100, in.Node, in.GPUMem.Now*100))
		}
	}
	return out
}

// standingMemory: GPU memory above the warning line now that already stood there, at about the
// same level, in the hour before (a server that sizes its KV cache to the card at start sits
// there whatever the load). It is the node's standing state, said in a note, not a sign of the
// change asked about; memory that rose past the line, or past the critical one, still is.
func standingMemory(in Instance, th Thresholds) bool {
	return in.GPUMem.Before > th.GPUMemWarn && in.GPUMem.Now <= th.GPUMemCrit && in.GPUMem.Now-in.GPUMem.Before < 0.02
}

// memoryPast says whether the node's GPU memory is past its lines as a symptom counts it: risen
// past the warning line (not standing there), or peaked past the critical one. The KV cache,
// where the server reports it, is the model's own and is read instead.
func memoryPast(in Instance, th Thresholds) bool {
	return !finite(in.KVCache.Now) && (in.GPUMem.Now > th.GPUMemWarn && !standingMemory(in, th) || in.GPUMemPeak > th.GPUMemCrit)
}

// unfeltMemory: the node's GPU memory is past its lines while the model's own requests on the
// instance show no sign of anything (ownSign: no slowdown, no fallback, no errors) and the
// instance did not warm up in the window. GPU series carry no model, so the memory may be another
// model's on the same node, and the GPU memory alert covers the node: for the model it is a
// note, as a co-tenant's idle GPU or a hardware event its requests do not feel is, not a sign
// that the model is unwell. A warming instance's requests are dropped by the warm-up filter, so
// they cannot show it: an upgrade that needs more memory climbs while it warms up. With a GPU
// named, that GPU is the subject, and its memory counts in full.
func unfeltMemory(rd *Readings, in Instance, th Thresholds) bool {
	return rd.GPU == "" && memoryPast(in, th) && !ownSign(rd, &in) && warmFraction(in.Warmup, rd.Window.Start, rd.Window.End) == 0
}

// unfeltIn lists, in a model's question, the instances whose GPU memory is past its lines
// unfelt (unfeltMemory); a node question asks about the memory itself, so none there.
func unfeltIn(q question, rd *Readings, th Thresholds) []*Instance {
	if q.byNode {
		return nil
	}
	var out []*Instance
	for i := range rd.Instances {
		if in := &rd.Instances[i]; unfeltMemory(rd, *in, th) {
			out = append(out, in)
		}
	}
	return out
}

// unfeltNote says whose GPU memory is past its lines unfelt (unfeltMemory).
func unfeltNote(rd *Readings, in *Instance) string {
	return fmt.Sprintf("GPU memory on %s is at %.0f %% (peak %.0f %%, %.0f %% in the hour before), but %s's own requests on %s show no sign of it (no slowdown, no fallback, no errors): GPU series carry no model, so it may be another model's; the GPU memory alert covers the node",
		in.Node, in.GPUMem.Now*100, in.GPUMemPeak*100, in.GPUMem.Before*100, rd.Model, in.Name)
}

// standingNotes say which nodes' GPU memory stood above the warning line before the window.
func standingNotes(rd *Readings, th Thresholds) []string {
	var out []string
	for _, in := range rd.Instances {
		if !finite(in.KVCache.Now) && in.GPUMem.Now > th.GPUMemWarn && standingMemory(in, th) {
			out = append(out, fmt.Sprintf("GPU memory on %s stood above the %.0f %% warning line before the window too (%.1f %% in the hour before, %.1f %% now): the node's standing level, not a sign of this change (the GPU memory alert says it on its own)",
				in.Node, th.GPUMemWarn*100, in.GPUMem.Before*100, in.GPUMem.Now*100))
		}
	}
	return out
}

// steps write the five steps of the triage path with what each found, over every model read.
func steps(rds []*Readings, causes []Cause, th Thresholds) []Step {
	has := func(ids ...string) []string {
		out := []string{}
		for _, c := range causes {
			for _, id := range ids {
				if c.ID == id && c.Score >= th.AnomalyLow {
					out = append(out, id)
				}
			}
		}
		return out
	}
	return []Step{
		{Step: 1, Title: "Which model and version jumped; did QPS change?", Minutes: "0–2", Finding: stepJump(rds),
			Causes: has(CauseTrafficSurge, CauseModelRegression, CauseNetwork, CauseWarmup)},
		{Step: 2, Title: "GPU utilisation and memory (swap, temperature)", Minutes: "2–5",
			Finding: perModel(rds, func(rd *Readings) string { return stepGPU(rd, th) }),
			Causes:  has(CauseComputeMemory, CauseGPUIdle, CauseCompute)},
		{Step: 3, Title: "Framework: cache hit rate, queue depth, running sequences, batching", Minutes: "5–8", Finding: perModel(rds, stepFramework),
			Causes: has(CauseQueue, CauseFramework, CauseKVCache)},
		{Step: 4, Title: "Input-length distribution shift", Minutes: "8–12", Finding: perModel(rds, stepInput),
			Causes: has(CauseInputShift)},
		{Step: 5, Title: "Hardware: ECC, XID, clock throttling", Minutes: "12–15", Finding: perModel(rds, stepHardware),
			Causes: has(CauseHardware)},
	}
}

// perModel is a step's finding over the models read: the one finding where they agree (the
// node's GPUs are the same for every model), else each model's, named.
func perModel(rds []*Readings, f func(*Readings) string) string {
	if len(rds) == 0 {
		return f(&Readings{})
	}
	var parts []string
	same := true
	for _, rd := range rds {
		parts = append(parts, f(rd))
		same = same && parts[len(parts)-1] == parts[0]
	}
	if len(rds) == 1 || same {
		return parts[0]
	}
	for i, rd := range rds {
		parts[i] = rd.Model + " — " + parts[i]
	}
	return strings.Join(parts, "; ")
}

// gpuText names the GPUs a reading is about: the GPU asked about, or the node's.
func gpuText(rd *Readings, node string) string {
	if rd.GPU != "" {
		return fmt.Sprintf("GPU %s of %s", rd.GPU, node)
	}
	return node
}

func stepJump(rds []*Readings) string {
	var worst *Subject
	var worstRd *Readings
	worstR := math.Inf(-1)
	for _, rd := range rds {
		for i, s := range rd.Subjects {
			if !selected(rd, s) {
				continue
			}
			r := s.BaselineRatio
			if !finite(r) {
				r = ratio(s.P95.Now, s.P95.Before)
			}
			if finite(r) && r > worstR {
				worst, worstRd, worstR = &rd.Subjects[i], rd, r
			}
		}
	}
	if worst == nil {
		var names []string
		for _, rd := range rds {
			names = append(names, subjectText(rd.Model, rd.Version))
		}
		if len(names) == 0 {
			return "no model was served in the window"
		}
		return "no latency was measured for " + strings.Join(names, ", ") + " in the window"
	}
	who := subjectText(worstRd.Model, worst.Version) + " on " + worst.Instance
	base := "no 7-day baseline"
	if finite(worst.BaselineRatio) {
		base = fmt.Sprintf("%.2f× its 7-day same-time-of-day baseline", worst.BaselineRatio)
	}
	f := fmt.Sprintf("largest change: %s, P95 %s vs %s in the hour before (%s); QPS %s vs %s; split now queue %s, compute %s, network %s",
		who, msText(worst.P95.Now), msText(worst.P95.Before), base, rateText(worst.QPS.Now), rateText(worst.QPS.Before),
		msText(worst.Queue.Now), msText(worst.Compute.Now), msText(worst.Network.Now))
	return f
}

// pctOr writes a ratio as a percentage with the given decimals, or "not measured".
func pctOr(x float64, decimals int) string {
	if !finite(x) {
		return "not measured"
	}
	return strconv.FormatFloat(x*100, 'f', decimals, 64) + " %"
}

func stepGPU(rd *Readings, th Thresholds) string {
	var parts []string
	for _, in := range rd.Instances {
		if !finite(in.GPUMem.Now) && !finite(in.GPUUtil.Now) {
			continue
		}
		read := fmt.Sprintf("%s memory (%s before), lowest utilisation %s", pctOr(in.GPUMem.Now, 1), pctOr(in.GPUMem.Before, 1), pctOr(in.GPUUtil.Now, 0))
		var p string
		if rd.GPU != "" {
			p = fmt.Sprintf("GPU %s of %s (the GPU asked about; the other GPUs are not read): %s", rd.GPU, in.Node, read)
		} else {
			p = fmt.Sprintf("%s: fullest GPU %s", in.Node, read)
		}
		switch {
		case finite(in.KVCache.Now):
			p += fmt.Sprintf(" (pre-allocated by the server, not judged); KV cache %.1f %% (%.1f %% before)", in.KVCache.Now*100, in.KVCache.Before*100)
			if in.KVCache.Now > th.KVCacheCrit {
				p += " — above the critical line"
			} else if in.KVCache.Now > th.KVCacheWarn {
				p += " — above the warning line"
			}
		case in.GPUMem.Now > th.GPUMemCrit:
			p += " — above the critical line"
		case in.GPUMem.Now > th.GPUMemWarn:
			p += " — above the warning line"
		}
		if len(in.IdleGPUs) > 0 {
			p += "; idle under traffic: GPU " + strings.Join(in.IdleGPUs, ", ")
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		if rd.GPU != "" {
			return fmt.Sprintf("no readings of GPU %s of %s", rd.GPU, rd.Node)
		}
		return "no GPU readings for these nodes"
	}
	return strings.Join(parts, "; ")
}

func stepFramework(rd *Readings) string {
	var parts []string
	for _, in := range rd.Instances {
		var p []string
		if finite(in.CacheHit.Now) {
			p = append(p, fmt.Sprintf("cache hit rate %.1f %% (%.1f %% before)", in.CacheHit.Now*100, in.CacheHit.Before*100))
		}
		if finite(in.QueueDepth.Now) {
			p = append(p, fmt.Sprintf("queue depth %.1f (%.1f before)", in.QueueDepth.Now, in.QueueDepth.Before))
		}
		if finite(in.Preemption.Now) {
			p = append(p, fmt.Sprintf("preemptions %.2f %% of requests", in.Preemption.Now*100))
		}
		if finite(in.BatchSize.Now) {
			p = append(p, fmt.Sprintf("batch size %.1f (%.1f before)", in.BatchSize.Now, in.BatchSize.Before))
		}
		for _, s := range rd.Subjects {
			if s.Instance == in.Name && selected(rd, s) && finite(s.Queue.Now) {
				p = append(p, fmt.Sprintf("%s queue share %.0f %%", versionText(s.Version), ratio(s.Queue.Now, s.ServiceMean().Now)*100))
			}
		}
		if len(in.Warmup) > 0 {
			p = append(p, fmt.Sprintf("%d warm-up stretch(es) dropped", len(in.Warmup)))
		}
		if len(p) > 0 {
			parts = append(parts, in.Name+": "+strings.Join(p, ", "))
		}
	}
	if len(parts) == 0 {
		return "no framework readings"
	}
	return strings.Join(parts, "; ")
}

func stepInput(rd *Readings) string {
	var parts []string
	for _, in := range rd.Instances {
		if finite(in.InputMean.Now) {
			parts = append(parts, fmt.Sprintf("%s: mean input length %.0f (%.0f before)", in.Name, in.InputMean.Now, in.InputMean.Before))
		}
	}
	if len(parts) == 0 {
		return "the metrics have no input-length distribution"
	}
	return strings.Join(parts, "; ")
}

func stepHardware(rd *Readings) string {
	var parts []string
	for _, in := range rd.Instances {
		if !finite(in.XID.Now) && !finite(in.ECCUncorrected.Now) && !in.ThrottleMeasured {
			continue
		}
		parts = append(parts, gpuText(rd, in.Node)+": "+hardwareText(&in))
	}
	if len(parts) == 0 {
		return "no hardware readings (XID, ECC, clock events)"
	}
	return strings.Join(parts, "; ")
}

// msText writes a time in seconds for people (units.Seconds: ms, s or a duration).
func msText(s float64) string { return units.Seconds(s) }

func rateText(q float64) string {
	if !finite(q) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f req/s", q)
}
