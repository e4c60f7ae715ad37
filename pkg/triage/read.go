package triage

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
)

// Pair is one reading in the reference window and in the window; NaN = not measured.
type Pair struct{ Before, Now float64 }

func nanPair() Pair { return Pair{math.NaN(), math.NaN()} }

// Span is a time range [Start, End].
type Span struct{ Start, End time.Time }

// Subject holds the readings of one version of the model on one instance: the engine's
// service-level types (latency, jitter, baseline, split, errors, throughput) group by model and
// version, so each instance is read on its own.
type Subject struct {
	Instance, Version string
	QPS               Pair
	P50, P95, P99     Pair
	Jitter            Pair
	// P95Raw is the P95 without the warm-up filter, read only where a warm-up was dropped.
	P95Raw Pair
	// BaselineRatio is the P95 over its 7-day same-time-of-day baseline (the baseline type),
	// BaselineP95 that baseline; both the window's mean. NaN where fewer than minDays had data.
	BaselineRatio, BaselineP95 float64
	Queue, Compute, Network    Pair // mean seconds per request
	// Prefill and Decode are compute's phases (mean seconds per request), NaN where the server
	// does not time them.
	Prefill, Decode          Pair
	ErrorRatio, TimeoutRatio Pair
}

// floor is the smallest step that counts on the subject (stepFloor): a share of its time per
// request before (queue + compute, and the network where measured: the split's total).
func (s Subject) floor() float64 {
	t := s.Queue.Before + s.Compute.Before
	if finite(s.Network.Before) {
		t += s.Network.Before
	}
	return stepFloor(t)
}

// ServiceMean is queue + compute (the service's own mean time).
func (s Subject) ServiceMean() Pair {
	return Pair{s.Queue.Before + s.Compute.Before, s.Queue.Now + s.Compute.Now}
}

// Warmup is a stretch the warm-up filter dropped.
type Warmup struct {
	Start, End time.Time
	Reason     string
}

// Instance holds the readings of one instance (and its node's GPUs) for the model.
type Instance struct {
	Name string
	Node string
	// QPS of the model (the selected version, when one is) and its 7-day same-time-of-day mean.
	QPS         Pair
	QPSBaseline float64
	// QPSLast is the traffic at the window's last point (an instance that stopped serving minutes
	// before the window's end barely moves its mean); NaN where not read.
	QPSLast float64
	// GPU readings of the node: the fullest GPU's memory ratio (mean over the window), the
	// lowest utilisation of any GPU at any point, and the highest memory ratio in the window.
	GPUMem, GPUUtil Pair
	GPUMemPeak      float64
	// GPUMemLast is the fullest GPU's memory at the window's last point (NaN where not read):
	// where a version was deployed in the window, what the new version holds after its load.
	GPUMemLast float64
	// WentIdle are the node's GPUs that worked at every point of the hour before (utilisation
	// above 0) and sat at zero from some point of the window to its end (idleAtEnd).
	WentIdle []string
	IdleGPUs []string // GPUs where the engine's idle-under-traffic condition held
	// Hardware: XID events, uncorrected and corrected ECC errors in each window; active hardware
	// or thermal clock-event reasons in the window.
	// A count is NaN where it is not measured (not exported, or no series of the node's GPUs).
	XID, ECCUncorrected, ECCCorrected Pair
	Throttle                          []string
	// ThrottleMeasured: clock-event reasons are exported, so an empty Throttle means none.
	ThrottleMeasured bool
	// Framework and business readings (PromQL through the profile, not warm-up filtered).
	CacheHit, Waiting, QueueDepth, Preemption, InputMean, Confidence, Fallback Pair
	// BatchSize: requests per executed batch (the running requests of a continuous-batching
	// server), where the server reports it.
	BatchSize Pair
	// KVCache: the model's KV-cache usage (0..1) where the server reports it (vLLM). There it is
	// the memory-pressure signal: vLLM pre-allocates most of the GPU's memory, so GPU memory
	// used says nothing about pressure.
	KVCache Pair
	// KVCachePeak and PreemptionPeak are the highest points in the window (NaN where not read):
	// an exhaustion in the window's last minutes barely moves their means.
	KVCachePeak, PreemptionPeak float64
	// WaitingDeferred: waiting requests held back for a reason other than capacity (vLLM's
	// waiting by reason); NaN where the server gives no reason.
	WaitingDeferred Pair
	// WaitingIsQueue: the profile reads waiting requests from the queue-depth metric.
	WaitingIsQueue bool
	Warmup         []Warmup
}

