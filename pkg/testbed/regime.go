package testbed

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A regime is everything that is true of one request on one stream while nothing changes:
// the latency segments' distributions, the error mix, business values. Counters grow by the
// regime's per-request expectations times the traffic, so a handful of regimes describe the
// whole history.
type regime struct {
	queue      mixture
	compute    mixture
	prefill    mixture // compute's prefill phase (the vLLM naming's prefill histogram)
	decode     mixture // compute's decode phase
	network    atoms
	errRatio   float64
	timeout    float64
	fallback   float64
	confidence float64
	batch      atoms
	input      mixture
	cacheHit   float64 // share of input elements found in the prefix cache
	preempt    float64 // preemptions per request
	compileHit float64 // share of compiled-graph cache lookups that hit
	rejected   float64 // requests refused at admission, per request that reached the engine

	mu    sync.Mutex
	cache map[string][]float64 // segment + bounds → P(X ≤ bound)
}

// regimeKey identifies a regime; it is comparable so regimes are interned.
type regimeKey struct {
	model      string
	canary     bool
	dayScale   float64
	warm       float64
	surge      bool
	slowdown   bool
	gpuIdle    bool
	netJitter  bool
	restarting bool
	effect     *caseEffect // a corpus case's effect (nil: none)
}

// Incident shapes (documented in doc.go; the jitter test pins their effect).
var (
	surgeQueue        = mixture{{1, 0.020, 1.0}}
	slowdownFast      = 2.5  // compute multiplier of the requests that avoid reallocation
	slowdownTailShare = 0.07 // requests that hit a reallocation
	slowdownTail      = lognormal{median: 0.350, sigma: 0.35}
	slowdownQueue     = 1.5
	idleShare         = 0.25 // one of the model's four GPUs is asleep
	jitterShare       = 0.30
	jitterDelay       = 0.200
	fallbackConf      = 0.62
	surgeBatch        = atoms{{8, 0.2}, {16, 0.4}, {32, 0.4}}
	surgeTraffic      = 1.5
	surgeRejected     = 0.02 // admission rejections per admitted request while the batch client floods the queue
	canaryConfDelta   = map[string]float64{"recsys-ranker": -0.02, "text-embedder": 0.005}
	coldCacheHit      = 0.05 // prefix cache hit share while warming up after a restart
	slowdownPreempt   = 0.02 // preemptions per request while memory is near full
	// Compiled-graph (JIT) cache: a new batch shape now and then misses; after a restart the
	// cache is cold and the hit share recovers with the warm-up (0.985/√warm: 0.35 at 8x).
	steadyCompileHit = 0.985
)

func (s *Scenario) regimeFor(m *modelSpec, k regimeKey) *regime {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.regimes[k]; ok {
		return r
	}
	r := &regime{
		queue: m.queue, compute: m.compute, network: m.network,
		errRatio: m.errRatio, timeout: m.timeout, fallback: m.fallback, confidence: m.confidence,
		batch: m.batch, input: m.input, cacheHit: m.cacheHit, compileHit: steadyCompileHit, cache: map[string][]float64{},
	}
	if k.warm > 1 {
		r.cacheHit = coldCacheHit
		r.compileHit = steadyCompileHit / math.Sqrt(k.warm)
	}
	if k.surge {
		r.queue = surgeQueue
		r.timeout = 0.01
		r.batch = surgeBatch
		r.rejected = surgeRejected
	}
	if k.slowdown {
		fast := m.compute.scaled(slowdownFast)
		for i := range fast {
			fast[i].weight *= 1 - slowdownTailShare
		}
		tail := slowdownTail
		tail.weight = slowdownTailShare
		r.compute = append(fast, tail)
		r.queue = m.queue.scaled(slowdownQueue)
		r.timeout = 0.005
		r.preempt = slowdownPreempt
	}
	if k.gpuIdle {
		gpu := m.compute.scaled(1)
		for i := range gpu {
			gpu[i].weight *= 1 - idleShare
		}
		cpu := m.cpuCompute.scaled(1)
		for i := range cpu {
			cpu[i].weight *= idleShare
		}
		r.compute = append(gpu, cpu...)
		r.fallback = m.fallback + idleShare
	}
	if k.netJitter {
		var n atoms
		for _, a := range m.network {
			n = append(n, atom{a.value, a.prob * (1 - jitterShare)})
		}
		for _, a := range m.network {
			n = append(n, atom{a.value + jitterDelay, a.prob * jitterShare})
		}
		r.network = n
	}
	if k.effect != nil {
		k.effect.apply(r, m)
	}
	if k.canary {
		r.confidence += canaryConfDelta[baseModel(m.name)]
	}
	r.confidence = r.confidence*(1-r.fallback) + fallbackConf*r.fallback
	scale := k.dayScale * k.warm
	if k.canary {
		scale *= m.canaryScale
	}
	r.prefill, r.decode = phases(m.compute, r.compute, k.slowdown)
	r.queue = r.queue.scaled(scale)
	r.compute = r.compute.scaled(scale)
	r.prefill = r.prefill.scaled(scale)
	r.decode = r.decode.scaled(scale)
	s.regimes[k] = r
	return r
}

