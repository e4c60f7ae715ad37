package alerting

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// promtool's rule unit tests of the rendered rule file: each catalog rule fires on its incident
// with its context, and stays quiet through a warm-up and through a deploy. The rules are the
// production rendering with one change: the baseline's "day" is an hour, so a week of history
// is seven hours of one-minute samples and the suite runs in seconds.

type promtoolFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval string         `yaml:"evaluation_interval"`
	Tests              []promtoolTest `yaml:"tests"`
}

type promtoolTest struct {
	Name          string       `yaml:"name"`
	Interval      string       `yaml:"interval"`
	InputSeries   []series     `yaml:"input_series"`
	AlertRuleTest []alertCase  `yaml:"alert_rule_test,omitempty"`
	PromqlTest    []promqlCase `yaml:"promql_expr_test,omitempty"`
	fleet         []interface{ write(int) []series }
}

type alertCase struct {
	EvalTime  string     `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []expAlert `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

type promqlCase struct {
	Expr       string      `yaml:"expr"`
	EvalTime   string      `yaml:"eval_time"`
	ExpSamples []expSample `yaml:"exp_samples"`
}

type expSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// testParams are the defaults with an hour for a day.
func testParams() Params {
	p := Defaults()
	p.period = time.Hour
	return p
}

// minutes of history every test writes: seven "days" of an hour, then the incident.
const (
	incidentAt = 480
	totalMin   = 521
)

func evalAt(m int) string { return fmt.Sprintf("%dm", m) }

func runPromtool(t *testing.T, p Params, tests []promtoolTest) {
	t.Helper()
	dir := t.TempDir()
	rules, err := RenderPrometheus(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules.yml"), rules)
	for i := range tests {
		tests[i].Interval = "1m"
		for _, f := range tests[i].fleet {
			tests[i].InputSeries = append(tests[i].InputSeries, f.write(totalMin)...)
		}
	}
	body, err := yaml.Marshal(promtoolFile{RuleFiles: []string{"rules.yml"}, EvaluationInterval: "1m", Tests: tests})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "tests.yml"), body)
	promtest.RunRuleTests(t, dir, "tests.yml")
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The fleet's defaults: node-a serves recsys v1 at 1000 requests a minute, GPUs 0 and 1 at 50 %
// and 70 % memory.
func svc(inst, model string, phases ...phase) stream {
	return stream{labels: map[string]string{"model_name": model, "model_version": "v1", "instance": inst, "job": "inference"},
		phases: phases, queue: [2]float64{0.003, 0.003}, compute: 0.012}
}

func always(d dist) []phase { return []phase{{from: 0, to: totalMin, perMin: 1000, d: d}} }

func server(name string, models ...string) instance {
	return instance{name: name, starts: []int{-10000}, models: models}
}

func busyGPU(node string, i int, mem float64) gpu {
	return gpu{node: node, index: i, util: constant(0.6), memory: constant(mem)}
}

// Expected context of a service alert (model recsys v1 style labels).
func serviceLabels(p Params, id, inst, model string) map[string]string {
	s, _ := specByID(id)
	l := ruleLabels(p, s)
	node := strings.SplitN(inst, ":", 2)[0]
	for k, v := range map[string]string{"model_name": model, "model_version": "v1", "instance": inst,
		ModelLabel: model, VersionLabel: "v1", NodeOutLabel: node} {
		l[k] = v
	}
	return l
}

func gpuLabels(p Params, id, node string, index int) map[string]string {
	s, _ := specByID(id)
	l := ruleLabels(p, s)
	l[NodeLabel], l[NodeOutLabel], l[GPULabel], l["gpu"] = node, node, fmt.Sprint(index), fmt.Sprint(index)
	return l
}

func link(p Params, evalMin int, vars string) string {
	t := float64(evalMin * 60)
	return fmt.Sprintf("/d/%s/?orgId=1&viewPanel=panel-%d&from=%.0f&to=%.0f%s", p.DashboardUID, p.LatencyPanelID, (t-600)*1000, t*1000, vars)
}

// triageLink is the triage page on the fifteen minutes before the evaluation.
func triageLink(evalMin int, params string) string {
	t := float64(evalMin * 60)
	return fmt.Sprintf("%s?orgId=1&from=%.0f&to=%.0f%s", TriagePath, (t-900)*1000, t*1000, params)
}

func description(p Params, id string) string {
	s, _ := specByID(id)
	return fmt.Sprintf("%s: %s (for %s). %s", s.sev, s.cond(p), promDuration(s.hold(p)), s.why)
}

func serviceAnnotations(p Params, id string, evalMin int, inst, model, summaryTail, value string, qps float64, gpus string) map[string]string {
	return map[string]string{
		"summary":     fmt.Sprintf("%s v1 on %s: %s", model, inst, summaryTail),
		"description": description(p, id),
		"value":       value,
		"qps":         fmt.Sprintf("%.1f req/s", qps),
		"gpus":        gpus,
		"dashboard":   link(p, evalMin, fmt.Sprintf("&var-model=%s&var-version=v1&var-instance=%s", model, strings.ReplaceAll(inst, ":", "%3A"))),
		"triage":      triageLink(evalMin, fmt.Sprintf("&model=%s&version=v1&instance=%s", model, strings.ReplaceAll(inst, ":", "%3A"))),
	}
}

func gpuAnnotations(p Params, id string, evalMin int, node string, index int, summaryTail, value string, qps float64, models string) map[string]string {
	return map[string]string{
		"summary":     fmt.Sprintf("GPU %d on %s: %s", index, node, summaryTail),
		"description": description(p, id),
		"value":       value,
		"qps":         fmt.Sprintf("%.1f req/s", qps),
		"models":      models,
		"dashboard":   link(p, evalMin, fmt.Sprintf("&var-instance=%s&var-gpu=%d", node, index)),
		"triage":      triageLink(evalMin, fmt.Sprintf("&node=%s&gpu=%d", node, index)),
	}
}

func none(evalMin int, alerts ...string) []alertCase {
	out := make([]alertCase, len(alerts))
	for i, a := range alerts {
		out[i] = alertCase{EvalTime: evalAt(evalMin), Alertname: a, ExpAlerts: []expAlert{}}
	}
	return out
}

var serviceAlerts = []string{"InferscopeLatencyCritical", "InferscopeLatencyHigh", "InferscopeLatencyJitter", "InferscopeQueueDominating", "InferscopeErrorRate"}

func TestPromtoolLatencyBaseline(t *testing.T) {
	p := testParams()
	ratio := slow.quantile(0.95) / steady.quantile(0.95)
	if ratio < 3 || moderate.quantile(0.95)/steady.quantile(0.95) > 3 || moderate.quantile(0.95)/steady.quantile(0.95) < 1.5 {
		t.Fatalf("test distributions out of shape: slow %.2f×, moderate %.2f×", ratio, moderate.quantile(0.95)/steady.quantile(0.95))
	}
	const at = 490 // ten minutes into the incident: the rate window holds only incident minutes
	gpus := "GPU 1 70% memory; GPU 0 50% memory; "
	critical := serviceAnnotations(p, "latency-p0", at, "node-a:8000", "recsys",
		fmt.Sprintf("P95 latency is %.2f× its same-time-of-day baseline", ratio), fmt.Sprintf("%.2f× baseline", ratio), 1000.0/60, gpus)
	modRatio := moderate.quantile(0.95) / steady.quantile(0.95)
	modHigh := serviceAnnotations(p, "latency-p1", at, "node-b:8000", "ranker",
		fmt.Sprintf("P95 latency is %.2f× its same-time-of-day baseline", modRatio), fmt.Sprintf("%.2f× baseline", modRatio), 1000.0/60, "none found")
	test := promtoolTest{
		Name: "latency against its same-time-of-day baseline",
		fleet: []interface{ write(int) []series }{
			server("node-a:8000", "recsys"), server("node-b:8000", "ranker"),
			svc("node-a:8000", "recsys", phase{0, incidentAt, 1000, steady}, phase{incidentAt, totalMin, 1000, slow}),
			svc("node-b:8000", "ranker", phase{0, incidentAt, 1000, steady}, phase{incidentAt, totalMin, 1000, moderate}),
			busyGPU("node-a", 0, 0.5), busyGPU("node-a", 1, 0.7),
		},
		AlertRuleTest: append(none(incidentAt-1, "InferscopeLatencyCritical", "InferscopeLatencyHigh"),
			alertCase{EvalTime: evalAt(at), Alertname: "InferscopeLatencyCritical", ExpAlerts: []expAlert{
				{serviceLabels(p, "latency-p0", "node-a:8000", "recsys"), critical}}},
			// The P1 leaves recsys' range above 3× to the P0, as the Grafana rendering does.
			alertCase{EvalTime: evalAt(at), Alertname: "InferscopeLatencyHigh", ExpAlerts: []expAlert{
				{serviceLabels(p, "latency-p1", "node-b:8000", "ranker"), modHigh}}},
		),
		PromqlTest: []promqlCase{
			// Seven days with data, each the steady P95 (in µs, rounded: subquery means are sums).
			{Expr: `round(1e6 * ` + RecLatencyBaseline + `{instance="node-a:8000"})`, EvalTime: evalAt(at),
				ExpSamples: []expSample{{`{instance="node-a:8000", model_name="recsys", model_version="v1"}`, math.Round(1e6 * steady.quantile(0.95))}}},
			{Expr: `count without (inferscope_day) (` + RecLatencyDayMean + `{instance="node-a:8000"})`, EvalTime: evalAt(at),
				ExpSamples: []expSample{{`{instance="node-a:8000", model_name="recsys", model_version="v1"}`, 7}}},
		},
	}
	runPromtool(t, p, []promtoolTest{test})
}

func TestPromtoolWarmupDoesNotFire(t *testing.T) {
	p := testParams()
	// node-a restarts at the incident minute: counters reset, the model loads for a minute (no
	// traffic), then serves three minutes with slow warm-up latency, then steady again.
	restart := incidentAt
	warm := svc("node-a:8000", "recsys",
		phase{0, restart, 1000, steady}, phase{restart + 1, restart + 4, 1000, slow}, phase{restart + 4, totalMin, 1000, steady})
	warm.restarts = []int{restart}
	node := server("node-a:8000", "recsys")
	node.starts = []int{-10000, restart}
	node.notReady = [][2]int{{restart, restart + 1}}
	var cases []alertCase
	for _, m := range []int{restart + 1, restart + 2, restart + 3, restart + 4, restart + 5, restart + 7, restart + 10, restart + 15, restart + 20} {
		cases = append(cases, none(m, serviceAlerts...)...)
		if m <= restart+7 { // the GPU at 95 % is a real P0 once the warm-up is over
			cases = append(cases, none(m, "InferscopeGPUMemoryCritical", "InferscopeGPUIdleUnderTraffic")...)
		}
	}
	test := promtoolTest{
		Name:          "a restart's warm-up is recorded, never alerted on",
		fleet:         []interface{ write(int) []series }{node, warm, busyGPU("node-a", 0, 0.95)},
		AlertRuleTest: cases,
		PromqlTest: []promqlCase{
			// Without the filter the warm-up P95 is far above the P0 line: the filter is what
			// keeps the rules quiet.
			{Expr: `count(histogram_quantile(0.95, sum by (le, model_name, model_version, instance) (rate(inference_latency_seconds_bucket[5m]))) / ` +
				RecLatencyBaseline + ` > 3)`, EvalTime: evalAt(restart + 4), ExpSamples: []expSample{{"{}", 1}}},
			// The GPU's memory is above the P0 line during the warm-up too.
			{Expr: `count(` + RecGPUMemory + ` > 0.92)`, EvalTime: evalAt(restart + 4), ExpSamples: []expSample{{"{}", 1}}},
			// Still filtered 7 minutes (warm-up window + rate window) after the model became
			// ready, not after that.
			{Expr: `count(` + RecLatency + `)`, EvalTime: evalAt(restart + 7), ExpSamples: nil},
			{Expr: `count(` + RecLatency + `)`, EvalTime: evalAt(restart + 9), ExpSamples: []expSample{{"{}", 1}}},
		},
	}
	// The Grafana rule's query masks the same minutes: at every evaluation its condition holds on
	// exactly the GPUs whose Prometheus alert is pending or firing (before, the Grafana rule read
	// the data source's gpu type, which has no warm-up filter, and held through the reload).
	b, _ := newBuilder(p)
	s, _ := specByID("gpumem-p0")
	gq, _, _ := grafanaMainQuery(p, b, s)
	grafanaHolds := fmt.Sprintf("(%s) > 0.92", gq["expr"])
	prometheusHolds := `label_replace(ALERTS{alertname="InferscopeGPUMemoryCritical"}, "node", "$1", "inferscope_node", "(.+)")`
	for m := restart - 2; m <= restart+14; m++ {
		test.PromqlTest = append(test.PromqlTest,
			promqlCase{Expr: fmt.Sprintf("count(%s unless on (node, gpu) %s)", grafanaHolds, prometheusHolds), EvalTime: evalAt(m)},
			promqlCase{Expr: fmt.Sprintf("count(%s unless on (node, gpu) %s)", prometheusHolds, grafanaHolds), EvalTime: evalAt(m)})
	}
	test.PromqlTest = append(test.PromqlTest, promqlCase{Expr: "count(" + grafanaHolds + ")", EvalTime: evalAt(restart + 4)},
		promqlCase{Expr: "count(" + grafanaHolds + ")", EvalTime: evalAt(restart + 12), ExpSamples: []expSample{{"{}", 1}}})
	// The memory above 92 % fires once the warm-up is over: the GPU rule is filtered, not broken.
	test.AlertRuleTest = append(test.AlertRuleTest, alertCase{EvalTime: evalAt(restart + 12), Alertname: "InferscopeGPUMemoryCritical", ExpAlerts: []expAlert{{
		gpuLabels(p, "gpumem-p0", "node-a", 0),
		gpuAnnotations(p, "gpumem-p0", restart+12, "node-a", 0, "memory 95% used", "95%", 1000.0/60, "recsys v1; "),
	}}})
	runPromtool(t, p, []promtoolTest{test})
}

func TestPromtoolGPUIdle(t *testing.T) {
	p := testParams()
	// node-a: GPU 6 stops at the incident while traffic and readiness stay normal.
	// node-b: a deploy — the model unloads for 20 minutes, traffic stops, the GPUs idle.
	deployEnd := incidentAt + 20
	a := svc("node-a:8000", "embedder", always(steady)...)
	b := svc("node-b:8000", "embedder", phase{0, incidentAt, 1000, steady}, phase{deployEnd, totalMin, 1000, steady})
	nodeB := server("node-b:8000", "embedder")
	nodeB.notReady = [][2]int{{incidentAt, deployEnd}}
	idle := gpu{node: "node-a", index: 6, util: stepAt(incidentAt, 0.6, 0), memory: constant(0.5)}
	deploying := gpu{node: "node-b", index: 6, util: func(m int) float64 {
		if m >= incidentAt && m < deployEnd+2 {
			return 0
		}
		return 0.6
	}, memory: constant(0.5)}
	at := incidentAt + 12
	test := promtoolTest{
		Name: "GPU idle under traffic fires; GPU idle during a deploy does not",
		fleet: []interface{ write(int) []series }{server("node-a:8000", "embedder"), nodeB, a, b, idle, deploying,
			busyGPU("node-a", 5, 0.5), busyGPU("node-b", 5, 0.5)},
		AlertRuleTest: []alertCase{
			{EvalTime: evalAt(incidentAt + 8), Alertname: "InferscopeGPUIdleUnderTraffic", ExpAlerts: []expAlert{}},
			{EvalTime: evalAt(at), Alertname: "InferscopeGPUIdleUnderTraffic", ExpAlerts: []expAlert{{
				gpuLabels(p, "gpu-idle-p0", "node-a", 6),
				gpuAnnotations(p, "gpu-idle-p0", at, "node-a", 6, "utilisation 0 for 10m while traffic flows and the models are ready", "0% utilisation", 1000.0/60, "embedder v1; "),
			}}},
			// During the deploy and right after it (GPU still idle, traffic back) node-b stays quiet.
			{EvalTime: evalAt(deployEnd - 1), Alertname: "InferscopeGPUIdleUnderTraffic", ExpAlerts: []expAlert{{
				gpuLabels(p, "gpu-idle-p0", "node-a", 6),
				gpuAnnotations(p, "gpu-idle-p0", deployEnd-1, "node-a", 6, "utilisation 0 for 10m while traffic flows and the models are ready", "0% utilisation", 1000.0/60, "embedder v1; "),
			}}},
			{EvalTime: evalAt(deployEnd + 1), Alertname: "InferscopeGPUIdleUnderTraffic", ExpAlerts: []expAlert{{
				gpuLabels(p, "gpu-idle-p0", "node-a", 6),
				gpuAnnotations(p, "gpu-idle-p0", deployEnd+1, "node-a", 6, "utilisation 0 for 10m while traffic flows and the models are ready", "0% utilisation", 1000.0/60, "embedder v1; "),
			}}},
		},
	}
	runPromtool(t, p, []promtoolTest{test})
}

func TestPromtoolGPUMemory(t *testing.T) {
	p := testParams()
	full := busyGPU("node-a", 0, 0)
	full.memory = stepAt(incidentAt, 0.5, 0.93)
	// GPU 1 climbs 0.2 % a minute from 80 %: at 86 % 30 minutes later, 92 % within the hour.
	rising := busyGPU("node-a", 1, 0)
	rising.memory = func(m int) float64 { return math.Min(0.8+0.002*math.Max(0, float64(m-incidentAt+30)), 0.99) }
	at := incidentAt + 6
	test := promtoolTest{
		Name:  "GPU memory thresholds and forecast",
		fleet: []interface{ write(int) []series }{server("node-a:8000", "recsys"), svc("node-a:8000", "recsys", always(steady)...), full, rising},
		AlertRuleTest: []alertCase{
			{EvalTime: evalAt(incidentAt), Alertname: "InferscopeGPUMemoryCritical", ExpAlerts: []expAlert{}},
			{EvalTime: evalAt(at), Alertname: "InferscopeGPUMemoryCritical", ExpAlerts: []expAlert{{
				gpuLabels(p, "gpumem-p0", "node-a", 0),
				gpuAnnotations(p, "gpumem-p0", at, "node-a", 0, "memory 93% used", "93%", 1000.0/60, "recsys v1; "),
			}}},
			// GPU 0 at 93 % is the P0's: the P1 leaves the range above 92 % to it.
			{EvalTime: evalAt(at), Alertname: "InferscopeGPUMemoryHigh", ExpAlerts: []expAlert{
				{gpuLabels(p, "gpumem-p1", "node-a", 1), gpuAnnotations(p, "gpumem-p1", at, "node-a", 1,
					fmt.Sprintf("memory %.4g%% used", 100*rising.memory(at)), fmt.Sprintf("%.4g%%", 100*rising.memory(at)), 1000.0/60, "recsys v1; ")},
			}},
			{EvalTime: evalAt(at), Alertname: "InferscopeGPUMemoryForecast", ExpAlerts: []expAlert{{
				gpuLabels(p, "gpumem-forecast-p2", "node-a", 1),
				gpuAnnotations(p, "gpumem-forecast-p2", at, "node-a", 1, "memory trend reaches 92 % within 1h", predictText(at), 1000.0/60, "recsys v1; "),
			}}},
		},
	}
	runPromtool(t, p, []promtoolTest{test})
}

// predictText is the forecast alert's value: the linear trend one hour ahead, as the template
// prints it.
func predictText(at int) string {
	now := 0.8 + 0.002*float64(at-incidentAt+30)
	return fmt.Sprintf("%.4g%%", 100*(now+0.002*60))
}

func TestPromtoolErrorsJitterQueue(t *testing.T) {
	p := testParams()
	errs := svc("node-a:8000", "alpha", always(steady)...)
	errs.errShare, errs.errFrom = 0.06, incidentAt
	jit := svc("node-a:8000", "beta", phase{0, incidentAt, 1000, steady}, phase{incidentAt, totalMin, 1000, jittery})
	queue := svc("node-a:8000", "gamma", always(steady)...)
	queue.queue, queue.queueAt = [2]float64{0.003, 0.05}, incidentAt
	const at = incidentAt + 20
	jitter := jittery.quantile(0.99) / jittery.quantile(0.5)
	share := 0.05 / (0.05 + 0.012)
	test := promtoolTest{
		Name:  "error rate, jitter and queue time",
		fleet: []interface{ write(int) []series }{server("node-a:8000", "alpha", "beta", "gamma"), errs, jit, queue},
		AlertRuleTest: []alertCase{
			{EvalTime: evalAt(incidentAt), Alertname: "InferscopeErrorRate", ExpAlerts: []expAlert{}},
			{EvalTime: evalAt(incidentAt), Alertname: "InferscopeLatencyJitter", ExpAlerts: []expAlert{}},
			{EvalTime: evalAt(incidentAt), Alertname: "InferscopeQueueDominating", ExpAlerts: []expAlert{}},
			{EvalTime: evalAt(at), Alertname: "InferscopeErrorRate", ExpAlerts: []expAlert{{
				serviceLabels(p, "errors-p0", "node-a:8000", "alpha"),
				serviceAnnotations(p, "errors-p0", at, "node-a:8000", "alpha", "6% of requests fail", "6%", 1000.0/60, "none found"),
			}}},
			{EvalTime: evalAt(at), Alertname: "InferscopeLatencyJitter", ExpAlerts: []expAlert{{
				serviceLabels(p, "jitter-p1", "node-a:8000", "beta"),
				serviceAnnotations(p, "jitter-p1", at, "node-a:8000", "beta",
					fmt.Sprintf("P99/P50 is %.1f, a jitter source is on the path", jitter), fmt.Sprintf("%.1f", jitter), 1000.0/60, "none found"),
			}}},
			{EvalTime: evalAt(at), Alertname: "InferscopeQueueDominating", ExpAlerts: []expAlert{{
				serviceLabels(p, "queue-p1", "node-a:8000", "gamma"),
				serviceAnnotations(p, "queue-p1", at, "node-a:8000", "gamma",
					fmt.Sprintf("queue time is %.4g%% of the service time", 100*share), fmt.Sprintf("%.4g%%", 100*share), 1000.0/60, "none found"),
			}}},
			// The jitter source does not move P95 enough for a latency alert.
			{EvalTime: evalAt(at), Alertname: "InferscopeLatencyHigh", ExpAlerts: []expAlert{}},
		},
	}
	runPromtool(t, p, []promtoolTest{test})
}

func TestPromtoolWarmupLong(t *testing.T) {
	p := testParams()
	slowLoad := server("node-a:8000", "recsys")
	slowLoad.starts = []int{-10000, incidentAt}
	slowLoad.notReady = [][2]int{{incidentAt, incidentAt + 8}}
	usual := server("node-b:8000", "recsys")
	usual.starts = []int{-10000, incidentAt}
	usual.notReady = [][2]int{{incidentAt, incidentAt + 1}}
	a := svc("node-a:8000", "recsys", phase{0, incidentAt, 1000, steady}, phase{incidentAt + 8, totalMin, 1000, steady})
	a.restarts = []int{incidentAt}
	b := svc("node-b:8000", "recsys", phase{0, incidentAt, 1000, steady}, phase{incidentAt + 1, totalMin, 1000, steady})
	b.restarts = []int{incidentAt}
	at := incidentAt + 6
	s, _ := specByID("warmup-long-p2")
	labels := ruleLabels(p, s)
	for k, v := range map[string]string{"model_name": "recsys", "instance": "node-a:8000", ModelLabel: "recsys", NodeOutLabel: "node-a"} {
		labels[k] = v
	}
	// The alert's series carry no version: the load state is per model.
	ann := serviceAnnotations(p, "warmup-long-p2", at, "node-a:8000", "recsys", "still not ready 5m after start", "not ready", 0, "GPU 0 50% memory; ")
	ann["summary"] = "recsys on node-a:8000: still not ready 5m after start"
	ann["qps"] = "0.0 req/s"
	ann["dashboard"] = link(p, at, "&var-model=recsys&var-instance=node-a%3A8000")
	ann["triage"] = triageLink(at, "&model=recsys&instance=node-a%3A8000")
	test := promtoolTest{
		Name:  "warm-up longer than usual",
		fleet: []interface{ write(int) []series }{slowLoad, usual, a, b, busyGPU("node-a", 0, 0.5)},
		AlertRuleTest: []alertCase{
			{EvalTime: evalAt(incidentAt + 4), Alertname: "InferscopeWarmupLong", ExpAlerts: []expAlert{}},
			{EvalTime: evalAt(at), Alertname: "InferscopeWarmupLong", ExpAlerts: []expAlert{{labels, ann}}},
			{EvalTime: evalAt(incidentAt + 14), Alertname: "InferscopeWarmupLong", ExpAlerts: []expAlert{}},
		},
	}
	runPromtool(t, p, []promtoolTest{test})
}

// vllmCache is a vLLM server's prefix cache: queries at 600 tokens a minute, hits at a share
// that drops at the incident.
type vllmCache struct {
	inst, model  string
	before, from float64
}

func (v vllmCache) write(n int) []series {
	l := map[string]string{"model_name": v.model, "instance": v.inst, "job": "inference"}
	share := func(m int) float64 {
		if m >= incidentAt {
			return v.from
		}
		return v.before
	}
	cum := func(f func(m int) float64) func(int) float64 {
		vals := make([]float64, n)
		for m := 1; m < n; m++ {
			vals[m] = vals[m-1] + f(m)
		}
		return func(m int) float64 { return vals[m] }
	}
	return []series{
		{labelText("vllm:request_success_total", with(l, "finished_reason", "stop")), samples(n, cum(func(int) float64 { return 60 }))},
		{labelText("vllm:prefix_cache_queries_total", l), samples(n, cum(func(int) float64 { return 600 }))},
		{labelText("vllm:prefix_cache_hits_total", l), samples(n, cum(func(m int) float64 { return 600 * share(m) }))},
		{labelText("process_start_time_seconds", map[string]string{"instance": v.inst, "job": "inference"}), samples(n, constant(-600000))},
	}
}

func TestPromtoolCacheHitRateDrop(t *testing.T) {
	p := testParams()
	p.Profile = "vllm"
	at := incidentAt + 25
	s, _ := specByID("cache-drop-p2")
	labels := ruleLabels(p, s)
	for k, v := range map[string]string{"model_name": "llama", "instance": "node-a:8000", ModelLabel: "llama", NodeOutLabel: "node-a"} {
		labels[k] = v
	}
	test := promtoolTest{
		Name:  "vLLM prefix cache hit rate drop (P2)",
		fleet: []interface{ write(int) []series }{vllmCache{"node-a:8000", "llama", 0.5, 0.3}, vllmCache{"node-b:8000", "llama", 0.5, 0.45}},
		AlertRuleTest: []alertCase{
			{EvalTime: evalAt(incidentAt), Alertname: "InferscopeCacheHitRateDrop", ExpAlerts: []expAlert{}},
			// node-a: 30 % against a 50 % baseline (60 %); node-b: 45 % (90 %) stays quiet.
			{EvalTime: evalAt(at), Alertname: "InferscopeCacheHitRateDrop", ExpAlerts: []expAlert{{labels, map[string]string{
				"summary":     "llama on node-a:8000: cache hit rate is 60% of its baseline",
				"description": description(p, "cache-drop-p2"),
				"value":       "60% of baseline",
				"qps":         "1.0 req/s",
				"gpus":        "none found",
				"dashboard":   link(p, at, "&var-model=llama&var-instance=node-a%3A8000"),
				"triage":      triageLink(at, "&model=llama&instance=node-a%3A8000"),
			}}}},
		},
	}
	runPromtool(t, p, []promtoolTest{test})
}
