package triage

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// gathered is what the scoring found over the readings of a question.
type gathered struct {
	best     map[string]candidate // the strongest candidate per cause
	subjects int
	symptoms []string
	lead     *decomp  // the subject whose latency changed most, decomposed
	notes    []string // co-tenant evidence and versions not compared
	// unfeltNodes are the nodes whose GPU memory is past its lines while the model's requests
	// there show nothing (unfeltMemory; model questions only).
	unfeltNodes []string
}

// subjectKey names a model's instance across the readings of a node question.
func subjectKey(model, instance string) string { return model + "\xff" + instance }

// gather scores the causes of every instance and selected subject of the readings, weighs them
// by the segment that explains the latency change, and keeps the best candidate per cause above
// MinScore; it also counts the subjects and lists the symptoms, each once.
func gather(q question, rds []*Readings, th Thresholds) gathered {
	g := gathered{best: map[string]candidate{}}
	var all []candidate
	leads := map[string]decomp{} // per model and instance: its subject that changed most
	for _, rd := range rds {
		var top *decomp
		var local []candidate
		for _, raw := range rd.Subjects {
			if !selected(rd, raw) {
				continue
			}
			s, _ := effective(rd, raw)
			d := decompose(s, subjectText(rd.Model, s.Version)+" on "+s.Instance)
			k := subjectKey(rd.Model, s.Instance)
			if b, ok := leads[k]; !ok || d.delta() > b.delta() {
				leads[k] = d
			}
			if top == nil || d.delta() > top.delta() {
				top = &d
			}
			if g.lead == nil || d.delta() > g.lead.delta() {
				g.lead = &d
			}
			for _, c := range subjectCauses(rd, raw, s, rd.instance(s.Instance), th, d.lead) {
				c.model = rd.Model
				local = append(local, c)
			}
		}
		for i := range rd.Instances {
			in := &rd.Instances[i]
			for _, c := range instanceCauses(rd, in, th) {
				// A node's hardware belongs to no model, nor does an idle GPU that no model's
				// requests show yet: in a node question naming one (whichever was read first)
				// would send the reader to the wrong place.
				switch {
				case !q.byNode || !(c.id == CauseHardware || c.ofGPU):
					c.model = rd.Model
				case c.id == CauseGPUIdle:
					c.summary += "; no model's requests show it yet (GPU series carry no model)"
				}
				if c, ok := g.own(q, rd, in, c); ok {
					local = append(local, c)
				}
			}
		}
		for i := range local {
			weigh(&local[i], rd, leads, top, th)
		}
		all = append(all, local...)
		g.subjects += len(rd.Subjects)
		unfelt := unfeltIn(q, rd, th)
		for _, s := range symptomsOf(rd, th, unfelt) {
			if q.byNode && !strings.HasPrefix(s, "GPU memory") {
				s = rd.Model + ": " + s
			}
			if !slices.Contains(g.symptoms, s) {
				g.symptoms = append(g.symptoms, s)
			}
		}
		for _, n := range standingNotes(rd, th) {
			g.notes = appendUnique(g.notes, n)
		}
		for _, in := range unfelt {
			g.notes = appendUnique(g.notes, unfeltNote(rd, in))
			g.unfeltNodes = appendUnique(g.unfeltNodes, in.Node)
		}
		for _, u := range unknownAge(rd) {
			g.notes = appendUnique(g.notes, fmt.Sprintf("versions %s of %s: neither was deployed in the %s before the window, so triage cannot tell which is new and does not compare them (inferscope gate compares versions)",
				u, rd.Model, dur(DeployLookback)))
		}
	}
	if q.byNode {
		all = deployedOnInstance(rds, all)
	}
	all = orderCompute(all, th)
	for _, c := range all {
		c.score = math.Round(math.Min(c.score, 0.99)*1000) / 1000
		if c.score < MinScore {
			continue
		}
		if b, ok := g.best[c.id]; !ok || c.score > b.score {
			g.best[c.id] = c
		}
	}
	return g
}

