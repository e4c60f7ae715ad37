package alerting

import (
	"fmt"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/profile"
)

// Severity is a rule's urgency: P0 pages (phone + urgent chat), P1 goes to the normal chat,
// P2 is recorded and never sent.
type Severity string

// Severities.
const (
	P0 Severity = "P0"
	P1 Severity = "P1"
	P2 Severity = "P2"
)

// Scope says what a rule's alerts are about: a model version on an instance, or one GPU.
type Scope string

// Scopes.
const (
	ScopeService Scope = "service"
	ScopeGPU     Scope = "gpu"
)

// Labels every rendered alert carries.
const (
	SeverityLabel    = "severity"
	RuleLabel        = "inferscope_rule"
	ManagedLabel     = "inferscope_managed"     // "true": Inferscope made the rule and may replace it
	ObservationLabel = "inferscope_observation" // "true": evaluated and recorded, never sent
	ScopeLabel       = "inferscope_scope"       // service or gpu: which labels identify the subject
	// Normalised context labels (whatever the server's own label names are).
	ModelLabel    = "model"
	VersionLabel  = "version"
	InstanceLabel = "instance"
	GPULabel      = "gpu"
	NodeOutLabel  = "node"
)

// Rule is one entry of the catalog, as people read it.
type Rule struct {
	ID        string        `json:"id"`
	Alert     string        `json:"alert"` // alert name (Prometheus alertname, Grafana title)
	Title     string        `json:"title"`
	Severity  Severity      `json:"severity"`
	Scope     Scope         `json:"scope"`
	Condition string        `json:"condition"`
	For       time.Duration `json:"-"`
	ForText   string        `json:"for"`
	// Why carries the lesson behind the rule and what to look at first.
	Why string `json:"why"`
	// Unavailable says why the metric profile cannot feed this rule ("" = available); over
	// several servers, why none of them can.
	Unavailable string `json:"unavailable,omitempty"`
	// UnavailableOn, over several servers, says for each server that cannot feed the rule why
	// (the rule is rendered for the others).
	UnavailableOn map[string]string `json:"unavailableOn,omitempty"`
	// NotMeasured, when the fleet's metric names are known (Params.SetPresent), says that the
	// rule's signal is exported by none of its exporters there and what to enable: the rule is
	// rendered, but cannot fire until the signal is exported — it is not a reading of 0.
	NotMeasured string `json:"notMeasured,omitempty"`
}

type spec struct {
	id, alert, title string
	sev              Severity
	scope            Scope
	cond             func(p Params) string
	hold             func(p Params) time.Duration
	why              string
	// needs says why the profile cannot feed the rule, "" when it can.
	needs func(b *builder) string
}

func at(d time.Duration) func(Params) time.Duration { return func(Params) time.Duration { return d } }

func pct(x float64) string { return fmt.Sprintf("%s %%", fmtFloat(x*100)) }

