package triage

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Cause ids (a public contract: the app page and alert links use them).
const (
	CauseTrafficSurge    = "traffic_surge"
	CauseQueue           = "queue"
	CauseComputeMemory   = "compute_memory"
	CauseGPUIdle         = "gpu_idle"
	CauseFramework       = "framework"
	CauseInputShift      = "input_shift"
	CauseNetwork         = "network"
	CauseHardware        = "hardware"
	CauseWarmup          = "warmup"
	CauseModelRegression = "model_regression"
	// CauseCompute: the compute segment slowed and no measured signal explains it — a diagnosis
	// of the segment, not "no direction".
	CauseCompute = "compute"
	// CauseKVCache: the KV cache near full with requests preempted (recomputed or swapped).
	CauseKVCache = "kv_cache"
)

// Layers (MISSION.md "The four layers").
const (
	LayerResource  = "resource"
	LayerFramework = "framework"
	LayerService   = "service"
	LayerBusiness  = "business"
)

// causeInfo is what a cause says whatever the numbers: title, layer, what to do, where to look.
type causeInfo struct {
	title, layer, next string
	panels             []int
}

var causeInfos = map[string]causeInfo{
	CauseTrafficSurge: {"Traffic surge", LayerService,
		"Find the client behind the extra requests (QPS per instance and model); rate-limit it or add replicas, and check that batching keeps up.",
		[]int{32, 31}},
	CauseQueue: {"Queue-dominated (batching, concurrency or lost capacity)", LayerService,
		"Compute is stable and requests wait: bring back the instances that stopped serving, lower the concurrency or the batch delay, fix the batching policy (max batch size, queue timeout) or add replicas.",
		[]int{23, 24, 51}},
	CauseComputeMemory: {"Compute-dominated with GPU memory near full", LayerResource,
		"Weights or batches are being reallocated near the memory limit: compare the model's footprint with the last deploy, lower the max batch size or move the model to a GPU with headroom; a restart only buys time.",
		[]int{23, 41, 42}},
	CauseGPUIdle: {"GPU idle while traffic flows (asleep or context lost)", LayerResource,
		"Look for an XID in the node's kernel log or the probe, check the process holding the GPU, then drain and restart the model server on that GPU; watch the fallback volume meanwhile.",
		[]int{46, 43, 47}},
	CauseFramework: {"Inference engine (cache hit rate, preemptions, waiting sequences)", LayerFramework,
		"Check the engine's cache size and eviction, the KV-cache headroom behind preemptions and the scheduler's limits on running sequences.",
		[]int{53, 51, 52}},
	CauseInputShift: {"Input-length shift", LayerBusiness,
		"Longer inputs cost more compute: find the client sending them (request logs), cap the input length or route such requests to their own pool.",
		[]int{61}},
	CauseNetwork: {"Network / gateway between the gateway and the service", LayerService,
		"The service's own time is unchanged: look at the path between the gateway and the instance (switches, load balancer, packet loss, firmware), not at the model.",
		[]int{23, 14}},
	CauseHardware: {"GPU hardware (ECC, XID, clock throttling)", LayerResource,
		"Read the probe's XID and ECC counters and throttle reasons; cordon the node when uncorrected ECC errors or XIDs repeat, check cooling and power for thermal or power throttling.",
		[]int{47, 44, 45}},
	CauseWarmup: {"Warm-up after a (re)start", LayerFramework,
		"Warm-up samples are recorded, not alerted on: let the warm-up window pass; if it repeats, find why the instance restarted (OOM kill, deploy, crash loop).",
		[]int{12, 16}},
	CauseModelRegression: {"Model version regression", LayerBusiness,
		"A newly deployed version is slower than the one it replaced on the same instances: hold or roll back its roll-out (inferscope gate compares the versions) and compare their batch and memory settings.",
		[]int{12, 23}},
	CauseCompute: {"Compute slowed (cause not among the signals measured here)", LayerResource,
		"The model's own compute time grew while the signals read here (memory, KV cache, input length, hardware, version) stayed in line: profile the model server on that instance (kernel times, batch sizes, the GPU's other processes) and export the missing signals listed under \"not measured\".",
		[]int{23, 43, 41}},
	CauseKVCache: {"KV-cache exhaustion (usage near full, requests preempted)", LayerFramework,
		"The KV cache is full and the scheduler preempts running requests, which recompute: lower max-num-seqs or the context length, raise the memory the server may use for the cache, or add replicas.",
		[]int{23, 53, 51}},
}

// panelInfo names the overview dashboard's panels the links point at.
var panelInfo = map[int][2]string{ // id → row, title
	12: {"Latency tiers", "P95 latency by model version"},
	14: {"Latency tiers", "Jitter (P99 / P50)"},
	16: {"Latency tiers", "Ratio to baseline and status"},
	23: {"Latency tiers", "Queue / compute / network split"},
	24: {"Latency tiers", "Latency regime"},
	31: {"Throughput", "Total QPS"},
	32: {"Throughput", "QPS per model"},
	41: {"GPU resources", "GPU memory used"},
	42: {"GPU resources", "Time until 92 % GPU memory"},
	43: {"GPU resources", "GPU utilisation"},
	44: {"GPU resources", "GPU temperature"},
	45: {"GPU resources", "GPU power"},
	46: {"GPU resources", "GPU idle under traffic"},
	47: {"GPU resources", "GPUs now (live from the probes)"},
	51: {"Framework internals", "Waiting and running requests"},
	52: {"Framework internals", "Mean batch size"},
	53: {"Framework internals", "Cache hit rate"},
	61: {"Business health", "Input length distribution"},
}

// DashboardUID is the overview dashboard the links open.
const DashboardUID = "inferscope-overview"

// PanelURL is a relative Grafana link to one panel of the overview over [from, to], with the
// dashboard's variables set ("" leaves a variable at its default).
func PanelURL(panel int, from, to time.Time, model, version, instance string) string {
	return panelURL(panel, from, to, model, version, instance, "")
}

// panelURL is PanelURL with the dashboard's gpu variable too.
func panelURL(panel int, from, to time.Time, model, version, instance, gpu string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "/d/%s/?viewPanel=panel-%d&from=%d&to=%d", DashboardUID, panel, from.UnixMilli(), to.UnixMilli())
	for _, v := range [][2]string{{"model", model}, {"version", version}, {"instance", instance}, {"gpu", gpu}} {
		if v[1] != "" {
			fmt.Fprintf(&b, "&var-%s=%s", v[0], url.QueryEscape(v[1]))
		}
	}
	return b.String()
}

func links(id string, from, to time.Time, model, version, instance, gpu string) []Link {
	var out []Link
	for _, p := range causeInfos[id].panels {
		pi := panelInfo[p]
		out = append(out, Link{Title: pi[1], Row: pi[0], PanelID: p, URL: panelURL(p, from, to, model, version, instance, gpu)})
	}
	return out
}