// deployedOnInstance: in a node question, an instance's warm-up that the deploy of another model
// served by the same process explains (one server process restarts for all its models) is that
// deploy's: expected, weighed as the deploy's own warm-up is.
func deployedOnInstance(rds []*Readings, all []candidate) []candidate {
	deployed := map[string]string{} // instance → "model version" deployed there with a warm-up
	for _, rd := range rds {
		for i := range rd.Instances {
			if v := deployWarmup(rd, &rd.Instances[i]); v != "" {
				deployed[rd.Instances[i].Name] = subjectText(rd.Model, v)
			}
		}
	}
	for i := range all {
		c := &all[i]
		if d, ok := deployed[c.instance]; ok && c.id == CauseWarmup && c.score > deployWarmupScore {
			c.score = deployWarmupScore
			c.summary += fmt.Sprintf("; it is the warm-up of the deploy of %s, served by the same process: expected, nothing to act on", d)
		}
	}
	return all
}

// own keeps a node-level cause (an idle GPU, hardware) only as the subject's own: GPU series
// carry no model, so in a model question that names no GPU, an idle GPU or a hardware event on
// the node is the model's cause only when the model's own requests show it (answered by the
// fallback path, slower, failing). Otherwise the GPU may serve another model: an idle GPU is
// then co-tenant evidence, not a cause, and hardware weighs half (and leaves a model without
// symptoms healthy: onlyUnseen).
func (g *gathered) own(q question, rd *Readings, in *Instance, c candidate) (candidate, bool) {
	if q.byNode || rd.GPU != "" || (c.id != CauseGPUIdle && c.id != CauseHardware) || ownSign(rd, in) {
		return c, true
	}
	if c.id == CauseGPUIdle {
		gpu := "GPU " + strings.Join(in.IdleGPUs, ", ")
		if len(in.IdleGPUs) == 0 {
			gpu = "GPU " + strings.Join(in.WentIdle, ", ")
		}
		g.notes = appendUnique(g.notes, fmt.Sprintf("co-tenant evidence, not a cause of %s: %s of %s sat idle under traffic, but %s's own requests on %s show no sign of it (no fallback, no slowdown, no errors): the GPU likely serves another model",
			rd.Model, gpu, in.Node, rd.Model, in.Name))
		return c, false
	}
	c.score *= 0.5
	c.unseen = true
	c.summary += fmt.Sprintf(" (weighed half: %s's own requests on %s show no sign of it; the GPU may serve another model)", rd.Model, in.Name)
	return c, true
}

// ownSign says whether the model's own requests on the instance show a GPU going wrong: a
// fallback share of 1 % or more, a service time 10 % above its reference, or errors doubling
// where the error counter is the model's own (a host-wide one counts every model's errors on the
// instance: another model's failing GPU is no sign of this model's).
func ownSign(rd *Readings, in *Instance) bool {
	if in.Fallback.Now >= 0.01 {
		return true
	}
	for _, raw := range rd.Subjects {
		if raw.Instance != in.Name || !selected(rd, raw) {
			continue
		}
		s, _ := effective(rd, raw)
		svc := s.ServiceMean()
		if ratio(svc.Now, svc.Before) >= 1.1 || (!rd.ErrorsOfInstance && s.ErrorRatio.Now >= 0.01 && s.ErrorRatio.Now >= 2*s.ErrorRatio.Before) {
			return true
		}
	}
	return false
}

// weigh applies the decomposition: a cause of a segment that did not lead its instance's latency
// change weighs offLead; an input-length shift under a compute-led change explains it.
func weigh(c *candidate, rd *Readings, leads map[string]decomp, top *decomp, th Thresholds) {
	var d *decomp
	if c.instance != "" {
		if x, ok := leads[subjectKey(rd.Model, c.instance)]; ok {
			d = &x
		}
	} else {
		d = top
	}
	if d == nil || d.lead == "" {
		return
	}
	seg := segmentOf[c.id]
	// Compute rising past its own line explains the queue too (a slower service lengthens the
	// queue, more than in proportion near saturation): its causes are not weighed down under a
	// queue-led change, and the queue cause is.
	cRose := d.s.Compute.Now-d.s.Compute.Before >= d.s.floor() && ratio(d.s.Compute.Now, d.s.Compute.Before) >= riseRatio
	switch {
	case seg == "":
	case d.lead == SegQueue && (c.id == CauseKVCache || c.id == CauseQueue) && kvExhausted(rd.instance(c.instance), th):
		explainQueueByKV(c, rd.instance(c.instance))
	case seg == SegCompute && (d.lead == SegCompute || cRose && d.lead == SegQueue):
		explainCompute(c, rd, d)
	case seg != d.lead:
		c.score *= offLead
		c.summary += fmt.Sprintf(" (weighed down: %s)", d.leadText())
	case c.id == CauseQueue && cRose:
		c.score *= offLead
		c.summary += fmt.Sprintf(" (weighed down: compute rose too, %s → %s, and a slower service lengthens the queue)", msText(d.s.Compute.Before), msText(d.s.Compute.Now))
	case d.lead == SegQueue && !cRose:
		explainQueue(c, rd, d)
	case d.lead == SegNetwork && c.id == CauseNetwork:
		explainNetwork(c, d)
	}
}