// specs is the catalog, in display order.
var specs = []spec{
	{
		id: "latency-p0", alert: "InferscopeLatencyCritical", title: "Latency far above its baseline", sev: P0, scope: ScopeService,
		cond: func(p Params) string {
			return fmt.Sprintf("P%s latency (the mean on servers without a latency histogram) > %s× the mean of the same ±%s time-of-day window on the previous %d days (at least %d with data; a version with fewer is judged against its model's baseline on the instance)",
				fmtFloat(p.LatencyQuantile*100), fmtFloat(p.LatencyCritRatio), promDuration(p.BaselineWindow), p.BaselineDays, p.BaselineMinDays)
		},
		hold:  func(p Params) time.Duration { return p.LatencyCritFor },
		why:   "Users feel it now. Row 1 of the overview first (anything saturated?), then did QPS change with it, then the queue/compute split.",
		needs: latencyNeeds,
	},
	{
		id: "latency-p1", alert: "InferscopeLatencyHigh", title: "Latency above its baseline", sev: P1, scope: ScopeService,
		cond: func(p Params) string {
			return fmt.Sprintf("P%s latency (the mean on servers without a latency histogram) > %s× its same-time-of-day baseline", fmtFloat(p.LatencyQuantile*100), fmtFloat(p.LatencyWarnRatio))
		},
		hold:  func(p Params) time.Duration { return p.LatencyWarnFor },
		why:   "A sustained rise that has not reached the P0 line yet; compare with yesterday at the same time.",
		needs: latencyNeeds,
	},
	{
		id: "network-p1", alert: "InferscopeNetworkLatencyHigh", title: "Latency at the gateway above its baseline", sev: P1, scope: ScopeService,
		cond: func(p Params) string {
			return fmt.Sprintf("P%s of the gateway's upstream time per model and instance, less the rise of the service's own P%s over its baseline, > %s× the gateway's same-time-of-day baseline: the time added outside the service alone passes the line",
				fmtFloat(p.LatencyQuantile*100), fmtFloat(p.LatencyQuantile*100), fmtFloat(p.LatencyWarnRatio))
		},
		hold: func(p Params) time.Duration { return p.LatencyWarnFor },
		why: "Users wait longer, but not in the service: the time is added between the gateway and the instance (a switch, a link, the gateway itself). " +
			"Look at the network segment of the split and at the instance's host, not at the model.",
		needs: func(b *builder) string {
			if !b.hasGateway() {
				_, why := b.measure(profile.NetworkTime, profile.Histogram)
				return why + " (or a gateway configured in front of the servers)"
			}
			if b.model == "" {
				return "the profile has no model label to join the gateway's series with"
			}
			return latencyNeeds(b)
		},
	},
	{
		id: "gpumem-p0", alert: "InferscopeGPUMemoryCritical", title: "GPU memory nearly full", sev: P0, scope: ScopeGPU,
		cond:  func(p Params) string { return "GPU memory used > " + pct(p.GPUMemCrit) },
		hold:  func(p Params) time.Duration { return p.GPUMemCritFor },
		why:   "Near the limit a burst that grows the batches forces reallocation and saw-tooth latency, worse than an OOM to debug. Check the last deploy's memory footprint.",
		needs: func(*builder) string { return "" },
	},
	{
		id: "gpumem-p1", alert: "InferscopeGPUMemoryHigh", title: "GPU memory high", sev: P1, scope: ScopeGPU,
		cond:  func(p Params) string { return "GPU memory used > " + pct(p.GPUMemWarn) },
		hold:  func(p Params) time.Duration { return p.GPUMemWarnFor },
		why:   "Headroom is shrinking; see the memory forecast and what changed (model version, batch size).",
		needs: func(*builder) string { return "" },
	},
	{
		id: "gpu-idle-p0", alert: "InferscopeGPUIdleUnderTraffic", title: "GPU idle while traffic flows", sev: P0, scope: ScopeGPU,
		cond: func(p Params) string {
			return fmt.Sprintf("GPU utilisation 0 for %s while the node's QPS > %s of its same-time-of-day baseline and its models are ready",
				promDuration(p.GPUIdleFor), pct(p.GPUIdleQPSFraction))
		},
		hold: at(0),
		why:  "The GPU is asleep or lost its context while requests arrive (look for an XID). Traffic and readiness are required because without them this fired during every deploy.",
		needs: func(b *builder) string {
			if !b.has(profile.Requests, profile.Counter) {
				return "the profile has no request counter"
			}
			return ""
		},
	},
	{
		id: "errors-p0", alert: "InferscopeErrorRate", title: "Error rate high", sev: P0, scope: ScopeService,
		cond: func(p Params) string { return "share of failed requests > " + pct(p.ErrorRatio) },
		hold: func(p Params) time.Duration { return p.ErrorFor },
		why:  "Requests are failing; check the error codes and the last deploy.",
		needs: func(b *builder) string {
			if _, why := b.measure(profile.Errors, profile.Counter); why != "" {
				return why
			}
			_, why := b.measure(profile.Requests, profile.Counter)
			return why
		},
	},
	{
		id: "jitter-p1", alert: "InferscopeLatencyJitter", title: "Jitter source on the path", sev: P1, scope: ScopeService,
		cond: func(p Params) string { return fmt.Sprintf("P99/P50 > %s", fmtFloat(p.JitterRatio)) },
		hold: func(p Params) time.Duration { return p.JitterFor },
		why:  "A jitter source sits on the critical path (allocation, context switches, weights moving, the network). Compare the gateway's time with the service's.",
		needs: func(b *builder) string {
			_, why := b.measure(profile.Latency, profile.Histogram)
			return why
		},
	},
	{
		id: "queue-p1", alert: "InferscopeQueueDominating", title: "Queue time dominating", sev: P1, scope: ScopeService,
		cond: func(p Params) string { return "queue time > " + pct(p.QueueShare) + " of the service's mean time" },
		hold: func(p Params) time.Duration { return p.QueueFor },
		why:  "Compute is fine but requests wait: too much concurrency or a batching policy that lets the queue grow.",
		needs: func(b *builder) string {
			kinds := []profile.Kind{profile.Histogram, profile.Summary, profile.MicrosecondCounter}
			if _, why := b.measure(profile.QueueTime, kinds...); why != "" {
				return why
			}
			_, why := b.measure(profile.ComputeTime, kinds...)
			return why
		},
	},
	{
		id: "xid-p1", alert: "InferscopeGPUXID", title: "XID error on a GPU", sev: P1, scope: ScopeGPU,
		cond: func(p Params) string {
			return fmt.Sprintf("an XID event of any code on the GPU within the last %s, each event counted once whichever form its exporter writes", promDuration(p.XIDWindow))
		},
		hold: at(0),
		why: "The driver reported a GPU fault. The code says which: some are hardware (48/94/95 ECC, 79 off the bus, 119/120 GSP), for which the node is drained; some are the application's (13, 31, 43: restart it). " +
			"What users feel pages through latency, errors and idle GPU; look at the code (err_code/err_msg) and the models on the GPU.",
		needs: func(b *builder) string {
			if b.xidEvents(time.Minute) == "" {
				return "the GPU naming " + b.p.GPUNaming + " has no XID field"
			}
			return ""
		},
	},
	{
		id: "gpu-throttle-p1", alert: "InferscopeGPUClocksHeldDown", title: "GPU clocks held down by the hardware", sev: P1, scope: ScopeGPU,
		cond: func(Params) string {
			return "a hardware clock-event reason active on the GPU: HW slowdown, SW or HW thermal slowdown, or HW power brake (not the power cap, idle or application clocks, which are normal operation)"
		},
		hold: func(p Params) time.Duration { return p.GPUThrottleFor },
		why: "The hardware slows the GPU to protect itself: it is too hot (check the cooling, fans, inlet air) or its power supply asks it to brake (check the PSU and the rack's power). " +
			"Every kernel on it runs slower; what users feel pages through latency. A brief flicker is not a page, hence the hold.",
		needs: func(b *builder) string {
			if b.hardwareThrottle() == "" {
				return "the GPU naming " + b.p.GPUNaming + " has no clock-event field"
			}
			return ""
		},
	},
	{
		id: "gpu-ecc-p1", alert: "InferscopeGPUUncorrectedECC", title: "Uncorrected ECC error on a GPU", sev: P1, scope: ScopeGPU,
		cond: func(p Params) string {
			return fmt.Sprintf("the GPU's uncorrected (double-bit) ECC error count grew within the last %s (corrected errors are not counted; a counter reset or an exporter restart is not an error)", promDuration(p.XIDWindow))
		},
		hold: at(0),
		why: "The GPU's memory lost data it could not correct: the process that used it may have computed on corrupt data or crashed (XID 48/94/95). " +
			"Drain the node's work off the GPU and reset it (the page is retired or remapped at the reset); a GPU that does it again is replaced. What users feel pages through latency and errors.",
		needs: func(b *builder) string {
			if b.eccErrors(time.Minute) == "" {
				return "the GPU naming " + b.p.GPUNaming + " has no ECC field"
			}
			return ""
		},
	},
	{
		id: "gpumem-forecast-p2", alert: "InferscopeGPUMemoryForecast", title: "GPU memory heading for the limit", sev: P2, scope: ScopeGPU,
		cond: func(p Params) string {
			return fmt.Sprintf("the %s trend of GPU memory crosses %s within %s", promDuration(p.ForecastWindow), pct(p.ForecastThreshold), promDuration(p.ForecastHorizon))
		},
		hold:  at(0),
		why:   "Recorded for trend review: memory will reach the P0 line if nothing changes.",
		needs: func(*builder) string { return "" },
	},
	{
		id: "cache-drop-p2", alert: "InferscopeCacheHitRateDrop", title: "Cache hit rate dropped", sev: P2, scope: ScopeService,
		cond: func(p Params) string {
			return fmt.Sprintf("cache hit rate < %s of its same-time-of-day baseline", pct(p.CacheDropRatio))
		},
		hold: func(p Params) time.Duration { return p.CacheDropFor },
		why:  "Recorded for review: fewer prefix/response cache hits cost compute (input distribution shift?).",
		needs: func(b *builder) string {
			if _, why := b.measure(profile.CacheHits, profile.Counter); why != "" {
				return why
			}
			_, why := b.measure(profile.CacheQueries, profile.Counter)
			return why
		},
	},
	{
		id: "warmup-long-p2", alert: "InferscopeWarmupLong", title: "Warm-up longer than usual", sev: P2, scope: ScopeService,
		cond: func(p Params) string {
			return fmt.Sprintf("a model is still not ready %s after its instance started", promDuration(p.WarmupMaxLoad))
		},
		hold: at(0),
		why:  "Recorded for review: slow loads delay recovery after restarts and deploys.",
		needs: func(b *builder) string {
			_, why := b.measure(profile.LoadState, profile.Gauge)
			return why
		},
	},
}