// Readings are everything the scoring looks at for one model.
type Readings struct {
	Model, Version, Instance string
	// Node restricts the instances to those on the node; GPU names the GPU the GPU readings
	// (memory, utilisation, idle, hardware) are about ("" = every GPU of the node).
	Node, GPU      string
	Window, Before Span
	Subjects       []Subject
	Instances      []Instance
	Notices        []string
	Queries        int
	// NetworkPerModel: the network segment is the model's over all instances (the gateway does
	// not tell them apart), so the network cause names no instance.
	NetworkPerModel bool
	// ErrorsOfInstance: the server's error counter carries no model, so a subject's error ratio
	// is every model's on its instance, not the model's own (engine.ErrorsPerModel).
	ErrorsOfInstance bool
	// Deploys are the model's versions that appeared on its instances in the DeployLookback
	// before the window or in it; DeploysRead says they could be looked for (the metrics carry
	// model and version labels).
	Deploys     []Deploy
	DeploysRead bool
	// ModelQPS is the model's traffic over every instance that serves it (the selected version,
	// when one is), read also when the question names an instance or a node; NaN where it was
	// not read. More traffic on the instance asked about matched by less on the others is
	// traffic moved from instances that lost capacity, not a surge.
	ModelQPS Pair
	// ModelByInstance is the same traffic per instance (the instance label's values), so a
	// question about one instance tells the instances that lost traffic; nil where not read.
	ModelByInstance map[string]Pair
}

// instance returns the readings of the named instance.
func (r *Readings) instance(name string) *Instance {
	for i := range r.Instances {
		if r.Instances[i].Name == name {
			return &r.Instances[i]
		}
	}
	return nil
}

// reader runs the engine queries of one triage.
type reader struct {
	e        *engine.Engine
	prom     *engine.Reader // the reads beyond the query types (framework, business, hardware)
	o        Options
	rd       *Readings
	rng      engine.Range
	rate     time.Duration
	instLbl  string
	verLbl   string
	mu       sync.Mutex
	noticed  map[string]bool
	warmSeen map[string]bool
	names    []string // the instances read
}

// maxParallel bounds the queries in flight: a triage must not crowd out the dashboards.
const maxParallel = 6

// runJobs runs the jobs on the engine's Parallel, at most maxParallel at once.
func runJobs(ctx context.Context, jobs []func(context.Context) error) error {
	return engine.Parallel(ctx, len(jobs), maxParallel, func(ctx context.Context, i int) error { return jobs[i](ctx) })
}

// newReader prepares the grid and rate window of o (completed with defaults).
func newReader(e *engine.Engine, o Options) *reader {
	rd := &Readings{Model: o.Model, Version: o.Version, Instance: o.Instance, Node: o.node(), GPU: o.GPU,
		Window: Span{o.From, o.To}, Before: Span{o.From.Add(-o.Before), o.From}, NetworkPerModel: !e.NetworkPerInstance(),
		ErrorsOfInstance: !e.ErrorsPerModel(), ModelQPS: nanPair()}
	total := o.To.Sub(rd.Before.Start)
	step := max(time.Minute, (total / 600).Truncate(time.Minute))
	// A 5-minute rate window as the dashboards use; a short window (a restart's first minutes)
	// gets a shorter one so its points are its own.
	rate := min(5*time.Minute, max(2*time.Minute, (o.To.Sub(o.From)/3).Truncate(time.Minute)))
	r := &reader{e: e, prom: e.Reader(), o: o, rd: rd, rate: max(rate, step),
		rng:     engine.Range{Start: rd.Before.Start, End: o.To, MinStep: step, AlignEnd: true},
		instLbl: e.Profile.InstanceLabel, verLbl: e.Profile.VersionLabel,
		noticed: map[string]bool{}, warmSeen: map[string]bool{}}
	if r.instLbl == "" {
		r.instLbl = "instance"
	}
	return r
}

