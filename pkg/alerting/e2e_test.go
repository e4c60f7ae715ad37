package alerting

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/promexport"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// End to end on the real servers: the test bed plays the scenario live (inference servers and
// GPU probes), a real Prometheus scrapes it and evaluates the exported rules, a real
// Alertmanager loaded with the exported configuration routes what fires to a webhook in this
// test. Prometheus evaluates rules at "now" only, so the fleet plays its scenario at `speed`
// times real time around the incident, and every duration of the rules is divided by the same
// factor (a rate window of 5 scenario minutes is 15 s of Prometheus time). Ratios — latency
// quantiles, shares, memory — do not depend on the speed; rates are `speed` times the truth.

const speed = 20

// e2eParams are the production parameters with every duration divided by speed, a one-day
// baseline whose day is 40 s (the history Prometheus gathers during the test), no observation
// mode, and the test's webhook as both receivers.
func e2eParams(webhook string) Params {
	p := Defaults()
	scale := func(d time.Duration) time.Duration { return d / speed }
	p.Interval = time.Second
	p.Observation = false
	p.WarmupWindow, p.RateWindow = scale(p.WarmupWindow), scale(p.RateWindow)
	p.LatencyWarnFor, p.LatencyCritFor = scale(p.LatencyWarnFor), scale(p.LatencyCritFor)
	p.GPUMemWarnFor, p.GPUMemCritFor, p.GPUIdleFor = scale(p.GPUMemWarnFor), scale(p.GPUMemCritFor), scale(p.GPUIdleFor)
	p.ErrorFor, p.JitterFor, p.QueueFor = scale(p.ErrorFor), scale(p.JitterFor), scale(p.QueueFor)
	p.ForecastWindow, p.ForecastHorizon = scale(p.ForecastWindow), scale(p.ForecastHorizon)
	p.CacheDropFor, p.WarmupMaxLoad = scale(p.CacheDropFor), scale(p.WarmupMaxLoad)
	p.BaselineDays, p.BaselineMinDays = 1, 1
	p.period, p.BaselineWindow, p.SubqueryStep = 40*time.Second, 3*time.Second, time.Second
	p.P0GroupWait, p.P0GroupInterval, p.P0RepeatInterval = time.Second, 2*time.Second, time.Minute
	p.P1GroupWait, p.P1GroupInterval, p.P1RepeatInterval = 5*time.Second, 5*time.Second, time.Minute
	p.P0WebhookURL, p.P1WebhookURL = webhook, webhook
	return p
}

// clock maps real time to scenario time: the scenario instant `anchor` plays at real time
// `at`, and time runs speed times faster.
type clock struct {
	at, anchor time.Time
}

func (c clock) scenario(t time.Time) time.Time { return c.anchor.Add(t.Sub(c.at) * speed) }
func (c clock) real(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return c.at.Add(t.Sub(c.anchor) / speed)
}

// fastSource is the scenario's expo.Source on the fast clock: values come from the scenario
// instant, instants given back (process starts, stream births) are mapped to real time.
type fastSource struct {
	expo.Source
	c clock
}

func (f fastSource) Streams(instance string) []expo.Stream {
	out := f.Source.Streams(instance)
	for i := range out {
		out[i].Since = f.c.real(out[i].Since)
	}
	return out
}
func (f fastSource) Count(st expo.Stream, c expo.Counter, t time.Time) float64 {
	return f.Source.Count(f.back(st), c, f.c.scenario(t))
}
func (f fastSource) Total(st expo.Stream, m expo.Measure, c expo.Counter, t time.Time) float64 {
	return f.Source.Total(f.back(st), m, c, f.c.scenario(t))
}
func (f fastSource) Histogram(st expo.Stream, m expo.Measure, b []float64, t time.Time) ([]float64, float64, float64) {
	return f.Source.Histogram(f.back(st), m, b, f.c.scenario(t))
}
func (f fastSource) Queued(st expo.Stream, t time.Time) float64 {
	return f.Source.Queued(f.back(st), f.c.scenario(t))
}
func (f fastSource) Running(st expo.Stream, t time.Time) float64 {
	return f.Source.Running(f.back(st), f.c.scenario(t))
}
func (f fastSource) KVCacheUsage(instance, model string, t time.Time) float64 {
	return f.Source.KVCacheUsage(instance, model, f.c.scenario(t))
}
func (f fastSource) Ready(instance string, t time.Time) bool {
	return f.Source.Ready(instance, f.c.scenario(t))
}
func (f fastSource) ProcessStart(instance string, t time.Time) time.Time {
	return f.c.real(f.Source.ProcessStart(instance, f.c.scenario(t)))
}
func (f fastSource) GPUUtilRatio(instance string, gpu int, t time.Time) float64 {
	return f.Source.GPUUtilRatio(instance, gpu, f.c.scenario(t))
}