// Catalog lists the rules with their conditions for the given parameters; rules the metric
// profile cannot feed say why. Over several servers a rule is available when any server can
// feed it; UnavailableOn names the others.
func Catalog(p Params) ([]Rule, error) {
	bs, err := newBuilders(p)
	if err != nil {
		return nil, err
	}
	out := make([]Rule, len(specs))
	for i, s := range specs {
		d := s.hold(p)
		out[i] = Rule{ID: s.id, Alert: s.alert, Title: s.title, Severity: s.sev, Scope: s.scope,
			Condition: s.cond(p), For: d, ForText: promDuration(d), Why: s.why}
		out[i].NotMeasured = notMeasured(p, s)
		if len(bs) == 1 {
			out[i].Unavailable = s.needs(bs[0])
			continue
		}
		var whys []string
		for _, b := range bs {
			if why := s.needs(b); why != "" {
				if out[i].UnavailableOn == nil {
					out[i].UnavailableOn = map[string]string{}
				}
				out[i].UnavailableOn[b.server] = why
				whys = append(whys, b.server+": "+why)
			}
		}
		if len(whys) == len(bs) {
			out[i].Unavailable, out[i].UnavailableOn = strings.Join(whys, "; "), nil
		}
	}
	return out, nil
}

// feeds lists the builders that can feed the rule.
func feeds(bs []*builder, s spec) []*builder {
	var out []*builder
	for _, b := range bs {
		if s.needs(b) == "" {
			out = append(out, b)
		}
	}
	return out
}