// explainQueueByKV: under a queue-led change on an instance whose KV cache is exhausted with
// requests preempted, the exhaustion explains the queue: a preempted request goes back to the
// waiting queue and waits again (vLLM and SGLang re-queue it), and a full cache admits no new
// sequence, so the wait grows more than compute. The KV-cache cause is not weighed down, and the
// queue cause, its symptom, is.
func explainQueueByKV(c *candidate, in *Instance) {
	switch c.id {
	case CauseKVCache:
		c.summary += "; preempted requests wait in the queue again, which leads the change"
	case CauseQueue:
		c.score *= offLead
		c.summary += fmt.Sprintf(" (weighed down: the KV cache of %s is exhausted and its preempted requests wait again)", in.Name)
	}
}

// explainNetwork: the network segment leading the change is the gateway's diagnosis, as a lead of
// compute or the queue is theirs: the segment is the gateway's upstream time beyond the service's
// own, and the gateway is its one candidate. On a fast service the rise is a few milliseconds, so
// its absolute grade says little; how many times its reference the segment is says how sure.
func explainNetwork(c *candidate, d *decomp) {
	r := ratio(d.s.Network.Now, d.s.Network.Before)
	c.score = math.Max(c.score, 0.5+0.2*grade(r, riseRatio, 3))
	c.summary += "; the network segment leads the change"
}

// explainQueue: under a queue-led change, traffic past surgeLine (and not moved from the
// model's other instances) explains the queue: the surge is raised to a diagnosis and the queue
// cause, its symptom, weighed down. Between the surge floor and its line the traffic explains it
// only where the wait outgrew the arrivals (queueOutgrewArrivals), at medium confidence.
func explainQueue(c *candidate, rd *Readings, d *decomp) {
	if c.id != CauseTrafficSurge && c.id != CauseQueue {
		return
	}
	r, ok := trafficExplainsQueue(rd, c.instance)
	score := 0.6 + 0.3*grade(r, surgeLine, 4)
	why := fmt.Sprintf("%.2f× the usual traffic explains it", r)
	if !ok {
		q, hour, outgrew := queueOutgrewArrivals(rd, c.instance, d)
		if !outgrew {
			if c.id == CauseQueue {
				queueWithoutSurge(c, rd)
			}
			return
		}
		score = 0.5 + 0.1*grade(r, surgeFloor, surgeLine)
		why = fmt.Sprintf("the traffic explains it: the wait grew %.1f×, past twice the arrivals' %.2f× against the hour before, as a server past its knee waits, while compute and capacity stood", q, hour)
	}
	switch c.id {
	case CauseTrafficSurge:
		c.score = math.Max(c.score, score)
		c.summary += "; the queue leads the change, and " + why
	case CauseQueue:
		c.score *= offLead
		c.summary += fmt.Sprintf(" (weighed down: the instance receives %.2f× its usual traffic, which lengthens the queue)", r)
	}
}

// outgrowLine: a wait that grew this many times the arrivals' growth is the non-linear wait of a
// server near saturation (1/(1 − utilisation)): arrivals up by two fifths on a server at 60 %
// stretch its wait nearly fourfold. A changed batching or concurrency policy needs no rise in the
// arrivals; with the arrivals up past the surge floor and nothing else moved, they explain it.
const outgrowLine = 2