// PrefillShare is the share of compute time a request spends in prefill in steady state; the
// rest is decode. The compute slowdown (memory reallocation while tokens are generated) grows
// decode only: prefill keeps its steady-state distribution and decode takes the rest, so the
// phases' means add up to compute's exactly and their distributions are the phase's share of the
// compute distribution (the slowdown's tail reduced by the steady prefill mean).
const PrefillShare = 0.3

// phases splits a regime's compute (before the day and warm-up scale) into prefill and decode:
// base is the model's steady compute, compute the regime's.
func phases(base, compute mixture, slowdown bool) (prefill, decode mixture) {
	if !slowdown {
		return compute.scaled(PrefillShare), compute.scaled(1 - PrefillShare)
	}
	prefill = base.scaled(PrefillShare)
	keep := PrefillShare * base.mean() // taken from each slowed request's compute
	decode = make(mixture, len(compute))
	for i, c := range compute {
		// Each component keeps its shape and loses the steady prefill mean: decode's mean is
		// compute's minus keep (the weights sum to 1).
		mean := c.mean()
		c.median *= (mean - keep) / mean
		decode[i] = c
	}
	return prefill, decode
}

// Segment is one measured quantity of a request.
type Segment int

// The latency segments: E2E = Queue + Compute (the service's own time), Gateway = E2E + Network
// (what the gateway measures upstream). InputLength and BatchSize are the business/framework
// histograms (BatchSize is observed once per batch, the others once per request).
const (
	E2E Segment = iota
	Queue
	Compute
	Network
	Gateway
	InputLength
	BatchSize
	Prefill // compute's prefill phase (Prefill + Decode = Compute in mean)
	Decode  // compute's decode phase
)

func (g Segment) String() string {
	return [...]string{"e2e", "queue", "compute", "network", "gateway", "input_length", "batch_size", "prefill", "decode"}[g]
}

// cdf is P(segment ≤ x) for one observation in this regime.
func (r *regime) cdf(g Segment, x float64) float64 {
	switch g {
	case E2E:
		return sumCDF(r.queue, r.compute, x)
	case Queue:
		return r.queue.cdf(x)
	case Compute:
		return r.compute.cdf(x)
	case Network:
		return r.network.cdf(x)
	case Gateway:
		var p float64
		for _, a := range r.network {
			p += a.prob * sumCDF(r.queue, r.compute, x-a.value)
		}
		return clamp01(p)
	case InputLength:
		return r.input.cdf(x)
	case BatchSize:
		return r.batch.cdf(x)
	case Prefill:
		return r.prefill.cdf(x)
	case Decode:
		return r.decode.cdf(x)
	}
	return math.NaN()
}

// mean is the expected value of one observation.
func (r *regime) mean(g Segment) float64 {
	switch g {
	case E2E:
		return r.queue.mean() + r.compute.mean()
	case Queue:
		return r.queue.mean()
	case Compute:
		return r.compute.mean()
	case Network:
		return r.network.mean()
	case Gateway:
		return r.queue.mean() + r.compute.mean() + r.network.mean()
	case InputLength:
		return r.input.mean()
	case BatchSize:
		return r.batch.mean()
	case Prefill:
		return r.prefill.mean()
	case Decode:
		return r.decode.mean()
	}
	return math.NaN()
}

// perRequest is how many observations of a segment one request makes (batches are shared).
func (r *regime) perRequest(g Segment) float64 {
	if g == BatchSize {
		return 1 / r.batch.mean()
	}
	return 1
}

// boundsKey is the cache key of a segment and bucket layout, remembered per layout: profiles
// pass the same bound slices on every call.
func (s *Scenario) boundsKey(g Segment, bounds []float64) string {
	if len(bounds) == 0 {
		return boundsKey(g, nil)
	}
	id := boundsID{g, &bounds[0], len(bounds)}
	if v, ok := s.keys.Load(id); ok {
		if e := v.(boundsEntry); slices.Equal(e.bounds, bounds) { // the caller may reuse its slice
			return e.key
		}
	}
	k := boundsKey(g, bounds)
	s.keys.Store(id, boundsEntry{k, slices.Clone(bounds)})
	return k
}

type boundsEntry struct {
	key    string
	bounds []float64
}

type boundsID struct {
	g Segment
	p *float64
	n int
}

// boundsKey identifies a segment and bucket layout in the regime caches.
func boundsKey(g Segment, bounds []float64) string {
	var kb strings.Builder
	kb.WriteString(g.String())
	for _, b := range bounds {
		kb.WriteByte(',')
		kb.WriteString(strconv.FormatFloat(b, 'g', -1, 64))
	}
	return kb.String()
}

// bucketProbs returns P(X ≤ b) for each bound; key is boundsKey(g, bounds).
func (r *regime) bucketProbs(g Segment, key string, bounds []float64) []float64 {
	r.mu.Lock()
	p, ok := r.cache[key]
	r.mu.Unlock()
	if ok {
		return p
	}
	p = make([]float64, len(bounds))
	for i, b := range bounds {
		p[i] = r.cdf(g, b)
		if i > 0 && p[i] < p[i-1] { // guard quadrature noise: buckets are cumulative
			p[i] = p[i-1]
		}
	}
	r.mu.Lock()
	r.cache[key] = p
	r.mu.Unlock()
	return p
}

// quantile is the continuous q-quantile of a segment in this regime.
func (r *regime) quantile(g Segment, q float64) float64 {
	return invert(func(x float64) float64 { return r.cdf(g, x) }, q)
}
