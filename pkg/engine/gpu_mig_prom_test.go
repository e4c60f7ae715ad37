package engine

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// A MIG-partitioned node and dcgm-exporter's profiling fields, on a real Prometheus. The history
// holds, for two hours from busyT0 at a 15 s scrape:
//
//	gpu-node-9  pkg/gpufields/testdata/dcgm-4.8-mig.prom as scraped: GPU 0 in three GPU instances
//	            (GPU_I_ID 2, 3, 9), GPU 1 whole; XID 31 appears at minute 30 on GPU 0 (every
//	            instance's series carries it, before that err_code "0")
//	gpu-node-5  one whole GPU whose utilisation says 30 % (a polling kernel) while its graphics
//	            engine is 0.1 % active
//	gpu-node-6  one whole GPU at 0 % utilisation, without profiling fields
//
// and on every node a custom-profile server answering 10 requests/s since a day before, ready.

var busyT0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

const busySpan = 2 * time.Hour

// migFixtureSamples reads the fixture's samples (name{labels} value).
func migFixtureSamples(t *testing.T) [][2]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "gpufields", "testdata", "dcgm-4.8-mig.prom"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out = append(out, [2]string{line[:i], line[i+1:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func busyHistory(t *testing.T) string {
	var b strings.Builder
	ts := func(s int) int64 { return busyT0.Unix() + int64(s) }
	end := int(busySpan.Seconds())
	typed := map[string]bool{}
	series := func(name, typ, labels string, value func(s int) (float64, bool)) {
		if !typed[name] {
			fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
			typed[name] = true
		}
		for s := 0; s <= end; s += 15 {
			if v, ok := value(s); ok {
				fmt.Fprintf(&b, "%s%s %g %d\n", name, labels, v, ts(s))
			}
		}
	}
	const xidAt = 30 * 60
	byName := map[string][][2]string{}
	var names []string
	for _, smp := range migFixtureSamples(t) {
		name := smp[0][:strings.IndexByte(smp[0], '{')]
		if _, ok := byName[name]; !ok {
			names = append(names, name)
		}
		byName[name] = append(byName[name], smp)
	}
	for _, name := range names {
		for _, smp := range byName[name] {
			labels := smp[0][len(name):]
			labels = labels[:len(labels)-1] + `,job="dcgm-exporter",instance="gpu-node-9:9400"}`
			var v float64
			fmt.Sscan(smp[1], &v)
			if name == "DCGM_FI_DEV_XID_ERRORS" && strings.Contains(labels, `err_code="31"`) {
				before := strings.NewReplacer(`err_code="31"`, `err_code="0"`, `err_msg="GPU memory page fault"`, `err_msg="No Error"`).Replace(labels)
				series(name, "gauge", before, func(s int) (float64, bool) { return 0, s < xidAt })
				series(name, "gauge", labels, func(s int) (float64, bool) { return v, s >= xidAt })
				continue
			}
			typ := "gauge"
			if strings.HasSuffix(name, "_COUNTER") || strings.HasSuffix(name, "_CONSUMPTION") {
				typ = "counter"
			}
			series(name, typ, labels, func(int) (float64, bool) { return v, true })
		}
	}
	whole := func(node string) string {
		return fmt.Sprintf(`{gpu="0",UUID="GPU-%s",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname=%q,job="dcgm-exporter",instance="%s:9400"}`, node, node, node)
	}
	series("DCGM_FI_DEV_GPU_UTIL", "gauge", whole("gpu-node-5"), func(int) (float64, bool) { return 30, true })
	series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", whole("gpu-node-5"), func(int) (float64, bool) { return 0.001, true })
	series("DCGM_FI_DEV_GPU_UTIL", "gauge", whole("gpu-node-6"), func(int) (float64, bool) { return 0, true })
	// The servers: a request counter from a day before busyT0 on, once a minute.
	b.WriteString("# TYPE inference_requests counter\n")
	for _, node := range []string{"gpu-node-9", "gpu-node-5", "gpu-node-6"} {
		for s := -25 * 3600; s <= end; s += 60 {
			fmt.Fprintf(&b, "inference_requests_total{model=\"m\",status=\"ok\",job=\"inference\",instance=\"%s:8000\"} %d %d\n", node, 10*(s+25*3600), ts(s))
		}
	}
	b.WriteString("# TYPE model_loading_status gauge\n")
	for _, node := range []string{"gpu-node-9", "gpu-node-5", "gpu-node-6"} {
		for s := -25 * 3600; s <= end; s += 60 {
			fmt.Fprintf(&b, "model_loading_status{model=\"m\",job=\"inference\",instance=\"%s:8000\"} 1 %d\n", node, ts(s))
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

func startBusyBed(t *testing.T) *Engine {
	t.Helper()
	c, err := prom.New(promtest.StartWithHistory(t, busyHistory(t), promtest.Options{}).URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e, err := New(context.Background(), Config{Prom: c, Profile: "custom"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func lastValue(s Series) float64 {
	for i := len(s.V) - 1; i >= 0; i-- {
		if !math.IsNaN(s.V[i]) {
			return s.V[i]
		}
	}
	return math.NaN()
}

// TestMIGAndProfilingFields: on the MIG node each GPU instance is its own GPU of the `gpu` type
// (labels gpu and mig), its memory judged over the instance's own framebuffer — the 1g.10gb
// instance at 94.9 % while the card as a whole is at 63 % —, its activity from the profiling
// fields, and no utilisation (dcgm-exporter has none for MIG instances); the whole GPU keeps its
// utilisation too. Where no profiling field is exported the type says "not measured". The XID of
// the MIG GPU, repeated on its three instances, counts once.
func TestMIGAndProfilingFields(t *testing.T) {
	e := startBusyBed(t)
	b := bed{e: e}
	from, to := busyT0.Add(40*time.Minute), busyT0.Add(60*time.Minute)
	res := b.run(t, `{"queryType":"gpu","instance":["gpu-node-9"]}`, from, to, time.Minute)
	mig := func(id string) map[string]string {
		return map[string]string{"node": "gpu-node-9", "gpu": "0", "mig": id}
	}
	whole := map[string]string{"node": "gpu-node-9", "gpu": "1"}
	for _, c := range []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"memory", mig("2"), 30720.0 / (30720 + 8960 + 512)},
		{"memory", mig("3"), 4096.0 / (4096 + 15616 + 256)},
		{"memory", mig("9"), 9472.0 / (9472 + 256 + 256)},
		{"memory", whole, 77824.0 / (77824 + 3046 + 690)},
		{"engine_active", mig("2"), 0.612345},
		{"engine_active", mig("9"), 0.000812},
		{"tensor_active", mig("3"), 0.051234},
		{"dram_active", mig("9"), 0.000301},
		{"engine_active", whole, 0.734562},
		{"util", whole, 0.92},
		{"power", mig("3"), 287.5},
		{"temperature", whole, 47},
	} {
		if got := lastValue(pick(t, res, c.metric, c.labels)); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s of %v: %v, want %v", c.metric, c.labels, got, c.want)
		}
	}
	count := map[string]int{}
	for _, s := range res.Series {
		count[s.Name]++
		if s.Labels["gpu"] == "0" && s.Labels["mig"] == "" {
			t.Errorf("a %s series of the MIG GPU as a whole: its instances are the GPUs", s.Name)
		}
	}
	if count["util"] != 1 || count["memory"] != 4 || count["engine_active"] != 4 {
		t.Errorf("series per measurement %v: want util for the whole GPU only, memory and activity for the 3 instances and the whole GPU", count)
	}

	res = b.run(t, `{"queryType":"gpu","instance":["gpu-node-6"]}`, from, to, time.Minute)
	for _, s := range res.Series {
		if strings.HasSuffix(s.Name, "_active") {
			t.Errorf("%s series where no profiling field is exported", s.Name)
		}
	}
	if got := lastValue(pick(t, res, "util", map[string]string{"node": "gpu-node-6"})); got != 0 {
		t.Errorf("gpu-node-6 util %v, want 0", got)
	}

	hw, err := e.Reader().HardwareReadings(context.Background(), HardwareQuery{Nodes: []string{"gpu-node-9"}, From: busyT0.Add(20 * time.Minute), To: busyT0.Add(50 * time.Minute), Before: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if h := hw.Nodes["gpu-node-9"]; h.XIDNow != 1 || h.XIDBefore != 0 {
		t.Errorf("gpu-node-9: XID %v in the window (%v before), want 1 (0): one event on a GPU of three instances", h.XIDNow, h.XIDBefore)
	}
}

// TestGPUIdleFromEngineActivity: the idle-under-traffic condition reads the graphics engine where
// dcgm-exporter exports it: gpu-node-5's GPU, 30 % "utilised" by a polling kernel, is idle (its
// engine 0.1 % active); the MIG node's 1g.10gb instance, which has no utilisation at all, is idle
// by its engine and its busy instances and whole GPU are not; gpu-node-6, without profiling
// fields, is judged by its utilisation and the notice says the engine activity is not measured
// there.
func TestGPUIdleFromEngineActivity(t *testing.T) {
	e := startBusyBed(t)
	b := bed{e: e}
	from, to := busyT0.Add(40*time.Minute), busyT0.Add(90*time.Minute)
	res := b.run(t, `{"queryType":"gpu_idle_under_traffic"}`, from, to, 5*time.Minute)
	for _, c := range []struct {
		labels map[string]string
		idle   float64
		input  string
	}{
		{map[string]string{"node": "gpu-node-5", "gpu": "0"}, 1, "engine_active"},
		{map[string]string{"node": "gpu-node-6", "gpu": "0"}, 1, "util"},
		{map[string]string{"node": "gpu-node-9", "gpu": "0", "mig": "9"}, 1, "engine_active"},
		{map[string]string{"node": "gpu-node-9", "gpu": "0", "mig": "2"}, 0, "engine_active"},
		{map[string]string{"node": "gpu-node-9", "gpu": "1"}, 0, "engine_active"},
	} {
		if got := lastValue(pick(t, res, "idle_under_traffic", c.labels)); got != c.idle {
			t.Errorf("%v: idle under traffic %v, want %v", c.labels, got, c.idle)
		}
		pick(t, res, c.input, c.labels)
	}
	n := notices(res)
	if !strings.Contains(n, "graphics engine active: not measured") || !strings.Contains(n, "gpu-node-6 GPU 0") || strings.Contains(n, "gpu-node-5 GPU 0") {
		t.Errorf("the notice does not name the GPU judged by utilisation alone:\n%s", n)
	}
}