// queueOutgrewArrivals says whether, below the surge line, the arrivals still explain a
// queue-led change: they rose past surgeFloor against both references (surgeStep's floor), no
// other instance of the model lost its traffic (each read: a model's total cannot tell new
// requests from moved ones), the batches are not smaller (where read), and the mean queue time
// grew past outgrowLine times their growth against the hour before. It returns the queue's
// growth and the arrivals'.
func queueOutgrewArrivals(rd *Readings, instance string, d *decomp) (queue, arrivals float64, ok bool) {
	in := rd.instance(instance)
	if in == nil {
		return math.NaN(), math.NaN(), false
	}
	usual, hour := trafficRatio(in), ratio(in.QPS.Now, in.QPS.Before)
	if !finite(usual) || !finite(hour) || math.Min(usual, hour) < surgeFloor || smallerBatches(in) || !noneLost(rd, in) {
		return math.NaN(), hour, false
	}
	q := ratio(d.s.Queue.Now, d.s.Queue.Before)
	return q, hour, finite(q) && q >= outgrowLine*hour
}

// noneLost says whether the model's traffic was read per instance and none of its instances
// other than in (that served in the hour before) lost it.
func noneLost(rd *Readings, in *Instance) bool {
	others := instanceTraffic(rd)
	if others == nil {
		return false
	}
	for name, p := range others {
		if name != in.Name && finite(p.Before) && p.Before > 0 && lostTraffic(p) {
			return false
		}
	}
	return true
}

// queueWithoutSurge raises the queue cause to its segment's diagnosis where the readings say why
// requests wait without a surge: the arrivals stand where they stood (stable compute, stable
// arrivals, a rising queue: the concurrency or the batching policy, the brief's split rule), or
// the instance took over the traffic of instances that lost capacity (the model runs on fewer
// instances).
func queueWithoutSurge(c *candidate, rd *Readings) {
	in := rd.instance(c.instance)
	if in == nil {
		return
	}
	var why string
	if moved, lost := movedTraffic(rd, in); moved {
		why = fmt.Sprintf("; its extra traffic comes from the model's instances that lost %s: the model runs on fewer instances (lost capacity)", rateText(-lost))
	} else if smallerBatches(in) {
		why = fmt.Sprintf("; the batches are smaller (%.1f requests per batch, %.1f before) while the arrivals did not fall: a lower max batch size or batch delay makes the same load wait", in.BatchSize.Now, in.BatchSize.Before)
	} else if trafficFlat(in) {
		why = "; the arrivals and compute stand where they stood, so the wait is the concurrency's or the batching policy's"
	} else {
		return
	}
	c.score = math.Max(c.score, 0.5+0.2*grade(c.queueRatio, riseRatio, 5))
	c.summary += why
}

// batchLine: batches this much smaller than in the hour before changed past the spread of a
// steady load. A continuous-batching server's batch is its running requests, which follow its
// arrivals times its compute time: fuller batches say no more than the arrivals do, but smaller
// ones over the same arrivals and compute say the batching policy capped them.
const batchLine = 1.25

// smallerBatches: the instance runs batches past batchLine smaller than in the hour before while
// its arrivals did not fall (against the hour before): the batching policy changed (a lower max
// batch size, a shorter batch delay), and the same load waits longer.
func smallerBatches(in *Instance) bool {
	return ratio(in.BatchSize.Before, in.BatchSize.Now) >= batchLine && ratio(in.QPS.Now, in.QPS.Before) >= 1/flatLine
}

// explainCompute raises the compute candidates whose own sign explains a compute rise: hardware
// events on the node, and inputs longer past their line (longer inputs cost more compute).
func explainCompute(c *candidate, rd *Readings, d *decomp) {
	switch c.id {
	case CauseHardware:
		c.score = math.Max(c.score, 0.65)
		c.summary += "; " + d.leadText()
	case CauseInputShift:
		if in := rd.instance(c.instance); in != nil {
			if r := ratio(in.InputMean.Now, in.InputMean.Before); r >= 1.3 {
				c.score = math.Max(c.score, 0.6+0.3*grade(r, 1.3, 3))
				c.summary += "; " + d.leadText()
			}
		}
	}
}

