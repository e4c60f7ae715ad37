package alerting

import (
	"testing"
)

// kvServer is a server that pre-allocates its GPU memory and reports its KV cache (vLLM): one
// model's vllm:kv_cache_usage_perc on the node's port 8000.
type kvServer struct {
	node, model string
	usage       func(m int) float64
}

func (k kvServer) write(n int) []series {
	l := map[string]string{"model_name": k.model, "engine": "0", "instance": k.node + ":8000", "job": "inference"}
	return []series{{labelText("vllm:kv_cache_usage_perc", l), samples(n, k.usage)}}
}

// TestPromtoolMemoryOnKVCacheNodes: on a node serving vLLM the GPUs sit at 93 % (vLLM
// pre-allocates 90 % of each GPU by default), and no GPU-memory rule fires for that; the memory
// rules fire there when the KV cache crosses the same lines (85 %, 92 %), once for the node and
// naming no GPU (the cache is the server's, and a GPU in the triage link may serve another
// model), and keep firing on GPU memory for the other nodes (node-a at 93 % without a KV cache),
// whatever the profile the file is rendered for.
func TestPromtoolMemoryOnKVCacheNodes(t *testing.T) {
	p := testParams()
	full := busyGPU("node-a", 0, 0)
	full.memory = stepAt(incidentAt, 0.5, 0.93)
	preallocated := []interface{ write(int) []series }{busyGPU("node-v", 0, 0.93), busyGPU("node-v", 1, 0.93)}
	kv := kvServer{node: "node-v", model: "llama", usage: stepAt(incidentAt+20, 0.6, 0.95)}
	warn := kvServer{node: "node-w", model: "llama", usage: stepAt(incidentAt+20, 0.6, 0.88)}
	// node-x runs vLLM with no GPU exporter: its KV cache is all that says its memory is full.
	bare := kvServer{node: "node-x", model: "llama", usage: stepAt(incidentAt+20, 0.6, 0.95)}
	fleet := append([]interface{ write(int) []series }{server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...), full,
		busyGPU("node-w", 0, 0.93), kv, warn, bare}, preallocated...)
	firing := func(alert string) string {
		return `count by (inferscope_node, gpu) (ALERTS{alertname="` + alert + `",alertstate="firing"})`
	}
	test := promtoolTest{
		Name:  "memory rules on nodes that pre-allocate: KV cache, not GPU memory",
		fleet: fleet,
		PromqlTest: []promqlCase{
			// Before the KV cache fills: only node-a's GPU 0 (93 % of GPU memory, no KV cache).
			{Expr: firing("InferscopeGPUMemoryCritical"), EvalTime: evalAt(incidentAt + 10),
				ExpSamples: []expSample{{`{inferscope_node="node-a", gpu="0"}`, 1}}},
			// (the P1 leaves the range above 92 % to the P0 rule)
			{Expr: firing("InferscopeGPUMemoryHigh"), EvalTime: evalAt(incidentAt + 10)},
			// node-v's KV cache at 95 %: critical once for the node, as on node-x, which runs no
			// GPU exporter; node-w's at 88 %: high.
			{Expr: firing("InferscopeGPUMemoryCritical"), EvalTime: evalAt(incidentAt + 30),
				ExpSamples: []expSample{{`{inferscope_node="node-a", gpu="0"}`, 1}, {`{inferscope_node="node-v"}`, 1}, {`{inferscope_node="node-x"}`, 1}}},
			{Expr: firing("InferscopeGPUMemoryHigh"), EvalTime: evalAt(incidentAt + 30),
				ExpSamples: []expSample{{`{inferscope_node="node-w"}`, 1}}},
			// The forecast leaves the pre-allocating nodes out as well.
			{Expr: `count(ALERTS{alertname="InferscopeGPUMemoryForecast",inferscope_node=~"node-v|node-w"})`, EvalTime: evalAt(incidentAt + 30)},
		},
	}
	// A KV cache's alert names the node and no GPU; its link asks about the whole node.
	s, _ := specByID("gpumem-p0")
	a := gpuAnnotations(p, "gpumem-p0", incidentAt+30, "node-a", 0, "memory 93% used", "93%", 1000.0/60, "recsys v1; ")
	exp := []expAlert{{gpuLabels(p, "gpumem-p0", "node-a", 0), a}}
	at := incidentAt + 30
	for _, node := range []string{"node-v", "node-x"} {
		labels := ruleLabels(p, s)
		labels[NodeLabel], labels[NodeOutLabel] = node, node
		exp = append(exp, expAlert{labels, map[string]string{
			"summary":     node + ": its fullest KV cache is 95% used",
			"description": description(p, "gpumem-p0"),
			"value":       "95%",
			"qps":         "no traffic",
			"models":      "none found",
			"dashboard":   link(p, at, "&var-instance="+node+"&var-gpu="),
			"triage":      triageLink(at, "&node="+node+"&gpu="),
		}})
	}
	test.AlertRuleTest = []alertCase{{EvalTime: evalAt(at), Alertname: "InferscopeGPUMemoryCritical", ExpAlerts: exp}}
	runPromtool(t, p, []promtoolTest{test})
}