// Read gathers the readings of o, its window completed with the defaults, from the engine's
// Prometheus.
func Read(ctx context.Context, e *engine.Engine, o Options) (*Readings, error) {
	r := newReader(e, o.WithDefaults(e.Clock()))
	o = r.o
	rd := r.rd
	if o.Version != "" && r.verLbl == "" {
		r.notice(fmt.Sprintf("%s metrics carry no version label: every version of %s is read together", e.Profile.Title, o.Model))
	}

	r.noticeUnread()
	say := func(i int, label string) {
		if o.Progress != nil {
			o.Progress(i, 3, label)
		}
	}
	say(1, "which instances serve "+subjectText(o.Model, o.Version))
	names, err := r.readInstances(ctx)
	if err != nil {
		return nil, err
	}

	var jobs []func(context.Context) error
	subjects := make([]map[string]*Subject, len(names))
	for i, n := range names {
		subjects[i] = map[string]*Subject{}
		jobs = append(jobs, r.serviceJobs(n, subjects[i])...)
	}
	if len(names) > 0 {
		jobs = append(jobs, r.gpuJob(names), r.idleJob(names), r.hardwareJob(names), r.deployJob(names))
		jobs = append(jobs, r.extraJobs()...)
		if o.Instance != "" || rd.Node != "" {
			jobs = append(jobs, r.modelTrafficJob())
		}
	}
	say(2, fmt.Sprintf("latency, split, traffic, GPU, framework and hardware on %d instance(s)", len(names)))
	if err := runJobs(ctx, jobs); err != nil {
		return nil, err
	}

	r.addSubjects(names, subjects)
	// Where the warm-up filter dropped samples, read the unfiltered P95 too: the jump it hides.
	var warm []func(context.Context) error
	for i := range rd.Instances {
		if len(rd.Instances[i].Warmup) > 0 {
			warm = append(warm, r.rawLatencyJob(rd.Instances[i].Name))
		}
	}
	say(3, "latency without the warm-up filter")
	if err := runJobs(ctx, warm); err != nil {
		return nil, err
	}
	rd.Queries += r.prom.Queries()
	for _, n := range r.prom.Notices() {
		r.notice(n)
	}
	sort.Strings(rd.Notices) // jobs finish in any order; the answer must not
	return rd, nil
}

// noticeUnread says what the profile cannot give, once, in the triage's words.
func (r *reader) noticeUnread() {
	for _, g := range []struct {
		role profile.Role
		what string
	}{
		{profile.Latency, "latency percentiles and the 7-day baseline"},
		{profile.QueueTime, "the queue segment (queue cause)"},
		{profile.ComputeTime, "the compute segment (compute cause)"},
		{profile.LoadState, "the load state (warm-up is found from restarts and counter resets only)"},
	} {
		if _, ok, why := r.e.Profile.Resolve(g.role, r.e.Present); !ok {
			r.notice(fmt.Sprintf("%s is not read: %s", g.what, why))
		}
	}
	if why, ok := r.e.NetworkSource(); !ok {
		r.notice("the network / gateway segment (network cause) is not read: " + why)
	}
}

// readInstances finds the instances that serve the question's model (in either window) with
// their traffic, adds them to the readings and returns their names, sorted.
func (r *reader) readInstances(ctx context.Context) ([]string, error) {
	o, rd := r.o, r.rd
	sel := r.sel(o.Model)
	if o.Version != "" && r.verLbl != "" {
		sel.Version = []string{o.Version}
	}
	if o.Instance != "" {
		sel.Instance = []string{o.Instance}
	}
	res, err := r.run(ctx, engine.Throughput{Select: sel, By: "instance"})
	if err != nil {
		return nil, err
	}
	var names []string
	qps := map[string]Pair{}
	last := map[string]float64{}
	for _, s := range res.Series {
		in := s.Labels[r.instLbl]
		if in == "" || !anyFinite(s.V) || (rd.Node != "" && nodeOf(in) != rd.Node) {
			continue
		}
		names = append(names, in)
		qps[in] = r.level(s)
		last[in] = r.pair(s, lastOf).Now
	}
	if o.Instance != "" && len(names) == 0 {
		names = []string{o.Instance}
	}
	sort.Strings(names)
	r.names = names
	if len(names) == 0 {
		where := ""
		if rd.Node != "" {
			where = " on node " + rd.Node
		}
		r.notice(fmt.Sprintf("no instance%s served %s in %s–%s", where, subjectText(o.Model, o.Version), rd.Before.Start.Format(time.RFC3339), o.To.Format(time.RFC3339)))
	}
	for _, n := range names {
		q, ok := qps[n]
		if !ok {
			q = nanPair()
		}
		l, ok := last[n]
		if !ok {
			l = math.NaN()
		}
		rd.Instances = append(rd.Instances, Instance{Name: n, Node: nodeOf(n), QPS: q, QPSBaseline: math.NaN(), QPSLast: l,
			GPUMem: nanPair(), GPUUtil: nanPair(), GPUMemPeak: math.NaN(), GPUMemLast: math.NaN(), XID: nanPair(), ECCUncorrected: nanPair(), ECCCorrected: nanPair(),
			CacheHit: nanPair(), Waiting: nanPair(), QueueDepth: nanPair(), Preemption: nanPair(), InputMean: nanPair(),
			BatchSize: nanPair(), Confidence: nanPair(), Fallback: nanPair(), WaitingDeferred: nanPair(), KVCache: nanPair(),
			KVCachePeak: math.NaN(), PreemptionPeak: math.NaN()})
	}
	return names, nil
}

