package testbed

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// The incident corpus: cases generated from a seed, each a departure of one kind, at one
// magnitude, at one time of day and place in a fleet, written from the brief's and the servers'
// facts (MISSION.md, UPSTREAM.md), not from any diagnosis. A case knows its kind and subject;
// what a triage should answer for it is the judge's business (pkg/corpus), not the generator's.

// CaseKind names a corpus case's kind. The names differ from the default scenario's incident
// kinds, so the default scenario's incident logic never applies to a corpus case.
type CaseKind string

// The corpus kinds. Harmful kinds make the service slower; the controls do not.
const (
	// Service layer: more traffic than the batching keeps up with, or less capacity for the same.
	CaseTrafficSurge   CaseKind = "traffic_surge"
	CaseLostCapacity   CaseKind = "lost_capacity"   // one instance stops serving; the others take its traffic
	CaseSmallerBatches CaseKind = "smaller_batches" // a smaller max batch size: requests wait longer
	// Compute: the brief's "stable queue + rising compute → GPU contention or weights swapped".
	CaseComputeMemory  CaseKind = "compute_memory_pressure" // GPU memory climbs to the limit, reallocation
	CaseComputeFlat    CaseKind = "compute_slowdown_flat"   // compute slower, GPU memory flat, nothing else changes
	CaseComputeNoProbe CaseKind = "compute_slowdown_unprobed"
	CaseMemorySwap     CaseKind = "memory_swap_upgrade" // in-place upgrade needing more GPU memory
	CaseKVCache        CaseKind = "kv_cache_exhaustion" // KV cache full, the scheduler preempts
	CaseInputShift     CaseKind = "input_length_shift"  // one client's huge inputs
	// Hardware (UPSTREAM: dcgm-exporter's clock events, XID, ECC).
	CaseThrottle CaseKind = "clock_throttling"
	CaseXID      CaseKind = "xid_error"
	CaseECC      CaseKind = "ecc_errors"
	CaseGPUIdle  CaseKind = "gpu_idle"
	// Network: the brief's third segment.
	CaseGatewayJitter CaseKind = "gateway_jitter"
	// Restarts and versions.
	CaseWarmup CaseKind = "restart_warmup"
	CaseCanary CaseKind = "canary_regression"
	// Controls: nothing is wrong.
	CaseQuietHour     CaseKind = "control_quiet_hour"
	CaseBusyHour      CaseKind = "control_busy_hour"
	CaseFasterVersion CaseKind = "control_faster_version"
	CaseDeploy        CaseKind = "control_deploy"
)

// CaseKinds lists every kind in the order reports use.
var CaseKinds = []CaseKind{
	CaseTrafficSurge, CaseLostCapacity, CaseSmallerBatches, CaseComputeMemory, CaseComputeFlat, CaseComputeNoProbe,
	CaseMemorySwap, CaseKVCache, CaseInputShift, CaseThrottle, CaseXID, CaseECC, CaseGPUIdle, CaseGatewayJitter,
	CaseWarmup, CaseCanary, CaseQuietHour, CaseBusyHour, CaseFasterVersion, CaseDeploy,
}

// Control reports whether a kind is a negative control (nothing wrong).
func (k CaseKind) Control() bool {
	switch k {
	case CaseQuietHour, CaseBusyHour, CaseFasterVersion, CaseDeploy:
		return true
	}
	return false
}

// Restarts reports whether a kind restarts (or stops) its instance's process: such a case
// disturbs every model on the instance, so it has its time slot to itself.
func (k CaseKind) Restarts() bool {
	switch k {
	case CaseLostCapacity, CaseMemorySwap, CaseWarmup, CaseDeploy:
		return true
	}
	return false
}

// CorpusServers are the server namings the corpus covers (expo.ProfileNames), one fleet each.
var CorpusServers = []string{"custom", "vllm", "triton", "torchserve", "tgi", "sglang"}