// back restores a stream's scenario birth for the wrapped source.
func (f fastSource) back(st expo.Stream) expo.Stream {
	st.Since = f.c.anchor.Add(st.Since.Sub(f.c.at) * speed)
	return st
}

// probeSource is what the GPU probe on a node collects, on the fast clock.
type probeSource struct {
	s        *testbed.Scenario
	instance string
	c        clock
}

func (p probeSource) Snapshot() *snapshot.Snapshot {
	now := time.Now()
	snap := p.s.GPUSnapshot(p.instance, p.c.scenario(now))
	snap.CollectedAt = now
	return snap
}
func (probeSource) Stats() collector.Stats { return collector.Stats{} }

// webhook collects what Alertmanager sends.
type webhook struct {
	mu   sync.Mutex
	msgs []amMessage
}

type amMessage struct {
	Receiver string    `json:"receiver"`
	Status   string    `json:"status"`
	Alerts   []amAlert `json:"alerts"`
}

type amAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var m amMessage
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.msgs = append(w.msgs, m)
	w.mu.Unlock()
}

// firing lists every firing alert received so far.
func (w *webhook) firing() []amAlert {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []amAlert
	for _, m := range w.msgs {
		for _, a := range m.Alerts {
			if a.Status == "firing" {
				out = append(out, a)
			}
		}
	}
	return out
}

// fleet is one end-to-end set-up: the live test bed, Prometheus with the exported rules and
// Alertmanager with the exported configuration.
type fleet struct {
	s        *testbed.Scenario
	c        clock
	prom     *promtest.Server
	amURL    string
	hook     *webhook
	p        Params
	incident time.Time // real time the incident plays
}