// orderCompute orders compute's candidates on each instance: a version deployed there and
// slower than the one it replaced comes first (the memory pressure or KV-cache exhaustion that
// came with it is its mechanism), and "compute" (no measured signal explains the rise) is left
// out where another compute candidate is diagnosed.
func orderCompute(all []candidate, th Thresholds) []candidate {
	type key struct{ model, instance string }
	reg := map[key]float64{}
	other := map[key]float64{}
	for _, c := range all {
		k := key{c.model, c.instance}
		switch {
		case c.id == CauseModelRegression:
			reg[k] = math.Max(reg[k], c.score)
		case segmentOf[c.id] == SegCompute && c.id != CauseCompute:
			other[k] = math.Max(other[k], c.score)
		}
	}
	out := all[:0]
	for _, c := range all {
		k := key{c.model, c.instance}
		r := reg[k]
		switch {
		case c.id == CauseCompute && math.Max(other[k], r) >= th.DiagnosedScore:
			continue
		case r >= th.DiagnosedScore && (c.id == CauseComputeMemory || c.id == CauseKVCache || c.id == CauseCompute) && c.score >= r:
			c.score = r - 0.01
			c.summary += "; it follows the deploy of " + c.version + " on " + c.instance
		}
		out = append(out, c)
	}
	return out
}

// segmentsReport writes the decomposition of the subject that changed most.
func (g gathered) segmentsReport(r *Report) {
	r.Segments = []SegmentChange{}
	if g.lead == nil {
		return
	}
	r.Segments = g.lead.segs
	r.Lead = g.lead.lead
	r.SegmentsOf = g.lead.who
}

// notMeasured lists the signals the readings lack, each with what it would have told.
func notMeasured(rds []*Readings) []string {
	has := map[string]bool{}
	mark := func(name string, ok bool) {
		if _, seen := has[name]; !seen {
			has[name] = false
		}
		has[name] = has[name] || ok
	}
	for _, rd := range rds {
		for _, s := range rd.Subjects {
			mark("queue", finite(s.Queue.Now))
			mark("compute", finite(s.Compute.Now))
			mark("network", finite(s.Network.Now))
			mark("prefill", finite(s.Prefill.Now))
		}
		for _, in := range rd.Instances {
			mark("gpumem", finite(in.GPUMem.Now))
			mark("kv", finite(in.KVCache.Now))
			mark("preempt", finite(in.Preemption.Now))
			mark("input", finite(in.InputMean.Now))
			mark("xid", finite(in.XID.Now))
			mark("ecc", finite(in.ECCUncorrected.Now))
			mark("throttle", in.ThrottleMeasured)
			mark("waitreason", finite(in.WaitingDeferred.Now))
		}
		mark("deploys", rd.DeploysRead)
	}
	text := []struct{ key, what string }{
		{"queue", "queue segment: the queue causes (traffic, capacity, framework) cannot be told from compute"},
		{"compute", "compute segment: the compute causes cannot be told from the queue"},
		{"network", "network segment: no gateway time, so the network cause cannot be raised"},
		{"prefill", "prefill / decode split: the compute cause cannot name the phase that grew"},
		{"gpumem", "GPU memory: memory pressure cannot be seen"},
		{"kv", "KV-cache usage: KV-cache exhaustion cannot be seen (only servers that export it)"},
		{"preempt", "preemptions: KV-cache exhaustion and recomputation cannot be seen"},
		{"input", "input length: an input-length shift cannot be seen"},
		{"xid", "XID events"},
		{"ecc", "uncorrected ECC errors"},
		{"throttle", "clock-throttling reasons"},
		{"waitreason", "waiting by reason: a blocked scheduler cannot be told from load"},
		{"deploys", "version changes: the metrics carry no version (or no model) label, so a new version cannot be told from the old"},
	}
	out := []string{}
	for _, t := range text {
		if ok, seen := has[t.key]; seen && !ok {
			out = append(out, t.what)
		}
	}
	out = append(out,
		"server overhead: the split has no segment for time outside queue and compute",
		"batch size: a batching change is seen through the queue only (an instance that stops serving, through its load state where the server exports one)",
		"co-tenants: GPU series carry no model, so another model's load on the same GPU is not read")
	return out
}
