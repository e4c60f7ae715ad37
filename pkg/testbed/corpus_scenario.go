package testbed

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// CorpusScenario builds the fleet a server's corpus cases play in: four instances (node-d has no
// GPU probe), five models with their own traffic curves, latencies and GPUs, and the cases as
// incidents. Every case must be of that server. The history spans CorpusHistoryDays ending at
// end (truncated to the second). Like Default, every value is a pure function of time.
func CorpusScenario(server string, cases []Case, end time.Time) (*Scenario, error) {
	if serverKinds(server) == nil {
		return nil, fmt.Errorf("corpus: unknown server %q (known: %v)", server, CorpusServers)
	}
	end = end.UTC().Truncate(time.Second)
	s := &Scenario{name: "corpus-" + server, end: end, days: CorpusHistoryDays, regimes: map[regimeKey]*regime{}}
	s.models = corpusModelSpecs(server)
	x := &corpusExt{noProbe: map[string]bool{corpusUnprobed: true}, effects: map[string]*caseEffect{}, kvSlots: map[string]float64{}}
	for _, m := range s.models {
		// Steady peak KV usage about one half: slots = 2 × running at the daily peak.
		x.kvSlots[m.name] = 2 * m.baseQPS * (1 + diurnalAmp) * m.compute.mean()
	}
	for i := 0; i < corpusInstances; i++ {
		first := end.Add(-time.Duration(20+3*i) * 24 * time.Hour).Add(time.Duration(37*i+11) * time.Minute)
		s.instances = append(s.instances, instanceSpec{name: corpusInstanceName(i), starts: []time.Time{first}})
	}
	for _, c := range cases {
		if c.Server != server {
			return nil, fmt.Errorf("corpus: case %s is of server %s, not %s", c.ID, c.Server, server)
		}
		in := s.instance(c.Instance)
		m := s.model(c.Model)
		if in == nil || m == nil || !c.End.After(c.Onset) || c.Onset.Before(s.Start()) || c.Onset.After(end) {
			return nil, fmt.Errorf("corpus: case %s (%s on %s/%s at %s) does not fit the fleet", c.ID, c.Kind, c.Model, c.Instance, c.Onset.Format(time.RFC3339))
		}
		switch c.Kind {
		case CaseWarmup, CaseMemorySwap, CaseDeploy:
			in.starts = append(in.starts, c.Onset)
		case CaseLostCapacity:
			in.starts = append(in.starts, c.End) // back after the outage
		}
		slices.SortFunc(in.starts, func(a, b time.Time) int { return a.Compare(b) })
		inc := Incident{Kind: IncidentKind(c.Kind), Start: c.Onset, End: c.End, Instance: c.Instance, Model: c.Model,
			Version: c.Version, GPUs: slices.Clone(c.GPUs), Summary: c.Summary}
		if c.Kind == CaseLostCapacity || c.Kind == CaseWarmup {
			inc.Model = "" // the whole instance
		}
		s.incidents = append(s.incidents, inc)
		cc := c
		x.cases = append(x.cases, &cc)
		x.effects[c.ID] = &caseEffect{id: c.ID, p: c.p}
	}
	s.ext = x
	s.buildStreams()
	return s, nil
}