// serverKinds lists, per server, the harmful kinds its metrics can show (UPSTREAM.md and
// pkg/profile's Missing): a version label for canaries and upgrades (custom, Triton,
// TorchServe); servers that allocate GPU memory as they go for memory pressure (vLLM and SGLang
// pre-allocate their KV cache, TGI too: their memory sits at the pre-allocation); KV-cache usage
// and preemptions for KV exhaustion (vLLM, SGLang); an input-length histogram or prompt-token
// counter for an input shift (custom, vLLM, TGI, SGLang); the network segment only where the
// service measures the gateway's upstream time (custom).
func serverKinds(server string) []CaseKind {
	common := []CaseKind{CaseTrafficSurge, CaseLostCapacity, CaseSmallerBatches, CaseComputeFlat, CaseComputeNoProbe,
		CaseThrottle, CaseXID, CaseECC, CaseGPUIdle}
	switch server {
	case "custom":
		return append(common, CaseComputeMemory, CaseMemorySwap, CaseInputShift, CaseGatewayJitter, CaseCanary)
	case "triton", "torchserve":
		return append(common, CaseComputeMemory, CaseMemorySwap, CaseCanary)
	case "vllm", "sglang":
		return append(common, CaseKVCache, CaseInputShift)
	case "tgi":
		return append(common, CaseInputShift)
	}
	return nil
}

// serverControls lists the controls (and the warm-up) per server: a faster version and a deploy
// need a version label.
func serverControls(server string) []CaseKind {
	out := []CaseKind{CaseWarmup, CaseQuietHour, CaseBusyHour}
	switch server {
	case "custom", "triton", "torchserve":
		out = append(out, CaseFasterVersion, CaseDeploy)
	}
	return out
}

// Levels of magnitude: barely visible to severe.
const (
	LevelBarely = iota
	LevelMild
	LevelModerate
	LevelSevere
)

// LevelNames names the levels.
var LevelNames = []string{"barely", "mild", "moderate", "severe"}

// Case is one corpus incident (or control) with its subject.
type Case struct {
	ID     string   // "<server>-<nn>"
	Server string   // naming of its fleet
	Kind   CaseKind //
	Level  int      // LevelBarely..LevelSevere; controls 0
	// Magnitude is the kind's main factor (traffic ×, compute ×, queue ×, input ×, delay s, …).
	Magnitude float64
	Model     string
	Instance  string
	GPUs      []int  // the GPUs involved (hardware, memory, idle), nil otherwise
	Version   string // the new version of a canary, upgrade or deploy
	Onset     time.Time
	End       time.Time // exclusive
	Summary   string
	p         caseParams
}

// Node is the case's node ("node-a").
func (c Case) Node() string { return Node(c.Instance) }

// XID is the XID code the case's GPU reports at onset (an XID case, a GPU idle that reports
// one); 0 when it reports none.
func (c Case) XID() uint64 {
	switch {
	case c.Kind == CaseXID:
		return c.p.xid
	case c.Kind == CaseGPUIdle && c.p.idleXID:
		return 43
	}
	return 0
}

// caseParams are the numbers behind a case's effect (see corpusEffect).
type caseParams struct {
	traffic      float64 // traffic multiplier of the subject stream(s)
	queue        float64 // queue time multiplier
	queueSigma   float64 // queue spread when it grows (0 = keep)
	compute      float64 // compute time multiplier of the affected share
	share        float64 // share of the requests affected (GPU share, client share)
	versionShare float64 // a new version's share of the model's traffic on the instance
	tail         float64 // share of requests hitting a slow tail (reallocation, retries)
	tailMedian   float64 // seconds
	batchCap     float64 // largest batch (0 = unchanged)
	batchGrow    bool    // batches grow with the queue (a surge)
	input        float64 // input length multiplier of the shifted share
	netShare     float64
	netDelay     float64
	errAdd       float64
	timeout      float64
	preempt      float64
	kv           float64 // KV-cache usage while it lasts (0 = as computed)
	memTarget    float64 // GPU memory used ratio during the case (0 = unchanged)
	memRamp      time.Duration
	clockMHz     uint32
	throttleMask uint64
	tempC        float64
	xid          uint64
	eccCorrected float64 // corrected ECC errors per minute
	eccDBE       uint64
	idleXID      bool
	fallback     float64
}