// modelTrafficJob reads the model's traffic over all its instances, for a question that sees
// only some of them.
func (r *reader) modelTrafficJob() func(context.Context) error {
	return func(ctx context.Context) error {
		sel := r.sel(r.o.Model)
		if r.o.Version != "" && r.verLbl != "" {
			sel.Version = []string{r.o.Version}
		}
		res, err := r.run(ctx, engine.Throughput{Select: sel, By: "instance"})
		if err != nil {
			r.notice(fmt.Sprintf("the model's traffic over all its instances is missing: %v", err))
			return nil
		}
		total := Pair{}
		n := 0
		byInstance := map[string]Pair{}
		for _, s := range res.Series {
			p := r.level(s)
			if finite(p.Before) && finite(p.Now) {
				total.Before += p.Before
				total.Now += p.Now
				n++
			}
			if in := s.Labels[r.instLbl]; in != "" && finite(p.Before) {
				// An instance that stopped answering serves 0 now.
				b := byInstance[in]
				b.Before += p.Before
				b.Now += nanZero(p.Now)
				byInstance[in] = b
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if n > 0 {
			r.rd.ModelQPS = total
		}
		if len(byInstance) > 0 {
			r.rd.ModelByInstance = byInstance
		}
		return nil
	}
}

// addSubjects adds the subjects read: the selected version (or every version) on each
// instance, in instance then version order.
func (r *reader) addSubjects(names []string, subjects []map[string]*Subject) {
	for i, n := range names {
		keys := make([]string, 0, len(subjects[i]))
		for v := range subjects[i] {
			keys = append(keys, v)
		}
		sort.Strings(keys)
		for _, v := range keys {
			s := subjects[i][v]
			s.Instance, s.Version = n, v
			r.rd.Subjects = append(r.rd.Subjects, *s)
		}
	}
}

// sel selects a model on instances, with the triage's rate window (the service types' and the
// GPU-idle condition's; gpu and baseline queries keep their own).
func (r *reader) sel(model string, instances ...string) engine.Select {
	return engine.Select{Model: []string{model}, Instance: instances, RateInterval: r.rate, LastInterval: r.o.lastInterval}
}

// run builds and runs one engine query, counting its Prometheus queries and keeping its
// notices and warm-up intervals.
func (r *reader) run(ctx context.Context, front engine.Front) (*engine.Result, error) {
	q, err := front.Query()
	if err != nil {
		// The kind is ErrOptions: the engine's FieldError names a field of the query built
		// here, not an option the caller set, so errors.As must not find it; it stays text.
		return nil, fmt.Errorf("%w: %v", ErrOptions, err) //nolint:errorlint // see above
	}
	res, err := r.e.Run(ctx, q, r.rng)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rd.Queries += len(res.Queries)
	for _, n := range res.Notices {
		if n.Severity != engine.Info {
			r.noticeLocked(n.Text)
		}
	}
	for _, w := range res.Warmup {
		if w.Model != "" && w.Model != r.o.Model {
			continue
		}
		key := fmt.Sprintf("%s|%d|%d|%s", w.Instance, w.Start.UnixMilli(), w.End.UnixMilli(), w.Reason)
		in := r.rd.instance(w.Instance)
		if in == nil || r.warmSeen[key] {
			continue
		}
		r.warmSeen[key] = true
		in.Warmup = append(in.Warmup, Warmup{Start: w.Start, End: w.End, Reason: w.Reason})
	}
	return res, nil
}

func (r *reader) notice(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noticeLocked(s)
}

func (r *reader) noticeLocked(s string) {
	if !r.noticed[s] {
		r.noticed[s] = true
		r.rd.Notices = append(r.rd.Notices, s)
	}
}

// serviceJobs read the service-level types on one instance, every version of the model (the
// versions are compared with each other), keeping the selected one.
func (r *reader) serviceJobs(instance string, subjects map[string]*Subject) []func(context.Context) error {
	var mu sync.Mutex
	get := func(labels map[string]string) *Subject {
		v := labels[r.verLbl]
		if r.verLbl == "" {
			v = ""
		}
		mu.Lock()
		defer mu.Unlock()
		s, ok := subjects[v]
		if !ok {
			s = &Subject{QPS: nanPair(), P50: nanPair(), P95: nanPair(), P99: nanPair(), Jitter: nanPair(), P95Raw: nanPair(),
				BaselineRatio: math.NaN(), BaselineP95: math.NaN(), Queue: nanPair(), Compute: nanPair(), Network: nanPair(),
				Prefill: nanPair(), Decode: nanPair(),
				ErrorRatio: nanPair(), TimeoutRatio: nanPair()}
			subjects[v] = s
		}
		return s
	}
	sel := r.sel(r.o.Model, instance)
	type target struct {
		name string
		read func(engine.Series) Pair // r.level, or means on both sides
		set  func(s *Subject, p Pair)
	}
	means := func(s engine.Series) Pair { return r.pair(s, mean) }
	job := func(typ string, front engine.Front, targets ...target) func(context.Context) error {
		return func(ctx context.Context) error {
			res, err := r.run(ctx, front)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", typ, instance, err)
			}
			for _, s := range res.Series {
				for _, t := range targets {
					if s.Name == t.name {
						p := t.read(s)
						sub := get(s.Labels)
						mu.Lock()
						t.set(sub, p)
						mu.Unlock()
					}
				}
			}
			return nil
		}
	}
	return []func(context.Context) error{
		job("throughput", engine.Throughput{Select: sel, By: "version"}, target{"qps", r.level, func(s *Subject, p Pair) { s.QPS = p }}),
		job("latency", engine.Latency{Select: sel},
			target{"p50", r.level, func(s *Subject, p Pair) { s.P50 = p }},
			target{"p95", r.level, func(s *Subject, p Pair) { s.P95 = p }},
			target{"p99", r.level, func(s *Subject, p Pair) { s.P99 = p }}),
		job("jitter", engine.Jitter{Select: sel}, target{"jitter", r.level, func(s *Subject, p Pair) { s.Jitter = p }}),
		job("split", engine.Split{Select: sel},
			target{"queue", r.level, func(s *Subject, p Pair) { s.Queue = p }},
			target{"compute", r.level, func(s *Subject, p Pair) { s.Compute = p }},
			target{"network", r.level, func(s *Subject, p Pair) { s.Network = p }},
			target{"prefill", r.level, func(s *Subject, p Pair) { s.Prefill = p }},
			target{"decode", r.level, func(s *Subject, p Pair) { s.Decode = p }}),
		job("errors", engine.Errors{Select: sel},
			target{"error_ratio", means, func(s *Subject, p Pair) { s.ErrorRatio = p }},
			target{"timeout_ratio", means, func(s *Subject, p Pair) { s.TimeoutRatio = p }}),
		job("baseline", engine.Baseline{Select: engine.Select{Model: sel.Model, Instance: sel.Instance}},
			target{"ratio", means, func(s *Subject, p Pair) { s.BaselineRatio = p.Now }},
			target{"baseline", means, func(s *Subject, p Pair) { s.BaselineP95 = p.Now }}),
	}
}

// rawLatencyJob reads the P95 of an instance that warmed up, without the warm-up filter.
func (r *reader) rawLatencyJob(instance string) func(context.Context) error {
	return func(ctx context.Context) error {
		sel := r.sel(r.o.Model, instance)
		sel.KeepWarmup = true
		res, err := r.run(ctx, engine.Latency{Select: sel, Quantiles: []float64{0.95}})
		if err != nil {
			return fmt.Errorf("latency without the warm-up filter on %s: %w", instance, err)
		}
		for _, s := range res.Series {
			if s.Name != "p95" {
				continue
			}
			v := s.Labels[r.verLbl]
			for i := range r.rd.Subjects {
				sub := &r.rd.Subjects[i]
				if sub.Instance == instance && (r.verLbl == "" || sub.Version == v) {
					sub.P95Raw = r.level(s)
				}
			}
		}
		return nil
	}
}

// gpuJob reads the nodes' GPU memory and utilisation.
func (r *reader) gpuJob(instances []string) func(context.Context) error {
	return func(ctx context.Context) error {
		res, err := r.run(ctx, engine.GPU{Select: r.gpuSel(engine.Select{Instance: instances}), Metrics: []engine.GPUMetric{engine.GPUMemory, engine.GPUUtil}})
		if err != nil {
			r.notice(fmt.Sprintf("GPU readings are missing: %v", err))
			return nil
		}
		byNode := map[string][]engine.Series{}
		for _, s := range res.Series {
			byNode[s.Labels["node"]+"|"+s.Name] = append(byNode[s.Labels["node"]+"|"+s.Name], s)
		}
		if len(res.Series) == 0 && r.o.GPU != "" {
			r.notice(fmt.Sprintf("no series for GPU %s of %s: the GPU steps have nothing to read (is the GPU index right? is the probe or dcgm-exporter scraped?)", r.o.GPU, r.rd.Node))
		} else if len(res.Series) == 0 {
			r.notice("no GPU series for these instances' nodes: the GPU steps have nothing to read (is the probe or dcgm-exporter scraped?)")
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for i := range r.rd.Instances {
			in := &r.rd.Instances[i]
			if mem := byNode[in.Node+"|memory"]; len(mem) > 0 {
				m := across(mem, math.Max)
				in.GPUMem = r.pair(m, mean)
				in.GPUMemPeak = r.pair(m, maxOf).Now
				in.GPUMemLast = r.pair(m, lastOf).Now
			}
			if util := byNode[in.Node+"|util"]; len(util) > 0 {
				in.GPUUtil = r.pair(across(util, math.Min), minOf)
				for _, u := range util {
					// Worked before the window asked about, idle from some point of it to its end:
					// a change point may have narrowed the window past the moment the GPU stopped
					// (a gauge drops at once, the rates a point later).
					lo := pointsPair(u.T, u.V, r.rd.Before.Start, r.eventsFrom(), r.o.To, minOf)
					if lo.Before > 0 && idleAtEnd(u.T, u.V, r.eventsFrom(), r.rd.Window.End) {
						in.WentIdle = appendUnique(in.WentIdle, u.Labels["gpu"])
					}
				}
			}
		}
		return nil
	}
}

// idleJob runs the engine's GPU-idle-under-traffic condition, which also gives the node's
// 7-day same-time-of-day QPS of the model.
func (r *reader) idleJob(instances []string) func(context.Context) error {
	return func(ctx context.Context) error {
		sel := r.sel(r.o.Model, instances...)
		if r.o.Version != "" && r.verLbl != "" {
			sel.Version = []string{r.o.Version}
		}
		res, err := r.run(ctx, engine.GPUIdleUnderTraffic{Select: r.gpuSel(sel)})
		if err != nil {
			r.notice(fmt.Sprintf("the GPU-idle-under-traffic reading is missing: %v", err))
			return nil
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range res.Series {
			node := s.Labels["node"]
			for i := range r.rd.Instances {
				in := &r.rd.Instances[i]
				if in.Node != node {
					continue
				}
				switch s.Name {
				case "idle_under_traffic":
					if r.pair(s, maxOf).Now >= 1 {
						in.IdleGPUs = appendUnique(in.IdleGPUs, s.Labels["gpu"])
					}
				case "qps_baseline":
					in.QPSBaseline = r.pair(s, mean).Now
				}
			}
		}
		return nil
	}
}

// gpuSel adds the GPU the question names to a GPU type's selection.
func (r *reader) gpuSel(s engine.Select) engine.Select {
	if r.o.GPU != "" {
		s.GPU = []string{r.o.GPU}
	}
	return s
}

// pair splits a series' points into the reference window and the window and aggregates each.
// A point at t stands for the rate window ending at t: points in (before.start, from] are the
// reference, points in (from, to] the window.
func (r *reader) pair(s engine.Series, agg func([]float64) float64) Pair {
	return pointsPair(s.T, s.V, r.rd.Before.Start, r.rd.Window.Start, r.rd.Window.End, agg)
}

// level is a service reading's pair: the window's mean against the level the hour before held
// (its median). The hour before is the reference of normal; an earlier incident that took part
// of it (a neighbour's lost capacity that sent its traffic here for twenty minutes) would raise
// its mean, and a change of the same size in the window would then read as none.
func (r *reader) level(s engine.Series) Pair {
	return pointsPairBy(s.T, s.V, r.rd.Before.Start, r.rd.Window.Start, r.rd.Window.End, median, mean)
}

// idleAtEnd says whether the series sits at zero from some point in (from, to] to its last point
// there, over at least two points (a reading repeated, not one scrape's blip): a GPU that stopped
// a minute before the question stopped in the window as much as one idle through it.
func idleAtEnd(t []int64, v []float64, from, to time.Time) bool {
	f, e := from.UnixMilli(), to.UnixMilli()
	zeros := 0
	for i, ts := range t {
		if ts <= f || ts > e || i >= len(v) || math.IsNaN(v[i]) {
			continue
		}
		if v[i] == 0 {
			zeros++
		} else {
			zeros = 0
		}
	}
	return zeros >= 2
}

func pointsPair(t []int64, v []float64, start, from, to time.Time, agg func([]float64) float64) Pair {
	return pointsPairBy(t, v, start, from, to, agg, agg)
}

// pointsPairBy is pointsPair with an aggregate of its own for each side.
func pointsPairBy(t []int64, v []float64, start, from, to time.Time, before, now func([]float64) float64) Pair {
	var b, n []float64
	s, f, e := start.UnixMilli(), from.UnixMilli(), to.UnixMilli()
	for i, ts := range t {
		if i >= len(v) || math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
			continue
		}
		switch {
		case ts > s && ts <= f:
			b = append(b, v[i])
		case ts > f && ts <= e:
			n = append(n, v[i])
		}
	}
	return Pair{before(b), now(n)}
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// lastOf is the last of the points (NaN when there are none).
func lastOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return v[len(v)-1]
}

// minOf and maxOf are the lowest and highest of the points (NaN when there are none).
var minOf, maxOf = fold(math.Min), fold(math.Max)

func fold(f func(a, b float64) float64) func([]float64) float64 {
	return func(v []float64) float64 {
		if len(v) == 0 {
			return math.NaN()
		}
		m := v[0]
		for _, x := range v[1:] {
			m = f(m, x)
		}
		return m
	}
}

// across combines series on one grid point by point (max or min over GPUs), skipping gaps.
func across(ss []engine.Series, f func(a, b float64) float64) engine.Series {
	out := engine.Series{T: ss[0].T, V: make([]float64, len(ss[0].T))}
	for i := range out.V {
		out.V[i] = math.NaN()
		for _, s := range ss {
			if i < len(s.V) && !math.IsNaN(s.V[i]) {
				if math.IsNaN(out.V[i]) {
					out.V[i] = s.V[i]
				} else {
					out.V[i] = f(out.V[i], s.V[i])
				}
			}
		}
	}
	return out
}

func anyFinite(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return true
		}
	}
	return false
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	list = append(list, v)
	sort.Strings(list)
	return list
}

