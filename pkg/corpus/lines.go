package corpus

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
)

// A Line is one of the brief's notification lines that a case's truth crossed: what users
// felt (the true P95, not a histogram's estimate of it), what the GPU did, read from the
// scenario itself. It says whether a case ought to page at all, and from when: a barely
// visible surge whose P95 stays under 1.5× its baseline is harmful to the model's users but
// under every line the brief draws, so no P0/P1 is owed to it.
type Line struct {
	// Rule is the catalog rule that reads the line (network-p1 the gateway's upstream time).
	Rule string
	// Held is when the condition had held for the rule's own hold (the brief's P1 latency: 3
	// minutes past 1.5×): the earliest moment the rule could fire.
	Held time.Time
}

// How finely the truth is read: the GPU at the scrape interval, the service's latency every
// minute (its lines hold for minutes; a quantile of a mixture costs milliseconds), each
// quantile to a tenth of a percent.
const (
	gpuStep           = 15 * time.Second
	serviceStep       = time.Minute
	quantilePrecision = 1e-3
)

// baselineDays is how many previous days at the same time of day the truth's baseline means.
const baselineDays = 7

// DueWithin is how soon after a line is due (its Held) the acceptance asks for the page.
const DueWithin = 3 * time.Minute

// Reads says which signals beside the service's latency and the GPUs' a fleet exports, so
// which of the truth's lines exist there: a gateway's upstream time, a KV-cache usage (the
// memory rules judge it on nodes that pre-allocate their GPUs' memory).
type Reads struct{ Gateway, KVCache bool }

// ReadsOf is what a server's metric profile exports.
func ReadsOf(p profile.Profile) Reads {
	has := func(r profile.Role) bool { ms, _ := p.Measures(r); return len(ms) > 0 }
	return Reads{Gateway: has(profile.NetworkTime), KVCache: has(profile.KVCacheUsage)}
}

// TruthLines lists the lines a case's truth crosses within the case (onset to end), one per
// rule at its earliest. A condition that already held ten minutes before the onset is not the
// case's. Warm-up is left out as the rules leave it out (the brief: recorded, never alerted on).
func TruthLines(s *testbed.Scenario, c testbed.Case, p alerting.Params, reads Reads) []Line {
	t := &truther{s: s, c: c, p: p, base: map[baseKey]float64{}}
	var out []Line
	add := func(rule string, held time.Time) {
		if held.IsZero() {
			return
		}
		for i := range out {
			if out[i].Rule == rule {
				if held.Before(out[i].Held) {
					out[i].Held = held
				}
				return
			}
		}
		out = append(out, Line{Rule: rule, Held: held})
	}
	add("latency-p0", t.service(func(inst, ver string, at time.Time) bool {
		return t.above(testbed.E2E, inst, ver, at, p.LatencyCritRatio)
	}, p.LatencyCritFor))
	add("latency-p1", t.service(func(inst, ver string, at time.Time) bool {
		return t.above(testbed.E2E, inst, ver, at, p.LatencyWarnRatio)
	}, p.LatencyWarnFor))
	add("errors-p0", t.service(func(inst, ver string, at time.Time) bool { return s.ErrorRatio(inst, c.Model, ver, at) > p.ErrorRatio }, p.ErrorFor))
	add("jitter-p1", t.service(func(inst, ver string, at time.Time) bool {
		p50 := s.SegmentQuantileWithin(testbed.E2E, inst, c.Model, ver, 0.5, quantilePrecision, at)
		return s.SegmentCDF(testbed.E2E, inst, c.Model, ver, p.JitterRatio*p50, at) < 0.99
	}, p.JitterFor))
	add("queue-p1", t.service(func(inst, ver string, at time.Time) bool {
		return s.SegmentMean(testbed.Queue, inst, c.Model, ver, at) > p.QueueShare*s.SegmentMean(testbed.E2E, inst, c.Model, ver, at)
	}, p.QueueFor))
	if reads.Gateway {
		add("network-p1", t.service(func(inst, ver string, at time.Time) bool {
			return t.above(testbed.Gateway, inst, ver, at, p.LatencyWarnRatio)
		}, p.LatencyWarnFor))
	}
	steady := func(at time.Time) bool { return s.WarmupFactor(c.Instance, at) == 1 }
	add("gpumem-p0", t.gpu(func(g testbed.GPUState, at time.Time) bool { return steady(at) && g.MemUsedRatio > p.GPUMemCrit }, p.GPUMemCritFor))
	add("gpumem-p1", t.gpu(func(g testbed.GPUState, at time.Time) bool { return steady(at) && g.MemUsedRatio > p.GPUMemWarn }, p.GPUMemWarnFor))
	add("gpu-idle-p0", t.gpu(func(g testbed.GPUState, at time.Time) bool {
		return steady(at) && s.Ready(c.Instance, at) && g.UtilRatio == 0 && t.trafficRatio(at) > p.GPUIdleQPSFraction
	}, p.GPUIdleFor))
	if reads.KVCache {
		kv := func(at time.Time) bool { return steady(at) && s.KVCacheUsage(c.Instance, c.Model, at) > p.GPUMemCrit }
		add("gpumem-p0", t.held(kv, p.GPUMemCritFor, gpuStep))
	}
	const hardwareReasons = testbed.ThrottleHWSlowdown | testbed.ThrottleSWThermal | testbed.ThrottleHWThermal | testbed.ThrottlePowerBrake
	add("gpu-throttle-p1", t.gpu(func(g testbed.GPUState, _ time.Time) bool { return g.ThrottleReasons&hardwareReasons != 0 }, p.GPUThrottleFor))
	add("xid-p1", t.gpuEvent(func(before, now testbed.GPUState) bool { return len(now.XIDs) > len(before.XIDs) }))
	add("gpu-ecc-p1", t.gpuEvent(func(before, now testbed.GPUState) bool { return now.ECCUncorrected > before.ECCUncorrected }))
	return out
}