// NVML clock-event reasons the corpus uses besides the scenario's.
const (
	ThrottleHWSlowdown uint64 = 0x8
	ThrottleSWThermal  uint64 = 0x20
	ThrottleHWThermal  uint64 = 0x40
	ThrottlePowerBrake uint64 = 0x80
)

// CorpusOptions shapes a corpus.
type CorpusOptions struct {
	Seed int64
	End  time.Time // zero = DefaultEnd
	// Servers to generate (nil = CorpusServers).
	Servers []string
	// PerKind is how many cases each harmful kind gets per server (0 = 3), MaxPerServer caps a
	// server's cases (0 = no cap); controls get PerControl each (0 = 2).
	PerKind, PerControl, MaxPerServer int
}

// Corpus fleet layout: corpusModels models on corpusInstances instances; the last instance's
// node has no GPU probe (nothing measures its GPUs). Cases sit in the last corpusCaseDays days,
// one hour slot each; the history holds CorpusHistoryDays so every case has 7 clean days
// before it at the same time of day.
const (
	corpusInstances   = 4
	corpusModels      = 5
	corpusCaseDays    = 2
	CorpusHistoryDays = 9
	// CorpusGPUDays of GPU history: the case days and the memory ramps before them.
	CorpusGPUDays = 3
)

// corpusUnprobed is the node without a GPU probe.
const corpusUnprobed = "node-d:8000"

// GenerateCorpus builds the corpus's cases from a seed: per server, each harmful kind the
// server can show at PerKind magnitudes (severe and moderate first, then drawn), the controls,
// each on its own model and instance in its own hour of the last two days. Deterministic.
func GenerateCorpus(o CorpusOptions) ([]Case, error) {
	if o.End.IsZero() {
		o.End = DefaultEnd
	}
	o.End = o.End.UTC().Truncate(time.Hour)
	servers := o.Servers
	if servers == nil {
		servers = CorpusServers
	}
	perKind, perControl := cmpOr(o.PerKind, 3), cmpOr(o.PerControl, 2)
	var out []Case
	for _, server := range servers {
		si := slices.Index(CorpusServers, server)
		if si < 0 {
			return nil, fmt.Errorf("corpus: unknown server %q (known: %v)", server, CorpusServers)
		}
		// Each server draws from its own stream (by its place in CorpusServers), so a server's
		// cases are the same whichever servers are generated with it.
		rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(si+1)*0x9e3779b97f4a7c15))
		cases := planServer(rng, server, perKind, perControl)
		if o.MaxPerServer > 0 && len(cases) > o.MaxPerServer {
			cases = cases[:o.MaxPerServer]
		}
		placed := placeCases(rng, server, cases, o.End)
		out = append(out, placed...)
	}
	return out, nil
}

