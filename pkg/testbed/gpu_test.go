package testbed_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/pkg/probe"
	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/gpu/nvmlgpu"
	"github.com/inferscope/inferscope/pkg/probe/mockgpu"
	"github.com/inferscope/inferscope/pkg/probe/promexport"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// The GPU history is what a Prometheus scraping the real probe in mock mode stores: for the
// history's families, every series (labels) and value the probe serves at an instant is in the
// history at that instant, and nothing else. XID counters are left out of the comparison: a
// probe started for the test has seen no XID yet, the history's probe has run all along.
func TestGPUHistoryIsWhatTheProbeServes(t *testing.T) {
	s := testbed.Default(end)
	slow := mustIncident(t, s, testbed.ComputeSlowdown)
	idle := mustIncident(t, s, testbed.GPUIdle)
	for _, naming := range promexport.Namings {
		for _, c := range []struct {
			instance string
			at       time.Time
		}{{slow.Instance, slow.Start.Add(10 * time.Minute)}, {idle.Instance, idle.Start.Add(5 * time.Minute)}, {"node-c:8000", end.Add(-30 * time.Hour)}} {
			served := scrapeMockProbe(t, s, naming, c.instance, c.at)

			targets, err := s.GPUTargets(string(naming), c.at.Add(-time.Hour), c.at)
			if err != nil {
				t.Fatal(err)
			}
			var hist bytes.Buffer
			err = expo.WriteHistory(context.Background(), &hist, targets, expo.HistoryOptions{From: c.at.Add(-time.Minute), To: c.at, Step: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			written := parseHistory(t, &hist, c.at.Unix())
			node := testbed.Node(c.instance)
			kept := map[string]bool{}
			for _, f := range testbed.GPUHistoryFamilies(string(naming)) {
				kept[f] = true
			}
			want := map[string]float64{}
			for name, f := range served {
				if !kept[name] || strings.Contains(name, "XID") || strings.Contains(name, "xid") {
					continue
				}
				for k, v := range flatten(t, map[string]*dto.MetricFamily{name: f}, map[string]string{
					"job": testbed.ProbeJob, "instance": testbed.ProbeInstance(c.instance), "node": node}) {
					want[k] = v
				}
			}
			got := map[string]float64{}
			for k, v := range written {
				if strings.Contains(k, "instance=\""+testbed.ProbeInstance(c.instance)+"\"") && !strings.Contains(k, "XID") && !strings.Contains(k, "xid") {
					got[k] = v
				}
			}
			if len(want) < 8*5 || len(got) != len(want) {
				t.Errorf("%s %s at %s: probe serves %d samples of the history's families, history has %d", naming, c.instance, c.at, len(want), len(got))
			}
			for k, v := range want {
				if w, ok := got[k]; !ok || w != v {
					t.Errorf("%s %s at %s: %s: probe %v, history %v (present %v)", naming, c.instance, c.at, k, v, w, ok)
				}
			}
		}
	}
	for _, inst := range s.Instances() {
		for g := 0; g < s.GPUsPerInstance(); g++ {
			if a, b := testbed.GPUUUID(inst, g), mockgpu.UUIDFor(testbed.GPUSystem, inst, g); a != b {
				t.Errorf("%s GPU %d: test bed UUID %s, mock %s", inst, g, a, b)
			}
			if a, b := testbed.GPUPCIBusID(g), mockgpu.BusIDFor(g); a != b {
				t.Errorf("GPU %d: test bed PCI bus id %s, mock %s", g, a, b)
			}
		}
	}
}

// scrapeMockProbe runs inferscope-probe's assembly on the scenario's mock GPUs at one instant
// and returns its parsed /metrics.
func scrapeMockProbe(t *testing.T, s *testbed.Scenario, naming promexport.Naming, instance string, at time.Time) map[string]*dto.MetricFamily {
	t.Helper()
	now := func() time.Time { return at }
	sys, err := mockgpu.New(mockgpu.Options{System: testbed.GPUSystem, Clock: gpuclock.FromScenario(s, testbed.GPUSystem),
		Instance: instance, Now: now, EventPoll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p, err := probe.New(probe.Config{
		Open:     func() (gpu.Library, error) { return nvmlgpu.Open(sys, nvmlgpu.WithEventWait(time.Millisecond)) },
		Interval: time.Hour, Naming: naming, Hostname: testbed.Node(instance), Version: "test",
		Mock: testbed.GPUSystem, Owners: mockgpu.Owners{Instance: instance}, Now: now, NoRuntimeMetrics: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer func() {
		srv.Close()
		p.Close()
	}()
	return parseText(t, get200(t, srv.URL+"/metrics"))
}

// The probes' GPU series in Prometheus equal the scenario's GPU truth: memory near full on
// node-b's GPUs 0-3 during the compute slowdown, utilisation 0 with the gpu_idle clock reason and
// an XID 43 on node-a's GPU 6 during the GPU-idle incident, and GPU history only over the last
// DefaultGPUHistoryDays.
func TestGPUHistoryInPrometheus(t *testing.T) {
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	gpuSel := func(instance string, g int) string {
		return fmt.Sprintf(`job=%q,instance=%q,node=%q,gpu="%d",uuid=%q`, testbed.ProbeJob, testbed.ProbeInstance(instance),
			testbed.Node(instance), g, testbed.GPUUUID(instance, g))
	}

	slow := mustIncident(t, s, testbed.ComputeSlowdown)
	for _, at := range []time.Time{slow.Start.Add(-30 * time.Minute), slow.Start.Add(10 * time.Minute), slow.Start.Add(30 * time.Minute)} {
		for g := 0; g < s.GPUsPerInstance(); g++ {
			sel := gpuSel(slow.Instance, g)
			got := scalar(t, srv.URL, `inferscope_gpu_memory_used_bytes{`+sel+`} / inferscope_gpu_memory_total_bytes{`+sel+`}`, at)
			truth := s.GPU(slow.Instance, g, at)
			// Used memory is whole bytes: 1 byte of 40 GiB.
			if math.Abs(got-truth.MemUsedRatio) > 1e-9 {
				t.Errorf("node-b GPU %d at %s: memory %v, truth %v", g, at, got, truth.MemUsedRatio)
			}
			inSlowdown := !at.Before(slow.Start) && g < 4
			if inSlowdown != (got > 0.92) {
				t.Errorf("node-b GPU %d at %s: memory %.3f; near full (> 92 %%) should be %v", g, at, got, inSlowdown)
			}
			if temp := scalar(t, srv.URL, `inferscope_gpu_temperature_celsius{`+sel+`}`, at); temp != math.Round(truth.TempCelsius) {
				t.Errorf("node-b GPU %d at %s: %v °C, truth %v", g, at, temp, truth.TempCelsius)
			}
			if w := scalar(t, srv.URL, `inferscope_gpu_power_watts{`+sel+`}`, at); math.Abs(w-truth.PowerWatts) > 0.0005 {
				t.Errorf("node-b GPU %d at %s: %v W, truth %v", g, at, w, truth.PowerWatts)
			}
		}
	}

	idle := mustIncident(t, s, testbed.GPUIdle)
	gi := idle.GPUs[0]
	mid := idle.Start.Add(idle.End.Sub(idle.Start) / 2).Truncate(time.Minute)
	for g := 0; g < s.GPUsPerInstance(); g++ {
		sel := gpuSel(idle.Instance, g)
		util := scalar(t, srv.URL, `inferscope_gpu_utilization_ratio{`+sel+`}`, mid)
		if want := math.Round(100*s.GPU(idle.Instance, g, mid).UtilRatio) / 100; util != want || (g == gi) != (util == 0) {
			t.Errorf("node-a GPU %d in the idle incident: utilisation %v, truth %v", g, util, want)
		}
		reason := scalar(t, srv.URL, `inferscope_gpu_clock_event_reason_active{`+sel+`,reason="gpu_idle"}`, mid)
		if (g == gi) != (reason == 1) {
			t.Errorf("node-a GPU %d in the idle incident: gpu_idle clock reason %v", g, reason)
		}
	}
	xid := `inferscope_gpu_xid_errors_total{` + gpuSel(idle.Instance, gi) + `,xid="43"}`
	if v := scalar(t, srv.URL, xid, mid); v != 1 {
		t.Errorf("XID 43 count in the idle incident: %v", v)
	}
	if res := promQuery(t, srv.URL, xid, idle.Start.Add(-10*time.Minute)); len(res) != 0 {
		t.Errorf("XID series before the first XID: %v", res)
	}
	if v := scalar(t, srv.URL, `count(inferscope_gpu_xid_errors_total)`, end); v != 1 {
		t.Errorf("%v XID series, want the idle GPU's only", v)
	}
	ecc := `inferscope_gpu_ecc_errors_total{` + gpuSel("node-b:8000", 2) + `,type="corrected"}`
	if v := scalar(t, srv.URL, ecc, end); v != float64(s.GPU("node-b:8000", 2, end).ECCCorrected) || v == 0 {
		t.Errorf("node-b GPU 2 corrected ECC errors: %v", v)
	}

	// Every node's 8 GPUs, the last DefaultGPUHistoryDays only.
	span := time.Duration(testbed.DefaultGPUHistoryDays) * 24 * time.Hour
	if v := scalar(t, srv.URL, `count(inferscope_gpu_utilization_ratio)`, end.Add(-span+time.Hour)); v != 24 {
		t.Errorf("%v GPU utilisation series, want 3 nodes x 8", v)
	}
	if res := promQuery(t, srv.URL, `count(inferscope_gpu_utilization_ratio)`, end.Add(-span-time.Hour)); len(res) != 0 {
		t.Errorf("GPU series before the GPU history: %v", res)
	}
	var names []string
	for k := range promQuery(t, srv.URL, `count by (__name__) ({job="`+testbed.ProbeJob+`"})`, end) {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) != len(testbed.GPUHistoryFamilies(testbed.GPUNamingInferscope)) {
		t.Errorf("GPU families in the history: %v", names)
	}
}