// truther reads one case's truth.
type truther struct {
	s    *testbed.Scenario
	c    testbed.Case
	p    alerting.Params
	base map[baseKey]float64
}

// baseKey is one baseline value: a segment's on an instance at an instant.
type baseKey struct {
	g    testbed.Segment
	inst string
	at   int64
}

// steps are the instants read: the onset to the end.
func (t *truther) steps(step time.Duration) []time.Time {
	var out []time.Time
	for at := t.c.Onset; at.Before(t.c.End); at = at.Add(step) {
		out = append(out, at)
	}
	return out
}

// held is when cond first held for hold over the steps (zero: never), provided it did not
// already hold ten minutes before the onset.
func (t *truther) held(cond func(time.Time) bool, hold, step time.Duration) time.Time {
	if cond(t.c.Onset.Add(-10 * time.Minute)) {
		return time.Time{}
	}
	var since time.Time
	for _, at := range t.steps(step) {
		if !cond(at) {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = at
		}
		if at.Sub(since) >= hold {
			return at
		}
	}
	return time.Time{}
}

// service is the earliest time cond held for hold on any instance serving the model, per
// version (the stable one and the case's own), out of warm-up.
func (t *truther) service(cond func(inst, ver string, at time.Time) bool, hold time.Duration) time.Time {
	versions := t.s.Versions(t.c.Model)
	if t.c.Version != "" {
		versions = append(versions, t.c.Version)
	}
	var first time.Time
	for _, inst := range t.s.Instances() {
		for _, ver := range versions {
			serving := func(at time.Time) bool {
				return t.s.WarmupFactor(inst, at) == 1 && t.s.QPS(inst, t.c.Model, ver, at) > 0
			}
			at := t.held(func(at time.Time) bool { return serving(at) && cond(inst, ver, at) }, hold, serviceStep)
			if !at.IsZero() && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
	}
	return first
}

// above says whether a segment's true P95 of a version is above k times its baseline: the
// model's P95 on the instance at the same time of day on the previous days (the brief's
// baseline, version-independent as the rules judge a new version). The P95 is above k·base
// exactly when fewer than 95 % of requests finish by k·base, one CDF instead of a quantile.
func (t *truther) above(g testbed.Segment, inst, ver string, at time.Time, k float64) bool {
	base := t.baseline(g, inst, at)
	if math.IsNaN(base) {
		return false
	}
	p := t.s.SegmentCDF(g, inst, t.c.Model, ver, k*base, at)
	return !math.IsNaN(p) && p < t.p.LatencyQuantile
}

// baseline is the mean of a segment's P95 on the instance at the same time of the previous
// days that served; NaN when none did.
func (t *truther) baseline(g testbed.Segment, inst string, at time.Time) float64 {
	key := baseKey{g, inst, at.Unix()}
	if v, ok := t.base[key]; ok {
		return v
	}
	var sum float64
	n := 0
	for d := 1; d <= baselineDays; d++ {
		if v := t.s.SegmentQuantileWithin(g, inst, t.c.Model, "", t.p.LatencyQuantile, quantilePrecision, at.AddDate(0, 0, -d)); !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
			sum += v
			n++
		}
	}
	v := math.NaN()
	if n > 0 {
		v = sum / float64(n)
	}
	t.base[key] = v
	return v
}

// trafficRatio is the model's QPS on the case's instance against the same time of day on the
// previous days.
func (t *truther) trafficRatio(at time.Time) float64 {
	var sum float64
	for d := 1; d <= baselineDays; d++ {
		sum += t.s.QPS(t.c.Instance, t.c.Model, "", at.AddDate(0, 0, -d))
	}
	if sum == 0 {
		return math.NaN()
	}
	return t.s.QPS(t.c.Instance, t.c.Model, "", at) / (sum / baselineDays)
}

// gpus are the GPUs a case's hardware lines read: its own, or every GPU of the model on the
// instance.
func (t *truther) gpus() []int {
	if len(t.c.GPUs) > 0 {
		return t.c.GPUs
	}
	return t.s.ModelGPUs(t.c.Model)
}

// gpu is the earliest time cond held for hold on one of the case's GPUs, whether or not a
// probe reads that node (what the rules can read is the replay's business).
func (t *truther) gpu(cond func(g testbed.GPUState, at time.Time) bool, hold time.Duration) time.Time {
	var first time.Time
	for _, n := range t.gpus() {
		at := t.held(func(at time.Time) bool { return cond(t.s.GPU(t.c.Instance, n, at), at) }, hold, gpuStep)
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// gpuEvent is the first step at which a GPU counter moved against the step before.
func (t *truther) gpuEvent(moved func(before, now testbed.GPUState) bool) time.Time {
	var first time.Time
	for _, n := range t.gpus() {
		before := t.s.GPU(t.c.Instance, n, t.c.Onset.Add(-gpuStep))
		for _, at := range t.steps(gpuStep) {
			now := t.s.GPU(t.c.Instance, n, at)
			if moved(before, now) {
				if first.IsZero() || at.Before(first) {
					first = at
				}
				break
			}
			before = now
		}
	}
	return first
}