// corpusModelSpecs are a corpus fleet's five models. The LLM servers (vLLM, SGLang, TGI) serve
// generation models: seconds of compute, a few requests a second; vLLM pre-allocates 90 % of
// GPU memory (gpu_memory_utilization=0.9, UPSTREAM.md), so its GPUs sit at 90 % whatever the load.
func corpusModelSpecs(server string) []*modelSpec {
	llm := server == "vllm" || server == "sglang" || server == "tgi"
	type shape struct {
		name              string
		qps, peak         float64
		q, c, cs          float64 // queue median, compute median, compute sigma
		in, inSigma       float64
		mem               float64
		gpus              []int
		weekPhase, dayPhs float64
	}
	shapes := []shape{
		{"ranker", 150, 16, 0.003, 0.012, 0.25, 180, 0.5, 0.70, []int{0, 1}, 0.7, 0.3},
		{"embedder", 80, 14, 0.002, 0.025, 0.3, 300, 0.8, 0.55, []int{2, 3}, 2.1, 1.9},
		{"classifier", 200, 11, 0.002, 0.008, 0.3, 120, 0.6, 0.45, []int{4, 5}, 3.3, 0.8},
		{"detector", 40, 20, 0.004, 0.045, 0.25, 600, 0.4, 0.75, []int{6}, 4.4, 2.6},
		{"reranker", 100, 9, 0.003, 0.018, 0.3, 240, 0.6, 0.62, []int{7}, 5.2, 4.1},
	}
	if llm {
		shapes = []shape{
			{"chat-8b", 6, 16, 0.05, 1.2, 0.4, 900, 0.9, 0.9, []int{0, 1}, 0.7, 0.3},
			{"chat-70b", 2, 14, 0.08, 3.5, 0.4, 1200, 0.9, 0.9, []int{2, 3}, 2.1, 1.9},
			{"code-7b", 5, 11, 0.04, 0.9, 0.45, 1600, 0.8, 0.9, []int{4, 5}, 3.3, 0.8},
			{"summarize-13b", 3, 20, 0.06, 2.2, 0.35, 3000, 0.6, 0.9, []int{6}, 4.4, 2.6},
			{"embed-1b", 30, 9, 0.01, 0.06, 0.3, 400, 0.7, 0.9, []int{7}, 5.2, 4.1},
		}
		if server != "vllm" { // SGLang and TGI pre-allocate too, less
			for i := range shapes {
				shapes[i].mem = 0.86
			}
		}
	}
	var out []*modelSpec
	for i, sh := range shapes {
		out = append(out, &modelSpec{
			name: sh.name, stable: fmt.Sprintf("v%d.%d.0", 1+i, 2+i%3), canaryScale: 1,
			gpus: sh.gpus, baseQPS: sh.qps, peakHour: sh.peak, weekPhase: sh.weekPhase, dayPhase: sh.dayPhs,
			queue:    mixture{{1, sh.q, 0.6}},
			compute:  mixture{{1, sh.c, sh.cs}},
			network:  atoms{{0.0015, 0.6}, {0.003, 0.3}, {0.008, 0.1}},
			errRatio: 0.001, timeout: 0.0002, fallback: 0.0004, confidence: 0.88,
			batch:      atoms{{1, 0.15}, {2, 0.15}, {4, 0.3}, {8, 0.25}, {16, 0.15}},
			input:      mixture{{1, sh.in, sh.inSigma}},
			memBase:    sh.mem,
			cpuCompute: mixture{{1, 3 * sh.c, 0.3}},
			cacheHit:   0.4,
		})
	}
	return out
}

// corpusExt is what a corpus scenario adds to the scenario model: the cases' effects on traffic,
// regimes, GPUs, KV cache and process state. Default scenarios have none (Scenario.ext nil).
type corpusExt struct {
	cases   []*Case
	effects map[string]*caseEffect
	noProbe map[string]bool
	kvSlots map[string]float64
}

// caseEffect is a case's effect on a regime; a pointer in regimeKey, so regimes are interned
// per case.
type caseEffect struct {
	id string
	p  caseParams
}

// Cases lists a corpus scenario's cases (nil for other scenarios).
func (s *Scenario) Cases() []Case {
	if s.ext == nil {
		return nil
	}
	out := make([]Case, len(s.ext.cases))
	for i, c := range s.ext.cases {
		out[i] = *c
		out[i].GPUs = slices.Clone(c.GPUs)
	}
	return out
}

// Probed reports whether an instance's node has a GPU probe (every node but a corpus fleet's
// node-d).
func (s *Scenario) Probed(instance string) bool { return s.ext == nil || !s.ext.noProbe[instance] }

func (c *Case) active(t time.Time) bool { return !t.Before(c.Onset) && t.Before(c.End) }

// since is when a case's version stream starts (ok false for the models' stable versions).
func (x *corpusExt) since(instance, model, version string) (time.Time, bool) {
	for _, c := range x.cases {
		if c.Version == version && c.Model == model && c.Instance == instance {
			return c.Onset, true
		}
	}
	return time.Time{}, false
}

// cuts are the instants where an instance's streams change: its own cases' edges and every
// outage's (the other instances take the traffic).
func (x *corpusExt) cuts(instance string) []time.Time {
	var out []time.Time
	for _, c := range x.cases {
		if c.Instance == instance || c.Kind == CaseLostCapacity {
			out = append(out, c.Onset, c.End)
		}
	}
	return out
}

