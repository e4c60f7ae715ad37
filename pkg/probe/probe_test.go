package probe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/probe"
	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/gpu/nvmlgpu"
	"github.com/inferscope/inferscope/pkg/probe/mockgpu"
	"github.com/inferscope/inferscope/pkg/probe/probeclient"
	"github.com/inferscope/inferscope/pkg/probe/promexport"
	"github.com/inferscope/inferscope/pkg/probe/server"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

type rig struct {
	probe *probe.Probe
	sys   *mockgpu.System
	url   string
	now   *atomic.Int64 // wall time seen by the probe, settable
}

type rigOptions struct {
	naming   promexport.Naming
	gpus     int
	runtime  bool      // include Go and process collectors
	instance string    // default node-b:8000
	at       time.Time // scenario time; default slowdownAt
	// quiet polls for events at a real probe's pace (benchmarks), not at test speed.
	quiet bool
}

// The standard scenario, and a moment inside its compute slowdown (node-b, GPUs 0-3).
var (
	scenario   = testbed.Default(testbed.DefaultEnd)
	slowdownAt = func() time.Time {
		for _, inc := range scenario.Incidents() {
			if inc.Kind == testbed.ComputeSlowdown {
				return inc.Start.Add(10 * time.Minute)
			}
		}
		panic("scenario has no compute slowdown")
	}()
)

func newRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	if o.instance == "" {
		o.instance = "node-b:8000"
	}
	if o.at.IsZero() {
		o.at = slowdownAt
	}
	r := &rig{now: &atomic.Int64{}}
	r.now.Store(o.at.UnixNano())
	now := func() time.Time { return time.Unix(0, r.now.Load()).UTC() }
	poll, wait := time.Millisecond, 5*time.Millisecond
	if o.quiet {
		poll, wait = 250*time.Millisecond, 500*time.Millisecond
	}
	sys, err := mockgpu.New(mockgpu.Options{
		System: mockgpu.DGXA100, Clock: gpuclock.FromScenario(scenario, mockgpu.DGXA100), Instance: o.instance,
		GPUs: o.gpus, Now: now, EventPoll: poll,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.sys = sys
	p, err := probe.New(probe.Config{
		Open:     func() (gpu.Library, error) { return nvmlgpu.Open(sys, nvmlgpu.WithEventWait(wait)) },
		Interval: time.Hour, Naming: o.naming, Hostname: "gpu-node-1", Version: "test",
		Owners: mockgpu.Owners{}, Now: now, NoRuntimeMetrics: !o.runtime,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.probe = p
	srv := httptest.NewServer(p.Handler())
	r.url = srv.URL
	t.Cleanup(func() {
		srv.Close()
		p.Close()
	})
	return r
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func parse(t testing.TB, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("served metrics do not parse: %v", err)
	}
	return fams
}

// The real served output passes promtool's linter in both namings.
func TestServedMetricsPassPromtool(t *testing.T) {
	for _, naming := range promexport.Namings {
		t.Run(string(naming), func(t *testing.T) {
			r := newRig(t, rigOptions{naming: naming, runtime: true})
			r.sys.InjectXID(1, 79)
			waitFor(t, "xid", func() bool { return r.probe.Collector.Stats().XIDEvents == 1 })
			r.sys.SetLost(7, true)
			r.probe.Collector.CollectNow()
			code, body := get(t, r.url+"/metrics")
			if code != http.StatusOK {
				t.Fatalf("/metrics: HTTP %d", code)
			}
			findings := promtest.CheckMetrics(t, body)
			if naming == promexport.NamingInferscope {
				if len(findings) != 0 {
					t.Fatalf("promtool check metrics: %s", strings.Join(findings, "\n"))
				}
				return
			}
			// dcgm-exporter's label names (UUID, modelName) are camelCase, its counters lack
			// _total and one of its field names contains "COUNTER"; those are the only findings
			// compatibility may cause.
			for _, line := range findings {
				if !promtest.DCGMCompatible(line) {
					t.Errorf("promtool check metrics: %s", line)
				}
			}
			if !strings.Contains(strings.Join(findings, "\n"), "camelCase") {
				t.Errorf("expected promtool to flag dcgm's camelCase labels; got %q", findings)
			}
		})
	}
}

// Every family the probe promises is served for a filled mock, one series per GPU (or per
// GPU and label value).
func TestEveryMetricFamilyServed(t *testing.T) {
	r := newRig(t, rigOptions{naming: promexport.NamingInferscope})
	r.sys.InjectXID(3, 31)
	waitFor(t, "xid", func() bool { return r.probe.Collector.Stats().XIDEvents == 1 })
	r.probe.Collector.CollectNow()
	_, body := get(t, r.url+"/metrics")
	fams := parse(t, body)
	perGPU := []string{
		"inferscope_gpu_info", "inferscope_gpu_up", "inferscope_gpu_utilization_ratio",
		"inferscope_gpu_memory_bandwidth_utilization_ratio", "inferscope_gpu_memory_used_bytes",
		"inferscope_gpu_memory_total_bytes", "inferscope_gpu_memory_reserved_bytes", "inferscope_gpu_temperature_celsius",
		"inferscope_gpu_power_watts", "inferscope_gpu_power_limit_watts", "inferscope_gpu_sm_clock_hertz",
		"inferscope_gpu_memory_clock_hertz", "inferscope_gpu_pcie_rx_bytes_per_second", "inferscope_gpu_pcie_tx_bytes_per_second",
		"inferscope_gpu_pcie_replays_total", "inferscope_gpu_row_remap_pending", "inferscope_gpu_row_remap_failed",
		"inferscope_gpu_mig_enabled", "inferscope_gpu_process_memory_used_bytes",
	}
	want := map[string]int{
		"inferscope_gpu_state":                     3 * 8,
		"inferscope_gpu_clock_event_reason_active": 9 * 8,
		"inferscope_gpu_ecc_errors_total":          2 * 8,
		"inferscope_gpu_remapped_rows":             2 * 8,
		"inferscope_gpu_xid_errors_total":          1,
		"inferscope_probe_info":                    1, "inferscope_probe_nvml_up": 1, "inferscope_probe_driver_info": 1,
		"inferscope_probe_snapshot_age_seconds": 1, "inferscope_probe_collect_duration_seconds": 1,
		"inferscope_probe_collections_total": 1, "inferscope_probe_gpus": 1, "inferscope_probe_xid_events_total": 1,
		"inferscope_probe_xid_watch_up": 1,
	}
	for _, f := range perGPU {
		want[f] = 8
	}
	var got []string
	for name, f := range fams {
		got = append(got, name)
		if n, ok := want[name]; !ok {
			t.Errorf("unexpected family %s", name)
		} else if len(f.Metric) != n {
			t.Errorf("%s: %d series; want %d", name, len(f.Metric), n)
		}
	}
	for name := range want {
		if fams[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}
	// Retired pages are NOT_SUPPORTED on A100: omitted, not zero.
	for _, absent := range []string{"inferscope_gpu_retired_pages", "inferscope_gpu_retired_pages_pending"} {
		if fams[absent] != nil {
			t.Errorf("%s served although NOT_SUPPORTED", absent)
		}
	}
	sort.Strings(got)
	t.Logf("%d families: %s", len(got), strings.Join(got, " "))

	// Values follow the scenario: node-b's GPUs 0-3 are in the compute slowdown with memory
	// near full.
	at := time.Unix(0, r.now.Load())
	for _, m := range fams["inferscope_gpu_clock_event_reason_active"].Metric {
		lbl := labels(m)
		idx, _ := strconv.Atoi(lbl["gpu"])
		mask := scenario.GPU("node-b:8000", idx, at).ThrottleReasons
		var bit uint64
		for _, reason := range snapshot.ThrottleReasonNames {
			if reason.Name == lbl["reason"] {
				bit = reason.Bit
			}
		}
		if want := mask&bit != 0; (m.GetGauge().GetValue() == 1) != want {
			t.Errorf("clock event %v = %v; want %v", lbl, m.GetGauge().GetValue(), want)
		}
	}
	for _, m := range fams["inferscope_gpu_memory_used_bytes"].Metric {
		idx, _ := strconv.Atoi(labels(m)["gpu"])
		truth := scenario.GPU("node-b:8000", idx, at)
		want := math.Floor(truth.MemUsedRatio * float64(truth.MemTotalBytes))
		if got := m.GetGauge().GetValue(); math.Abs(got-want) > 1 {
			t.Errorf("gpu %d memory used = %v; want %v", idx, got, want)
		}
		if idx < 4 && truth.MemUsedRatio < 0.92 {
			t.Errorf("gpu %d: scenario memory %v is not near full during the slowdown", idx, truth.MemUsedRatio)
		}
	}
	for _, m := range fams["inferscope_gpu_utilization_ratio"].Metric {
		idx, _ := strconv.Atoi(labels(m)["gpu"])
		want := scenario.GPU("node-b:8000", idx, at).UtilRatio
		if got := m.GetGauge().GetValue(); math.Abs(got-want) > 0.005 {
			t.Errorf("gpu %d utilisation = %v; want %v ± 0.005 (whole percent)", idx, got, want)
		}
	}
}

// The scenario's XID (43 when node-a's GPU 6 loses its context) arrives on cue, once.
func TestScenarioXIDOnCue(t *testing.T) {
	var idle testbed.Incident
	for _, inc := range scenario.Incidents() {
		if inc.Kind == testbed.GPUIdle {
			idle = inc
		}
	}
	r := newRig(t, rigOptions{instance: idle.Instance, at: idle.Start.Add(-time.Minute)})
	waitFor(t, "event watcher", func() bool { return r.probe.Collector.Stats().EventsWatched })
	if g := r.probe.Collector.CollectNow().GPUs[6]; g.XIDErrors == nil || len(g.XIDErrors) != 0 || *g.UtilRatio == 0 {
		t.Fatalf("before the incident: xids %v util %v", g.XIDErrors, *g.UtilRatio)
	}
	r.now.Store(idle.Start.Add(time.Minute).UnixNano())
	waitFor(t, "XID 43", func() bool { return r.probe.Collector.Stats().XIDEvents >= 1 })
	r.now.Store(idle.Start.Add(2 * time.Minute).UnixNano())
	g := r.probe.Collector.CollectNow().GPUs[6]
	if len(g.XIDErrors) != 1 || g.XIDErrors["43"] != 1 || *g.UtilRatio != 0 || g.ThrottleReasons[0] != "gpu_idle" {
		t.Errorf("during the incident: xids %v util %v reasons %v", g.XIDErrors, *g.UtilRatio, g.ThrottleReasons)
	}
	if n := r.probe.Collector.Stats().XIDEvents; n != 1 {
		t.Errorf("%d XID events; want exactly 1", n)
	}
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestGPUsJSON(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.now.Add(int64(1500 * time.Millisecond))
	s, err := probeclient.Get(context.Background(), r.url)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 8 || s.Hostname != "gpu-node-1" || s.DriverVersion != "550.54.15" || s.CUDAVersion != "12.4" || !s.NVML.OK || s.Mock != "" {
		t.Fatalf("snapshot: %+v", s)
	}
	for i, g := range s.GPUs {
		truth := scenario.GPU("node-b:8000", i, slowdownAt)
		if math.Abs(*g.MemUsedRatio-truth.MemUsedRatio) > 1e-9 || math.Abs(*g.PowerWatts-truth.PowerWatts) > 0.001 {
			t.Errorf("gpu %d: memory %v power %v; scenario says %v, %v", i, *g.MemUsedRatio, *g.PowerWatts, truth.MemUsedRatio, truth.PowerWatts)
		}
	}
	if s.AgeSeconds != 1.5 {
		t.Errorf("ageSeconds = %v; want 1.5", s.AgeSeconds)
	}
	for i, g := range s.GPUs {
		if g.State != "up" || g.UUID != mockgpu.UUIDFor(mockgpu.DGXA100, "node-b:8000", i) || g.MemUsedRatio == nil || g.ThrottleReasons == nil {
			t.Errorf("gpu %d: %+v", i, g)
		}
	}
	// Unsupported readings are null in the JSON, never zero.
	_, body := get(t, r.url+server.GPUsPath)
	var raw struct {
		GPUs []map[string]json.RawMessage `json:"gpus"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if v := string(raw.GPUs[0]["retiredPagesSingleBit"]); v != "null" {
		t.Errorf("retiredPagesSingleBit = %s; want null", v)
	}
	if code, _ := postCode(t, r.url+server.GPUsPath); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: HTTP %d", code)
	}
}

func postCode(t *testing.T, url string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestHealthz(t *testing.T) {
	r := newRig(t, rigOptions{})
	health := func() (int, server.Health) {
		code, body := get(t, r.url+server.HealthPath)
		var h server.Health
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatalf("healthz body %q: %v", body, err)
		}
		return code, h
	}
	if code, h := health(); code != 200 || h.Status != "ok" || h.GPUs != 8 || h.GPUsUp != 8 {
		t.Errorf("healthy: %d %+v", code, h)
	}
	r.sys.SetLost(2, true)
	r.probe.Collector.CollectNow()
	if code, h := health(); code != 200 || h.Status != "degraded" || h.GPUsUp != 7 || h.Reason == "" {
		t.Errorf("lost GPU: %d %+v", code, h)
	}
	// Collection stalls (the interval is an hour and nothing collects): stale after 3 cycles.
	r.now.Add(int64(server.StaleAfter(time.Hour) + time.Second))
	if code, h := health(); code != 503 || h.Status != "stale" {
		t.Errorf("stale: %d %+v", code, h)
	}
}

// Scrapes, JSON reads and health checks run concurrently with collection, XID events and a
// GPU coming and going; run with -race.
func TestConcurrentScrapes(t *testing.T) {
	r := newRig(t, rigOptions{runtime: true})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r.sys.SetLost(5, i%2 == 0)
			r.sys.InjectXID(i%8, 13)
			r.probe.Collector.CollectNow()
		}
	}()
	var scrapes sync.WaitGroup
	client := &http.Client{}
	for w := 0; w < 8; w++ {
		scrapes.Add(1)
		go func() {
			defer scrapes.Done()
			for i := 0; i < 25; i++ {
				for _, path := range []string{"/metrics", server.GPUsPath, server.HealthPath} {
					resp, err := client.Get(r.url + path)
					if err != nil {
						t.Error(err)
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Errorf("%s: HTTP %d", path, resp.StatusCode)
					}
					if path == "/metrics" {
						parser := expfmt.NewTextParser(model.UTF8Validation)
						if _, err := parser.TextToMetricFamilies(bytes.NewReader(body)); err != nil {
							t.Errorf("scrape does not parse: %v", err)
						}
					}
				}
			}
		}()
	}
	scrapes.Wait()
	close(stop)
	wg.Wait()
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