// startFleet plays the scenario so that the scenario instant `incident` happens `lead` after now.
func startFleet(t *testing.T, incident func(*testbed.Scenario) time.Time, lead time.Duration) *fleet {
	t.Helper()
	promtest.RequireBinary(t, "prometheus")
	amBin := promtest.RequireBinary(t, "prometheus-alertmanager")
	s := testbed.Default(testbed.DefaultEnd)
	now := time.Now()
	f := &fleet{s: s, hook: &webhook{}, incident: now.Add(lead)}
	f.c = clock{at: f.incident, anchor: incident(s)}

	hookSrv := httptest.NewServer(f.hook)
	t.Cleanup(hookSrv.Close)
	f.p = e2eParams(hookSrv.URL)

	ep, err := expo.Lookup("custom")
	if err != nil {
		t.Fatal(err)
	}
	inference := httptest.NewServer(expo.Handler(fastSource{Source: s.Source(), c: f.c}, ep, time.Now))
	t.Cleanup(inference.Close)
	var probes strings.Builder
	for _, inst := range s.Instances() {
		reg := prometheus.NewRegistry()
		reg.MustRegister(promexport.New(probeSource{s: s, instance: inst, c: f.c}, promexport.Options{}))
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		fmt.Fprintf(&probes, "      - targets: [%s]\n        labels: {node: %s}\n", strings.TrimPrefix(srv.URL, "http://"), testbed.Node(inst))
	}

	dir := t.TempDir()
	rules, err := RenderPrometheus(f.p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules.yml"), rules)
	amConfig, err := RenderAlertmanager(f.p)
	if err != nil {
		t.Fatal(err)
	}
	f.amURL = startAlertmanager(t, amBin, amConfig)

	cfg := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n" +
		"rule_files: [" + strconv.Quote(filepath.Join(dir, "rules.yml")) + "]\n" +
		"alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [" + strings.TrimPrefix(f.amURL, "http://") + "]\n" +
		expo.PrometheusConfig(strings.TrimPrefix(inference.URL, "http://"), s.Instances(), time.Second) +
		"  - job_name: inferscope-probe\n    scrape_interval: 1s\n    static_configs:\n" + probes.String()
	f.prom = promtest.Start(t, promtest.Options{ConfigYAML: cfg})
	return f
}

// startAlertmanager runs the real Alertmanager on a free loopback port (clustering off) and
// returns its URL once ready.
func startAlertmanager(t *testing.T, bin string, config []byte) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "alertmanager.yml"), config)
	addr := promtest.FreeAddr(t)
	am := promtest.StartProcess(t, bin, "--config.file="+filepath.Join(dir, "alertmanager.yml"), "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=warn")
	u := "http://" + addr
	waitFor(t, time.Minute, "Alertmanager ready", func() (bool, string) {
		select {
		case err := <-am.Exited:
			t.Fatalf("alertmanager exited: %v\n%s", err, am.Logs.String())
		default:
		}
		resp, err := http.Get(u + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return u
}

// waitFor polls cond every 250 ms until it holds or the deadline passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s; last state: %s", what, limit, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// query runs an instant PromQL query and returns the samples' labels and values.
func (f *fleet) query(t *testing.T, q string) []promSample {
	t.Helper()
	resp, err := http.Get(f.prom.URL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, body.Error)
	}
	var out []promSample
	for _, r := range body.Data.Result {
		v, _ := strconv.ParseFloat(r.Value[1].(string), 64)
		out = append(out, promSample{r.Metric, v})
	}
	return out
}

type promSample struct {
	labels map[string]string
	value  float64
}

// amAlerts lists the alerts Alertmanager holds, with their inhibition state.
func (f *fleet) amAlerts(t *testing.T) []amState {
	t.Helper()
	resp, err := http.Get(f.amURL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []amState
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("alertmanager alerts: %v: %s", err, b)
	}
	return out
}

type amState struct {
	Labels      map[string]string `json:"labels"`
	Fingerprint string            `json:"fingerprint"`
	Status      struct {
		State       string   `json:"state"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// rulesHealthy reports whether Prometheus evaluated every rule without error.
func (f *fleet) rulesHealthy(t *testing.T) (bool, string) {
	t.Helper()
	resp, err := http.Get(f.prom.URL + "/api/v1/rules")
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return false, err.Error()
	}
	n := 0
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				return false, r.Name + ": " + r.Health + " " + r.LastError
			}
		}
	}
	return n > 0, fmt.Sprintf("%d rules", n)
}

func TestEndToEndPrometheusAlertmanager(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the scenario live for about two minutes")
	}
	// The baseline needs the warm-up look-back (21 s) plus a day (40 s) and its window (3 s)
	// of history before an incident: incidents play 70 s after the start.
	const lead = 70 * time.Second

	t.Run("queue surge: the P0 arrives with its context, the P1s of the same instance are inhibited", func(t *testing.T) {
		t.Parallel()
		var surge testbed.Incident
		f := startFleet(t, func(s *testbed.Scenario) time.Time {
			in, ok := s.Incident(testbed.QueueSurge)
			if !ok {
				t.Fatal("the scenario has no queue surge")
			}
			surge = in
			return in.Start
		}, lead)
		inst, model, version := surge.Instance, surge.Model, surge.Version
		// Known truth: the surge's P95 is well above 3× the steady P95 an hour before.
		mid := surge.Start.Add(10 * time.Minute)
		before := f.s.LatencyQuantile(inst, model, version, 0.95, surge.Start.Add(-time.Hour))
		during := f.s.LatencyQuantile(inst, model, version, 0.95, mid)
		if during/before < 3.3 {
			t.Fatalf("scenario precondition: surge P95 %.1f ms is only %.2f× the steady %.1f ms", during*1e3, during/before, before*1e3)
		}

		var p0 amAlert
		waitFor(t, 3*time.Minute, "the latency P0 at the webhook", func() (bool, string) {
			for _, a := range f.hook.firing() {
				if a.Labels["alertname"] == "InferscopeLatencyCritical" && a.Labels[InstanceLabel] == inst && a.Labels[ModelLabel] == model {
					p0 = a
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d firing alerts received", len(f.hook.firing()))
		})
		t.Logf("P0 at the webhook %.1f s (Prometheus time) after the surge began: %s; qps %s; gpus %s",
			time.Since(f.incident).Seconds(), p0.Annotations["summary"], p0.Annotations["qps"], p0.Annotations["gpus"])
		// Context: who, how bad, how much traffic, which GPUs, where to look.
		for k, want := range map[string]string{SeverityLabel: "P0", VersionLabel: version, NodeOutLabel: testbed.Node(inst), ScopeLabel: "service", ManagedLabel: "true"} {
			if p0.Labels[k] != want {
				t.Errorf("P0 label %s = %q, want %q (labels %v)", k, p0.Labels[k], want, p0.Labels)
			}
		}
		if _, ok := p0.Labels[ObservationLabel]; ok {
			t.Errorf("P0 carries the observation label: %v", p0.Labels)
		}
		// The rule fires above 3×; the annotation rounds to two decimals, so a first
		// evaluation just over the line reads "3.00".
		ratio, err := strconv.ParseFloat(strings.TrimSuffix(p0.Annotations["value"], "× baseline"), 64)
		if err != nil || ratio < 3 {
			t.Errorf("value annotation %q: want a ratio of at least 3", p0.Annotations["value"])
		}
		qps, err := strconv.ParseFloat(strings.TrimSuffix(p0.Annotations["qps"], " req/s"), 64)
		// Prometheus' rate over the 15 s window holds the 5 scenario minutes before the
		// evaluation (which the alert's start bounds), at `speed` times the scenario's rate.
		at := f.c.scenario(p0.StartsAt)
		truth := speed * f.s.MeanQPS(inst, model, version, at.Add(-5*time.Minute), at)
		t.Logf("qps annotation %.1f req/s, truth %.1f req/s", qps, truth)
		if err != nil || math.Abs(qps-truth) > 0.15*truth {
			t.Errorf("qps annotation %q, truth %.1f req/s (±15 %%)", p0.Annotations["qps"], truth)
		}
		for g := 0; g < f.s.GPUsPerInstance(); g++ {
			if !strings.Contains(p0.Annotations["gpus"], fmt.Sprintf("GPU %d ", g)) {
				t.Errorf("gpus annotation %q lacks GPU %d of %s", p0.Annotations["gpus"], g, testbed.Node(inst))
			}
		}
		dash := p0.Annotations["dashboard"]
		for _, part := range []string{"/d/inferscope-overview/", "viewPanel=panel-13", "var-model=" + url.QueryEscape(model), "var-instance=" + url.QueryEscape(inst)} {
			if !strings.Contains(dash, part) {
				t.Errorf("dashboard link %q lacks %q", dash, part)
			}
		}
		u, err := url.Parse(dash)
		from, _ := strconv.ParseInt(u.Query().Get("from"), 10, 64)
		to, _ := strconv.ParseInt(u.Query().Get("to"), 10, 64)
		if err != nil || to-from != 600_000 {
			t.Errorf("dashboard link %q: want a ten-minute window", dash)
		}

		// The P1s of the same model and instance fire in Prometheus and are inhibited by the P0
		// in Alertmanager: listed as suppressed, inhibited by the P0, never sent.
		var p0Print string
		waitFor(t, time.Minute, "a P1 of the same instance inhibited by the P0", func() (bool, string) {
			states := f.amAlerts(t)
			for _, a := range states {
				if a.Labels["alertname"] == "InferscopeLatencyCritical" && a.Labels[InstanceLabel] == inst {
					p0Print = a.Fingerprint
				}
			}
			var seen []string
			for _, a := range states {
				if a.Labels[SeverityLabel] != "P1" || a.Labels[InstanceLabel] != inst || a.Labels[ModelLabel] != model {
					continue
				}
				seen = append(seen, a.Labels["alertname"]+":"+a.Status.State)
				if a.Status.State == "suppressed" && len(a.Status.InhibitedBy) == 1 && a.Status.InhibitedBy[0] == p0Print {
					return true, ""
				}
			}
			return false, fmt.Sprintf("P1 states %v (P0 fingerprint %q)", seen, p0Print)
		})
		for _, a := range f.hook.firing() {
			if a.Labels[SeverityLabel] == "P1" && a.Labels[InstanceLabel] == inst && a.Labels[ModelLabel] == model {
				t.Errorf("a P1 of the inhibited instance reached the webhook: %v", a.Labels)
			}
		}
	})

	t.Run("warm-up after a restart: nothing fires", func(t *testing.T) {
		t.Parallel()
		var restart testbed.Incident
		f := startFleet(t, func(s *testbed.Scenario) time.Time {
			in, ok := s.Incident(testbed.WarmupRestart)
			if !ok {
				t.Fatal("the scenario has no warm-up restart")
			}
			restart = in
			return in.Start
		}, lead)
		// Watch until the warm-up (load + 2 min, 9 s here) and the filter's look-back (21 s)
		// are over and the instance is steady again.
		end := f.incident.Add(restart.End.Sub(restart.Start)/speed + 25*time.Second)
		waitFor(t, 4*time.Minute, "the warm-up to play out", func() (bool, string) {
			if len(f.hook.firing()) > 0 {
				t.Fatalf("alerts reached the webhook: %+v", f.hook.firing())
			}
			return time.Now().After(end), "still playing"
		})
		if got := f.hook.firing(); len(got) > 0 {
			t.Fatalf("alerts reached the webhook: %+v", got)
		}
		if ok, state := f.rulesHealthy(t); !ok {
			t.Fatalf("rules not evaluated cleanly: %s", state)
		}
		// The warm-up was visible: unfiltered, node-c's P95 went above 3× its baseline; the
		// filtered series is back once the warm-up is over; nothing fired in Prometheus.
		window := fmt.Sprintf("[%ds:1s]", int(time.Since(f.incident.Add(-5*time.Second)).Seconds()))
		unfiltered := fmt.Sprintf(`max_over_time((histogram_quantile(0.95, sum by (le, model_name, model_version, instance) (rate(inference_latency_seconds_bucket{instance=%q}[15s]))) / on (model_name, model_version, instance) %s)%s)`,
			restart.Instance, RecLatencyBaseline, window)
		peak := 0.0
		for _, s := range f.query(t, unfiltered) {
			peak = math.Max(peak, s.value)
		}
		if peak <= 3 {
			t.Fatalf("unfiltered warm-up P95 peaked at %.2f× baseline: the scenario did not test the filter", peak)
		}
		if got := f.query(t, fmt.Sprintf(`%s{instance=%q}`, RecLatency, restart.Instance)); len(got) == 0 {
			t.Fatalf("no filtered latency for %s after the warm-up", restart.Instance)
		}
		if got := f.query(t, `count_over_time(ALERTS{severity=~"P0|P1"}`+window+`)`); len(got) > 0 {
			t.Fatalf("P0/P1 alerts were pending or firing during the warm-up: %v", got)
		}
		t.Logf("unfiltered warm-up P95 peaked at %.1f× its baseline; no alert fired", peak)
	})
}