// down reports whether an instance's process is stopped (a lost-capacity case).
func (x *corpusExt) down(instance string, t time.Time) bool {
	for _, c := range x.cases {
		if c.Kind == CaseLostCapacity && c.Instance == instance && c.active(t) {
			return true
		}
	}
	return false
}

// versionStreams are the streams of the cases' new versions.
func (x *corpusExt) versionStreams(s *Scenario) []*stream {
	var out []*stream
	for _, c := range x.cases {
		if c.Version == "" {
			continue
		}
		out = append(out, s.newStream(*s.instance(c.Instance), s.model(c.Model), c.Version, true))
	}
	return out
}

// conditions applies the cases active at t to a stream's regime key and traffic scale.
func (x *corpusExt) conditions(k *regimeKey, scale *float64, instance string, m *modelSpec, version string, t time.Time) {
	for _, c := range x.cases {
		if c.Kind == CaseLostCapacity && c.Instance != instance && c.active(t) {
			*scale *= float64(corpusInstances) / (corpusInstances - 1)
			k.effect = x.effects[c.ID] // the survivors' queues grow
		}
	}
	if version != m.stable {
		var own *Case
		for _, c := range x.cases {
			if c.Version == version && c.Model == m.name && c.Instance == instance {
				own = c
			}
		}
		if own == nil || !own.active(t) {
			*scale = 0
			return
		}
		*scale = m.baseQPS * own.versionShare()
		if own.Kind != CaseDeploy {
			k.effect = x.effects[own.ID]
		}
		return
	}
	for _, c := range x.cases {
		if c.Instance != instance || c.Model != m.name || !c.active(t) {
			continue
		}
		if c.Version != "" {
			*scale *= 1 - c.versionShare()
			continue
		}
		switch c.Kind {
		case CaseWarmup, CaseQuietHour, CaseBusyHour, CaseLostCapacity:
			continue
		}
		k.effect = x.effects[c.ID]
		*scale *= c.p.traffic
	}
}

// versionShare is the new version's share of the model's traffic on the instance.
func (c *Case) versionShare() float64 {
	switch c.Kind {
	case CaseMemorySwap, CaseDeploy:
		return 1
	}
	return c.p.versionShare
}

// apply changes a regime (before the day and warm-up scale) by the case's effect.
func (e *caseEffect) apply(r *regime, m *modelSpec) {
	p := e.p
	if p.queue > 0 && p.queue != 1 {
		r.queue = scaleMean(r.queue, p.queue, p.queueSigma)
	}
	switch {
	case p.fallback > 0: // a GPU asleep: its share runs on the CPU path
		r.compute = blend(r.compute, m.cpuCompute, p.share)
		r.fallback += p.fallback
	case p.compute != 1 && p.share > 0 && p.share < 1:
		r.compute = blend(r.compute, r.compute.scaled(p.compute), p.share)
	case p.compute != 1:
		r.compute = r.compute.scaled(p.compute)
	}
	if p.tail > 0 {
		c := r.compute.scaled(1)
		for i := range c {
			c[i].weight *= 1 - p.tail
		}
		r.compute = append(c, lognormal{weight: p.tail, median: p.tailMedian, sigma: 0.35})
	}
	if p.input > 0 {
		r.input = blend(r.input, r.input.scaled(p.input), p.share)
	}
	if p.batchCap > 0 {
		var b atoms
		var over float64
		for _, a := range r.batch {
			if a.value < p.batchCap {
				b = append(b, a)
			} else {
				over += a.prob
			}
		}
		r.batch = append(b, atom{p.batchCap, over})
	}
	if p.batchGrow {
		b := make(atoms, len(r.batch))
		for i, a := range r.batch {
			b[i] = atom{math.Min(32, 2*a.value), a.prob}
		}
		r.batch = b
	}
	if p.netShare > 0 {
		var n atoms
		for _, a := range r.network {
			n = append(n, atom{a.value, a.prob * (1 - p.netShare)})
		}
		for _, a := range r.network {
			n = append(n, atom{a.value + p.netDelay, a.prob * p.netShare})
		}
		r.network = n
	}
	r.errRatio += p.errAdd
	r.timeout += p.timeout
	r.preempt += p.preempt
}