func cmpOr(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// planServer draws the kinds and levels of a server's cases, interleaved so a capped corpus
// still covers every kind.
func planServer(rng *rand.Rand, server string, perKind, perControl int) []Case {
	var rounds [][]Case
	for _, k := range serverKinds(server) {
		levels := []int{LevelSevere, LevelModerate}
		for len(levels) < perKind {
			levels = append(levels, rng.IntN(2)) // barely or mild
		}
		for i := 0; i < perKind; i++ {
			if i >= len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[i] = append(rounds[i], Case{Server: server, Kind: k, Level: levels[i]})
		}
	}
	for _, k := range serverControls(server) {
		for i := 0; i < perControl; i++ {
			if i >= len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[i] = append(rounds[i], Case{Server: server, Kind: k})
		}
	}
	var out []Case
	for _, r := range rounds {
		out = append(out, r...)
	}
	return out
}

// corpusSlot is one hour of the case days.
type corpusSlot struct {
	day, hour int // day 0 = the day before the last, 1 = the last day
}

// placeCases gives each case a model, an instance, GPUs and an hour. Rules: a model has a case
// only every other hour (its reference hour before the triage window is clean) and on the other
// day at the same hour none (its baseline is clean); an instance has one case per hour; a case
// that restarts its instance has its hour to itself and keeps the next hour and the same hour
// of the other day free. A case that finds no place is dropped (the caller sees the count).
func placeCases(rng *rand.Rand, server string, cases []Case, end time.Time) []Case {
	start := end.Add(-corpusCaseDays * 24 * time.Hour)
	models := corpusModelSpecs(server)
	type use struct {
		models    map[int]bool
		instances map[int]bool
		exclusive bool
		blocked   bool // next to or a day from a restart
	}
	slots := map[corpusSlot]*use{}
	get := func(s corpusSlot) *use {
		if u, ok := slots[s]; ok {
			return u
		}
		u := &use{models: map[int]bool{}, instances: map[int]bool{}}
		slots[s] = u
		return u
	}
	abs := func(h int) corpusSlot { return corpusSlot{day: h / 24, hour: h % 24} }
	modelBusy := func(m int, s corpusSlot) bool {
		h := s.day*24 + s.hour
		for _, d := range []corpusSlot{abs(h - 1), abs(h + 1), abs((h + 24) % 48)} {
			if u, ok := slots[d]; ok && u.models[m] {
				return true
			}
		}
		return get(s).models[m]
	}
	var out []Case
	n := 0
	order := rng.Perm(len(cases))
	// Restarting cases first: they need empty hours.
	sort.SliceStable(order, func(i, j int) bool {
		return cases[order[i]].Kind.Restarts() && !cases[order[j]].Kind.Restarts()
	})
	for _, ci := range order {
		c := cases[ci]
		placed := false
		for _, attempt := range rng.Perm(corpusCaseDays * 24 * corpusModels * corpusInstances) {
			s := corpusSlot{day: attempt / (24 * corpusModels * corpusInstances), hour: attempt / (corpusModels * corpusInstances) % 24}
			m := attempt / corpusInstances % corpusModels
			inst := attempt % corpusInstances
			if !kindFits(c.Kind, m, inst, s, models[m]) {
				continue
			}
			u := get(s)
			if u.exclusive || u.models[m] || u.instances[inst] || modelBusy(m, s) {
				continue
			}
			if c.Kind.Restarts() && (len(u.models) > 0 || u.blocked) {
				continue
			}
			if c.Kind.Restarts() {
				u.exclusive = true
				get(abs(s.day*24 + s.hour + 1)).blocked = true
				get(corpusSlot{1 - s.day, s.hour}).blocked = true
			}
			u.models[m] = true
			u.instances[inst] = true
			c.Model = models[m].name
			c.Instance = corpusInstanceName(inst)
			onset := start.Add(time.Duration(s.day*24+s.hour)*time.Hour + time.Duration(12+rng.IntN(10))*time.Minute)
			c = shapeCase(rng, c, models[m], onset)
			placed = true
			break
		}
		if placed {
			n++
			c.ID = fmt.Sprintf("%s-%02d", server, n)
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Onset.Before(out[j].Onset) })
	return out
}

// kindFits says whether a kind can sit on a model, instance and hour: unprobed compute cases on
// the node without a probe and GPU kinds elsewhere; quiet and busy hours at the model's trough
// and peak.
func kindFits(k CaseKind, m, inst int, s corpusSlot, ms *modelSpec) bool {
	unprobed := corpusInstanceName(inst) == corpusUnprobed
	switch k {
	case CaseComputeNoProbe:
		return unprobed
	case CaseComputeMemory, CaseMemorySwap, CaseThrottle, CaseXID, CaseECC, CaseGPUIdle, CaseComputeFlat:
		if unprobed {
			return false
		}
	}
	dist := math.Abs(math.Mod(float64(s.hour)+0.5-ms.peakHour+36, 24) - 12) // hours from the trough
	switch k {
	case CaseQuietHour:
		return dist < 2.5
	case CaseBusyHour:
		return dist > 9.5
	}
	return true
}

func corpusInstanceName(i int) string { return fmt.Sprintf("node-%c:8000", 'a'+i) }

// shapeCase draws the case's numbers for its kind and level, from the brief's and the servers'
// facts; the onset is given.
func shapeCase(rng *rand.Rand, c Case, m *modelSpec, onset time.Time) Case {
	c.Onset = onset
	sh := &shaper{rng: rng, c: &c, m: m}
	sh.dur = time.Duration(20+rng.IntN(11)) * time.Minute
	sh.gpuOne = []int{m.gpus[rng.IntN(len(m.gpus))]}
	c.p.traffic, c.p.queue, c.p.compute = 1, 1, 1
	switch c.Kind {
	case CaseTrafficSurge, CaseLostCapacity, CaseSmallerBatches:
		sh.service()
	case CaseComputeMemory, CaseComputeFlat, CaseComputeNoProbe, CaseMemorySwap, CaseKVCache, CaseInputShift:
		sh.compute()
	case CaseThrottle, CaseXID, CaseECC, CaseGPUIdle:
		sh.hardware()
	default:
		sh.other()
	}
	c.End = onset.Add(sh.dur)
	return c
}

// shaper holds what shaping one case needs; its draws keep the order of the seed's stream.
type shaper struct {
	rng    *rand.Rand
	c      *Case
	m      *modelSpec
	dur    time.Duration
	gpuOne []int
}

// pick is the level's value, jittered ±8 %.
func (sh *shaper) pick(vals ...float64) float64 {
	return vals[sh.c.Level] * (0.92 + 0.16*sh.rng.Float64())
}

// service shapes the service kinds: more traffic, less capacity, smaller batches.
func (sh *shaper) service() {
	c, p, m, lv, rng, onset, pick, gpuOne := sh.c, &sh.c.p, sh.m, sh.c.Level, sh.rng, sh.c.Onset, sh.pick, sh.gpuOne
	_, _, _, _, _, _ = m, lv, rng, onset, pick, gpuOne
	switch c.Kind {
	case CaseTrafficSurge:
		// More requests than the batching absorbs: queue time grows much faster than traffic
		// (a queue near saturation), batches fill up, compute barely moves.
		p.traffic = pick(1.25, 1.5, 2, 3)
		p.queue = math.Min(20, math.Pow(p.traffic, 3.2))
		p.queueSigma = 0.9
		p.compute = 1 + 0.06*(p.traffic-1)
		p.batchGrow = true
		p.timeout = 0.002 * (p.traffic - 1)
		c.Magnitude = p.traffic
		c.Summary = fmt.Sprintf("a client raises %s's traffic on %s %.2fx; queue time x%.1f, compute flat", c.Model, c.Instance, p.traffic, p.queue)
	case CaseLostCapacity:
		// One instance stops serving (not ready); the others take its traffic.
		p.queue = pick(1.3, 2, 4, 8)
		p.queueSigma = 0.8
		c.Magnitude = float64(corpusInstances) / (corpusInstances - 1)
		c.Summary = fmt.Sprintf("%s stops serving (not ready) for the case; every model's traffic moves to the other instances (x%.2f each), whose queues grow", c.Instance, c.Magnitude)
	case CaseSmallerBatches:
		// A configuration change caps the batch size: the same traffic waits longer.
		p.batchCap = []float64{8, 4, 2, 1}[lv]
		p.queue = pick(1.4, 2.2, 4, 8)
		p.queueSigma = 0.8
		c.Magnitude = p.queue
		c.Summary = fmt.Sprintf("%s's max batch size lowered to %g on %s: queue time x%.1f, traffic and compute unchanged", c.Model, p.batchCap, c.Instance, p.queue)
	}
}

// compute shapes the compute kinds.
func (sh *shaper) compute() {
	c, p, m, lv, rng, onset, pick, gpuOne := sh.c, &sh.c.p, sh.m, sh.c.Level, sh.rng, sh.c.Onset, sh.pick, sh.gpuOne
	_, _, _, _, _, _ = m, lv, rng, onset, pick, gpuOne
	switch c.Kind {
	case CaseComputeMemory:
		// The brief: memory near the limit, a traffic burst grows batches, reallocation and
		// saw-tooth latency. Memory climbs before latency breaks.
		c.GPUs = slices.Clone(m.gpus)
		p.compute = pick(1.3, 1.8, 2.6, 4)
		p.tail, p.tailMedian = 0.02+0.02*float64(lv), 0.25*p.compute*m.compute.mean()/0.012
		p.queue = 1 + 0.15*(p.compute-1)
		p.memTarget = 0.925 + 0.01*float64(lv)
		p.memRamp = time.Duration(60+rng.IntN(31)) * time.Minute
		p.timeout = 0.001 * float64(lv)
		c.Magnitude = p.compute
		c.Summary = fmt.Sprintf("GPU memory of %s on %s climbs to %.1f %% over %s, then reallocation: compute x%.1f with a slow tail", c.Model, c.Node(), 100*p.memTarget, p.memRamp, p.compute)
	case CaseComputeFlat, CaseComputeNoProbe:
		// Compute slower, nothing measured explains it (a noisy neighbour on the host, a driver
		// setting): GPU memory flat, traffic, inputs and batches unchanged.
		p.compute = pick(1.3, 1.8, 2.6, 3.6)
		p.queue = 1 + 0.1*(p.compute-1)
		c.Magnitude = p.compute
		where := "GPU memory flat"
		if c.Kind == CaseComputeNoProbe {
			where = "its node has no GPU probe"
		}
		c.Summary = fmt.Sprintf("%s's compute on %s x%.1f, queue flat, %s", c.Model, c.Instance, p.compute, where)
	case CaseMemorySwap:
		// The brief's headline: an upgrade needing ~2 GB more memory hits the card's limit and
		// latency falls off a cliff. The new version replaces the old in place (a restart).
		c.GPUs = slices.Clone(m.gpus)
		c.Version = bumpVersion(m.stable, 1, onset)
		p.memTarget = 0.965 + 0.008*float64(lv)
		p.compute = pick(1.4, 2, 3.5, 6)
		p.tail, p.tailMedian = 0.03+0.03*float64(lv), 0.4*p.compute*m.compute.mean()/0.012
		p.queue = 1 + 0.3*(p.compute-1)
		p.timeout = 0.002 * float64(lv)
		sh.dur = time.Duration(30+rng.IntN(11)) * time.Minute
		c.Magnitude = p.compute
		c.Summary = fmt.Sprintf("%s %s replaces %s on %s (restart); it needs more GPU memory: %.1f %% used, compute x%.1f with swaps", c.Model, c.Version, m.stable, c.Instance, 100*p.memTarget, p.compute)
	case CaseKVCache:
		// vLLM/SGLang: the KV cache fills (long generations), the scheduler preempts and
		// recomputes; requests wait for capacity.
		p.kv = 0.95 + 0.015*float64(lv)
		p.preempt = pick(0.01, 0.03, 0.08, 0.2)
		p.compute = 1 + 2*p.preempt + 0.1*float64(lv)
		p.queue = pick(1.5, 2.5, 5, 10)
		p.queueSigma = 0.9
		c.Magnitude = p.preempt
		c.Summary = fmt.Sprintf("%s's KV cache on %s at %.0f %%: %.0f preemptions per 100 requests, queue x%.1f, compute x%.2f", c.Model, c.Instance, 100*p.kv, 100*p.preempt, p.queue, p.compute)
	case CaseInputShift:
		// The brief's step 8-12: one user's huge inputs. Their requests cost prefill
		// proportional to their length.
		p.share = []float64{0.1, 0.2, 0.3, 0.4}[lv]
		p.input = pick(3, 4, 6, 8)
		p.compute = PrefillShare*p.input + (1 - PrefillShare)
		c.Magnitude = p.input
		c.Summary = fmt.Sprintf("%.0f %% of %s's requests on %s carry inputs %.1fx longer (one client); their compute x%.1f", 100*p.share, c.Model, c.Instance, p.input, p.compute)
	}
}

// hardware shapes the GPU hardware kinds.
func (sh *shaper) hardware() {
	c, p, m, lv, rng, onset, pick, gpuOne := sh.c, &sh.c.p, sh.m, sh.c.Level, sh.rng, sh.c.Onset, sh.pick, sh.gpuOne
	_, _, _, _, _, _ = m, lv, rng, onset, pick, gpuOne
	switch c.Kind {
	case CaseThrottle:
		// Clock throttling (clock-event reasons: HW thermal / power brake): the SM clock drops
		// and compute grows in proportion on the throttled GPUs.
		c.GPUs = gpuOne
		if lv >= LevelModerate {
			c.GPUs = slices.Clone(m.gpus)
		}
		p.clockMHz = uint32([]float64{1200, 1000, 700, 450}[lv])
		p.compute = 1410 / float64(p.clockMHz)
		p.share = float64(len(c.GPUs)) / float64(len(m.gpus))
		p.throttleMask = ThrottleHWThermal | ThrottleHWSlowdown
		if rng.IntN(2) == 0 {
			p.throttleMask = ThrottlePowerBrake | ThrottleHWSlowdown
		}
		p.tempC = 86 + 2*float64(lv)
		c.Magnitude = p.compute
		c.Summary = fmt.Sprintf("GPU(s) %v of %s on %s throttled to %d MHz (reasons 0x%x): their compute x%.2f", c.GPUs, c.Model, c.Node(), p.clockMHz, p.throttleMask, p.compute)
	case CaseXID:
		// An XID (13 graphics exception, 31 MMU fault, 119 GSP timeout): the GPU's requests fail
		// or retry.
		c.GPUs = gpuOne
		p.xid = []uint64{13, 31, 119}[rng.IntN(3)]
		p.share = 1 / float64(len(m.gpus))
		p.compute = pick(1.5, 2.5, 4, 8)
		p.errAdd = p.share * []float64{0.01, 0.03, 0.08, 0.2}[lv]
		c.Magnitude = p.compute
		c.Summary = fmt.Sprintf("XID %d on GPU %v of %s's %s: its requests retry (compute x%.1f) or fail (+%.1f %% errors)", p.xid, c.GPUs, c.Node(), c.Model, p.compute, 100*p.errAdd)
	case CaseECC:
		// Memory errors: a storm of corrected errors and a few uncorrected ones (page retirement).
		c.GPUs = gpuOne
		p.eccCorrected = pick(5, 20, 60, 200)
		p.eccDBE = uint64(lv)
		p.share = 1 / float64(len(m.gpus))
		p.compute = pick(1.3, 2, 3, 5)
		p.errAdd = p.share * 0.005 * float64(lv)
		c.Magnitude = p.compute
		c.Summary = fmt.Sprintf("GPU %v of %s on %s: %.0f corrected ECC errors a minute, %d uncorrected; its compute x%.1f", c.GPUs, c.Model, c.Node(), p.eccCorrected, p.eccDBE, p.compute)
	case CaseGPUIdle:
		// The brief's GPU idle under traffic: a GPU loses its context, utilisation 0, model ready;
		// its share of requests falls back to the CPU path. Some report an XID 43, some nothing.
		c.GPUs = gpuOne
		p.share = 1 / float64(len(m.gpus))
		p.fallback = p.share
		p.idleXID = rng.IntN(2) == 0
		p.compute = m.cpuCompute.mean() / m.compute.mean()
		c.Magnitude = p.share
		c.Summary = fmt.Sprintf("GPU %v of %s on %s loses its context (utilisation 0, XID 43: %v); %.0f %% of requests fall back to the CPU", c.GPUs, c.Model, c.Node(), p.idleXID, 100*p.share)
	}
}

// other shapes the network, restart, version kinds and the controls.
func (sh *shaper) other() {
	c, p, m, lv, rng, onset, pick, gpuOne := sh.c, &sh.c.p, sh.m, sh.c.Level, sh.rng, sh.c.Onset, sh.pick, sh.gpuOne
	_, _, _, _, _, _ = m, lv, rng, onset, pick, gpuOne
	switch c.Kind {
	case CaseGatewayJitter:
		// The brief's switch firmware: the network segment alone, service time unchanged.
		p.netShare = []float64{0.1, 0.2, 0.3, 0.4}[lv]
		p.netDelay = pick(0.05, 0.1, 0.2, 0.3)
		c.Magnitude = p.netDelay
		c.Summary = fmt.Sprintf("%.0f %% of %s's requests to %s get +%.0f ms between gateway and instance; service time unchanged", 100*p.netShare, c.Model, c.Instance, 1000*p.netDelay)
	case CaseWarmup:
		sh.dur = LoadDuration + WarmupDuration
		c.Summary = fmt.Sprintf("%s restarts: %s of loading (not ready), then warm-up", c.Instance, LoadDuration)
	case CaseCanary:
		// The release gate's case: a new version on canary, slower than the one it replaces.
		c.Version = bumpVersion(m.stable, 2, onset)
		p.versionShare = []float64{0.1, 0.2, 0.3, 0.5}[rng.IntN(4)]
		p.compute = pick(1.12, 1.3, 1.7, 2.5)
		p.queue = p.compute
		sh.dur = time.Duration(40+rng.IntN(11)) * time.Minute
		c.Magnitude = p.compute
		c.Summary = fmt.Sprintf("%s %s on canary on %s (%.0f %% of its traffic), x%.2f slower than %s", c.Model, c.Version, c.Instance, 100*p.versionShare, p.compute, m.stable)
	case CaseQuietHour, CaseBusyHour:
		c.Summary = fmt.Sprintf("%s on %s at %02d:%02d UTC (peak %02.0f:00): nothing wrong", c.Model, c.Instance, onset.Hour(), onset.Minute(), m.peakHour)
	case CaseFasterVersion:
		c.Version = bumpVersion(m.stable, 3, onset)
		p.versionShare = []float64{0.2, 0.5}[rng.IntN(2)]
		p.compute = 0.85 + 0.1*rng.Float64()
		p.queue = p.compute
		sh.dur = 45 * time.Minute
		c.Magnitude = p.compute
		c.Summary = fmt.Sprintf("%s %s on canary on %s (%.0f %%), x%.2f: faster than %s", c.Model, c.Version, c.Instance, 100*p.versionShare, p.compute, m.stable)
	case CaseDeploy:
		c.Version = bumpVersion(m.stable, 4, onset)
		c.GPUs = slices.Clone(m.gpus)
		p.memTarget = m.memBase + 0.01
		sh.dur = 45 * time.Minute
		c.Summary = fmt.Sprintf("%s %s replaces %s on %s (restart), same speed and memory", c.Model, c.Version, m.stable, c.Instance)
	}
}

// bumpVersion derives a new version name from the stable one, unique per case (kind and onset
// day and hour: one case per model and hour).
func bumpVersion(stable string, n int, onset time.Time) string {
	return fmt.Sprintf("%s-r%d.%s", stable, n, onset.Format("0215"))
}