func specByID(id string) (spec, bool) {
	for _, s := range specs {
		if s.id == id {
			return s, true
		}
	}
	return spec{}, false
}

// gpuSignals are the GPU signals each GPU rule reads (a memory rule also reads the KV cache of
// the servers that pre-allocate).
var gpuSignals = map[string][]gpufields.Signal{
	"gpumem-p0": {gpufields.MemUsed}, "gpumem-p1": {gpufields.MemUsed}, "gpumem-forecast-p2": {gpufields.MemUsed},
	"gpu-idle-p0": {gpufields.Util}, "xid-p1": {gpufields.XID},
	"gpu-throttle-p1": {gpufields.ClockEvents}, "gpu-ecc-p1": {gpufields.ECCErrors},
}

// notMeasured says why a GPU rule's signal is not measured on the fleet (none of its names, of
// the exporters the GPU naming admits, is in Prometheus), "" when it is or nothing is known.
func notMeasured(p Params, s spec) string {
	if p.present == nil {
		return ""
	}
	if s.id == "gpumem-p0" || s.id == "gpumem-p1" {
		for _, n := range engine.KVCacheNames() {
			if p.present[n] {
				return ""
			}
		}
	}
	b := &builder{p: p}
	var whys []string
	for _, sig := range gpuSignals[s.id] {
		f := gpufields.Of(sig)
		found := false
		for _, x := range b.gpuExporters() {
			for _, n := range f.Names {
				found = found || (n.Exporter == x && p.present[n.Metric])
			}
		}
		if found {
			continue
		}
		why := "not measured here: " + f.NotMeasured()
		if sig == gpufields.XID {
			why += "; dcgm-exporter's default counters file has DCGM_FI_DEV_XID_ERRORS (keep it in a custom one), or enable DCGM_EXP_XID_ERRORS_COUNT (--xid-count-window-size), or run inferscope-probe"
		}
		whys = append(whys, why)
	}
	return strings.Join(whys, "; ")
}

// latencyNeeds: the latency rules read a latency histogram's quantile or, on a server without
// one (Triton without histograms, TorchServe), its mean latency.
func latencyNeeds(b *builder) string {
	if _, why := b.measure(profile.Latency, profile.Histogram); why == "" {
		return ""
	}
	_, why := b.latencyMeasure()
	return why
}