// scaleMean multiplies a mixture's mean by k; with sigma > 0 every component takes at least that
// spread (a queue near saturation has a heavy tail), its median lowered to keep the mean.
func scaleMean(m mixture, k, sigma float64) mixture {
	out := make(mixture, len(m))
	for i, c := range m {
		mean := c.mean() * k
		if sigma > c.sigma {
			c.sigma = sigma
		}
		c.median = mean / math.Exp(c.sigma*c.sigma/2)
		out[i] = c
	}
	return out
}

// blend is (1−share)·a + share·b.
func blend(a, b mixture, share float64) mixture {
	var out mixture
	for _, c := range a {
		c.weight *= 1 - share
		out = append(out, c)
	}
	for _, c := range b {
		c.weight *= share
		out = append(out, c)
	}
	return out
}

// kvUsage is a model's KV-cache usage on an instance: running requests over the model's slots,
// or the case's level while a KV-cache case lasts.
func (x *corpusExt) kvUsage(s *Scenario, instance, model string, t time.Time) float64 {
	for _, c := range x.cases {
		if c.Kind == CaseKVCache && c.Instance == instance && c.Model == model && c.active(t) {
			return c.p.kv
		}
	}
	return math.Min(1, s.Running(instance, model, "", t)/x.kvSlots[model])
}

// gpuLoad sets a GPU's memory and utilisation under the cases: memory climbing to the limit,
// an upgrade's larger footprint, a GPU asleep.
func (x *corpusExt) gpuLoad(st *GPUState, s *Scenario, instance string, gpu int, m *modelSpec, t time.Time) {
	for _, c := range x.cases {
		if c.Instance != instance || !slices.Contains(c.GPUs, gpu) {
			continue
		}
		p := c.p
		saw := 0.01 * (math.Mod(t.Sub(c.Onset).Seconds(), sawtoothPeriod)/sawtoothPeriod - 0.5)
		switch c.Kind {
		case CaseComputeMemory:
			switch {
			case !t.Before(c.Onset.Add(-p.memRamp)) && t.Before(c.Onset):
				frac := 1 - c.Onset.Sub(t).Seconds()/p.memRamp.Seconds()
				st.MemUsedRatio += (p.memTarget - 0.01 - st.MemUsedRatio) * frac
			case c.active(t):
				st.MemUsedRatio = p.memTarget + saw
				st.UtilRatio = 0.97
			}
		case CaseMemorySwap, CaseDeploy:
			if !c.active(t) {
				continue
			}
			if !s.Ready(instance, t) { // the new version's weights loading
				st.MemUsedRatio = 0.01 + (p.memTarget-0.01)*t.Sub(c.Onset).Seconds()/LoadDuration.Seconds()
				continue
			}
			st.MemUsedRatio = p.memTarget
			if c.Kind == CaseMemorySwap {
				st.MemUsedRatio += saw
				st.UtilRatio = 0.97
			}
		case CaseGPUIdle:
			if c.active(t) {
				st.UtilRatio = 0
			}
		}
	}
}

// gpuEvents sets the hardware signals of the cases: clocks and throttle reasons, XIDs, ECC.
func (x *corpusExt) gpuEvents(st *GPUState, instance string, gpu int, t time.Time) {
	for _, c := range x.cases {
		if c.Instance != instance || !slices.Contains(c.GPUs, gpu) || t.Before(c.Onset) {
			continue
		}
		p := c.p
		switch c.Kind {
		case CaseThrottle:
			if c.active(t) {
				st.SMClockMHz = p.clockMHz
				st.ThrottleReasons |= p.throttleMask
				st.TempCelsius = p.tempC
				st.PowerWatts = math.Min(st.PowerWatts, 0.7*st.PowerLimitWatts)
			}
		case CaseXID:
			st.XIDs = append(st.XIDs, XIDEvent{Time: c.Onset, Code: p.xid})
		case CaseECC:
			mins := math.Min(t.Sub(c.Onset).Minutes(), c.End.Sub(c.Onset).Minutes())
			st.ECCCorrected += uint64(p.eccCorrected * mins)
			if p.eccDBE > 0 {
				n := uint64(math.Ceil(mins / c.End.Sub(c.Onset).Minutes() * float64(p.eccDBE)))
				st.ECCUncorrected += min(n, p.eccDBE)
			}
		case CaseGPUIdle:
			if c.active(t) {
				st.ThrottleReasons = ThrottleGPUIdle
			}
			if p.idleXID {
				st.XIDs = append(st.XIDs, XIDEvent{Time: c.Onset, Code: 43})
			}
		}
	}
}