// nodeOf is an instance's node: its address without the port (the engine's GPU join rule).
func nodeOf(instance string) string { return engine.InstanceNode(instance) }

func subjectText(model, version string) string {
	if version != "" {
		return model + " " + version
	}
	return model
}

// extraJobs read the framework and business signals that have no query type of their own,
// by PromQL through the profile (not warm-up filtered; the warm-up cause says so).
func (r *reader) extraJobs() []func(context.Context) error {
	type reading struct {
		what     string
		num, den profile.Role // den "" = the numerator's value itself
		set      func(in *Instance, p Pair)
		peak     func(in *Instance, v float64) // the highest point in the window, where it counts
	}
	readings := []reading{
		{"cache hit rate", profile.CacheHits, profile.CacheQueries, func(in *Instance, p Pair) { in.CacheHit = p }, nil},
		{"waiting requests", profile.Waiting, "", func(in *Instance, p Pair) { in.Waiting = p }, nil},
		{"queue depth", profile.QueueDepth, "", func(in *Instance, p Pair) { in.QueueDepth = p }, nil},
		{"deferred waiting requests", profile.WaitingDeferred, "", func(in *Instance, p Pair) { in.WaitingDeferred = p }, nil},
		{"KV-cache usage", profile.KVCacheUsage, "", func(in *Instance, p Pair) { in.KVCache = p },
			func(in *Instance, v float64) { in.KVCachePeak = v }},
		{"preemptions per request", profile.Preemptions, profile.Requests, func(in *Instance, p Pair) { in.Preemption = p },
			func(in *Instance, v float64) { in.PreemptionPeak = v }},
		{"mean input length", profile.InputLength, "", func(in *Instance, p Pair) { in.InputMean = p }, nil},
		{"batch size", profile.BatchSize, "", func(in *Instance, p Pair) { in.BatchSize = p }, nil},
		{"mean confidence", profile.Confidence, "", func(in *Instance, p Pair) { in.Confidence = p }, nil},
		{"fallback share", profile.Fallback, profile.Requests, func(in *Instance, p Pair) { in.Fallback = p }, nil},
	}
	wq, okW, _ := r.e.Profile.Resolve(profile.Waiting, r.e.Present)
	qd, okQ, _ := r.e.Profile.Resolve(profile.QueueDepth, r.e.Present)
	same := okW && okQ && strings.Join(wq.Metrics, ",") == strings.Join(qd.Metrics, ",")
	var instances []string
	switch {
	case r.o.Instance != "":
		instances = []string{r.o.Instance}
	case r.rd.Node != "" && len(r.names) > 0:
		instances = r.names
	}
	step := r.rng.MinStep
	var jobs []func(context.Context) error
	for _, rdg := range readings {
		q := engine.RoleQuery{Num: rdg.num, Den: rdg.den, Model: r.o.Model, Instances: instances, Rate: r.rate, LastInterval: r.o.lastInterval,
			Start: r.rng.EndAlignedStart(step), End: r.rng.End, Step: step}
		jobs = append(jobs, func(ctx context.Context) error {
			series, why, err := r.prom.RoleReading(ctx, q)
			if why != "" {
				// Waiting by reason only refines the waiting count, and KV-cache usage replaces GPU
				// memory only where a server has it: a server without them needs no notice.
				if rdg.num != profile.WaitingDeferred && rdg.num != profile.KVCacheUsage {
					r.notice(fmt.Sprintf("%s is not read: %s", rdg.what, why))
				}
				return nil
			}
			if err != nil {
				r.notice(fmt.Sprintf("%s could not be read: %v", rdg.what, err))
				return nil
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, s := range series {
				if in := r.rd.instance(s.Labels[r.instLbl]); in != nil {
					rdg.set(in, pointsPair(s.T, s.V, r.rd.Before.Start, r.rd.Window.Start, r.rd.Window.End, mean))
					if rdg.peak != nil {
						rdg.peak(in, pointsPair(s.T, s.V, r.rd.Before.Start, r.rd.Window.Start, r.rd.Window.End, maxOf).Now)
					}
					in.WaitingIsQueue = same
				}
			}
			return nil
		})
	}
	return jobs
}

// hardwareJob counts XID events and uncorrected ECC errors in each window and lists the active
// hardware clock-event reasons of the instances' nodes.
func (r *reader) hardwareJob(instances []string) func(context.Context) error {
	return func(ctx context.Context) error {
		var nodes []string
		for _, in := range instances {
			if n := nodeOf(in); !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
		hw, err := r.prom.HardwareReadings(ctx, engine.HardwareQuery{Nodes: nodes, GPU: r.o.GPU, From: r.eventsFrom(), To: r.o.To, Before: r.o.Before})
		if hw.Missing != "" {
			r.notice(hw.Missing + ": the hardware step has nothing to read")
			return nil
		}
		if err != nil {
			r.notice(fmt.Sprintf("hardware readings could not be read: %v", err))
		}
		for _, why := range hw.NotMeasured {
			r.notice(why)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for i := range r.rd.Instances {
			in := &r.rd.Instances[i]
			if h := hw.Nodes[in.Node]; h != nil {
				in.XID = Pair{h.XIDBefore, h.XIDNow}
				in.ECCUncorrected = Pair{h.ECCBefore, h.ECCNow}
				in.ECCCorrected = Pair{h.CorrectedBefore, h.CorrectedNow}
				in.ThrottleMeasured = h.ThrottleMeasured
				for _, t := range h.Throttle {
					in.Throttle = appendUnique(in.Throttle, t)
				}
			}
		}
		return nil
	}
}

// eventsFrom is where events count as the window's: the window asked about, before a change
// point narrowed it (an XID or a GPU stopping a minute before the latency moved is still the
// window's event).
func (r *reader) eventsFrom() time.Time {
	if !r.o.eventsFrom.IsZero() && r.o.eventsFrom.Before(r.o.From) {
		return r.o.eventsFrom
	}
	return r.o.From
}

// deployStep is the grid the deploy events are looked for on: a version's first appearance is
// known to within it.
const deployStep = 5 * time.Minute

// deployJob finds the model's versions that appeared on its instances in the DeployLookback
// before the window or in it (the engine's deploy events).
func (r *reader) deployJob(instances []string) func(context.Context) error {
	return func(ctx context.Context) error {
		if r.verLbl == "" || r.e.Profile.ModelLabel == "" {
			return nil // no version to tell apart: "not measured"
		}
		ds, err := r.prom.DeployEvents(ctx, r.o.From.Add(-DeployLookback), r.o.To, deployStep)
		if err != nil {
			r.notice(fmt.Sprintf("version changes could not be read: %v", err))
			return nil
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.rd.DeploysRead = true
		for _, d := range ds {
			if d.Model == r.o.Model && slices.Contains(instances, d.Instance) {
				r.rd.Deploys = append(r.rd.Deploys, Deploy{Instance: d.Instance, Version: d.Version, At: d.At})
			}
		}
		return nil
	}
}
