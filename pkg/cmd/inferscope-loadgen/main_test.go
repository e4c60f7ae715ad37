package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/mockclock"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func TestBadFlagsAreUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "not defined"},
		{[]string{"--end=yesterday"}, "RFC 3339"},
		{[]string{"--history-days=0"}, "between 1 and 60"},
		{[]string{"--history-step=500ms"}, "between 1s and 1h"},
		{[]string{"--profile=nope"}, "unknown profile"},
		{[]string{"--scenario=other"}, "unknown scenario"},
		{[]string{"--serve"}, "--serve only makes sense"},
		{[]string{"--history-out=a", "--tsdb-out=b"}, "choose one"},
		{[]string{"--warm-test-cache", "--serve"}, "stands alone"},
		{[]string{"--history-out=-", "--serve"}, "stdout"},
		{[]string{"--job="}, "job"},
		{[]string{"--gpu-naming=nvsmi"}, "--gpu-naming"},
		{[]string{"--gpu-history-days=9"}, "--gpu-history-days"},
		{[]string{"--history-days=2", "--gpu-history-days=3"}, "--gpu-history-days"},
		{[]string{"stray"}, "unexpected arguments"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		err := run(context.Background(), c.args, io.Discard, &stderr, nil)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error mentioning %q", c.args, err, c.want)
		}
	}
}

func TestHistoryFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h.om")
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--history-out=" + out, "--history-days=1", "--history-step=10m",
		"--end=2026-11-23T12:00:00Z"}, io.Discard, &stderr, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("# TYPE inference_requests counter\n")) || !bytes.HasSuffix(b, []byte("\n# EOF\n")) {
		t.Errorf("not an OpenMetrics history: starts %q, ends %q", b[:40], b[len(b)-20:])
	}
	// One day every 10 minutes, both ends included: 145 points for a series present throughout.
	series := `inference_requests_total{model_name="recsys-ranker",model_version="v1.4.0",status="ok",instance="node-a:8000",job="inference"} `
	if n := bytes.Count(b, []byte(series)); n != 145 {
		t.Errorf("%d points for %s, want 145", n, series)
	}
	if !strings.Contains(stderr.String(), "history: 100%") || !strings.Contains(stderr.String(), "every 10m0s") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
}

// Every naming writes its own engine's series, and the probes' GPU series in the chosen GPU
// naming ride along with their own job, instance and node labels.
func TestHistoryFileProfilesAndGPUNaming(t *testing.T) {
	cases := []struct {
		profile, gpu  string
		want, wantGPU string
	}{
		{"vllm", "inferscope", `vllm:e2e_request_latency_seconds_bucket{model_name="recsys-ranker",engine="0",instance="node-a:8000",job="inference",le="0.3"} `,
			`inferscope_gpu_utilization_ratio{gpu="6",uuid="` + testbed.GPUUUID("node-a:8000", 6) + `",instance="node-a:9835",job="inferscope-probe",node="node-a"} `},
		{"triton", "dcgm", `nv_inference_request_duration_us{model="recsys-ranker",version="v1.4.0",gpu_uuid="` + testbed.GPUUUID("node-b:8000", 0) + `",instance="node-b:8000",job="inference"} `,
			// Today's dcgm-exporter: hostname (Hostname before 4.8.3), pci_bus_id and the driver label.
			`DCGM_FI_DEV_GPU_UTIL{DCGM_FI_DRIVER_VERSION="550.54.15",UUID="` + testbed.GPUUUID("node-b:8000", 1) + `",container="model-server",device="nvidia1",gpu="1",hostname="node-b",modelName="NVIDIA A100-SXM4-40GB",namespace="inference",pci_bus_id="00000000:17:00.0",pod="inference-0",instance="node-b:9835",job="inferscope-probe",node="node-b"} `},
		// dcgm-exporter 4.9's names and driver label, and 3.x's Hostname without pci_bus_id.
		{"vllm", "dcgm-4.9+xid-count", `vllm:e2e_request_latency_seconds_bucket{model_name="recsys-ranker",engine="0",instance="node-a:8000",job="inference",le="0.3"} `,
			`DCGM_FI_DEV_GPU_UTIL_RATIO{DCGM_FI_SYSTEM_DRIVER_VERSION="550.54.15",UUID="` + testbed.GPUUUID("node-a:8000", 2) + `",container="model-server",device="nvidia2",gpu="2",hostname="node-a",modelName="NVIDIA A100-SXM4-40GB",namespace="inference",pci_bus_id="00000000:27:00.0",pod="inference-1",instance="node-a:9835",job="inferscope-probe",node="node-a"} `},
		{"vllm", "dcgm-3", `vllm:e2e_request_latency_seconds_bucket{model_name="recsys-ranker",engine="0",instance="node-a:8000",job="inference",le="0.3"} `,
			`DCGM_FI_DEV_GPU_UTIL{DCGM_FI_DRIVER_VERSION="550.54.15",Hostname="node-a",UUID="` + testbed.GPUUUID("node-a:8000", 2) + `",container="model-server",device="nvidia2",gpu="2",modelName="NVIDIA A100-SXM4-40GB",namespace="inference",pod="inference-1",instance="node-a:9835",job="inferscope-probe",node="node-a"} `},
		{"triton-summaries", "none", `nv_inference_request_summary_us{model="recsys-ranker",version="v1.4.0",gpu_uuid="` + testbed.GPUUUID("node-b:8000", 3) + `",instance="node-b:8000",job="inference",quantile="0.99"} `, ""},
		{"triton-vllm", "none", `vllm:num_requests_running{model="recsys-ranker",version="v1.4.0",instance="node-a:8000",job="inference"} `, ""},
		{"torchserve", "none", `ts_inference_latency_microseconds{model_name="text-embedder",model_version="v2.1.0",hostname="node-c",instance="node-c:8000",job="inference"} `, ""},
		{"tgi", "inferscope", `tgi_request_duration_bucket{model_name="text-embedder",instance="node-c:8000",job="inference",le="0.00015000000000000001"} `,
			`inferscope_gpu_memory_used_bytes{gpu="0",uuid="` + testbed.GPUUUID("node-c:8000", 0) + `",instance="node-c:9835",job="inferscope-probe",node="node-c"} `},
		{"sglang", "none", `sglang:queue_time_seconds_bucket{model_name="recsys-ranker",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0",instance="node-b:8000",job="inference",le="0.005"} `, ""},
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "h.om")
		err := run(context.Background(), []string{"--history-out=" + out, "--history-days=1", "--gpu-history-days=1", "--history-step=30m",
			"--profile=" + c.profile, "--gpu-naming=" + c.gpu, "--end=2026-11-23T12:00:00Z"}, io.Discard, io.Discard, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.profile, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		// One day every 30 minutes, both ends included.
		if n := bytes.Count(b, []byte(c.want)); n != 49 {
			t.Errorf("%s: %d points of %s, want 49", c.profile, n, c.want)
		}
		if c.wantGPU != "" {
			if n := bytes.Count(b, []byte(c.wantGPU)); n != 49 {
				t.Errorf("%s: %d points of %s, want 49", c.profile, n, c.wantGPU)
			}
		} else if bytes.Contains(b, []byte(`job="inferscope-probe"`)) {
			t.Errorf("%s: GPU series written with --gpu-naming=none", c.profile)
		}
	}
}

func TestHistoryHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, []string{"--history-out=" + filepath.Join(t.TempDir(), "h.om")}, io.Discard, io.Discard, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled history: %v", err)
	}
}

// The documented layout works with a real Prometheus: history imported with --tsdb-out, the same
// scenario served live, one target per instance via the printed scrape configuration. The
// scraped series carry the history's instance and job labels and continue its counters without a
// reset.
func TestTSDBThenLiveScrapeIsSeamless(t *testing.T) {
	promtest.RequireBinary(t, "promtool")
	promtest.RequireBinary(t, "prometheus")
	dataDir := filepath.Join(t.TempDir(), "data")
	endAt := time.Now().UTC().Truncate(time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr promtest.LogBuffer
	go func() {
		done <- run(ctx, []string{"--tsdb-out=" + dataDir, "--serve", "--listen=127.0.0.1:0", "--history-days=1",
			"--history-step=2m", "--end=" + endAt.Format(time.RFC3339)}, io.Discard, &stderr, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("loadgen stopped: %v\n%s", err, stderr.String())
	case <-time.After(5 * time.Minute):
		t.Fatalf("loadgen did not start serving\n%s", stderr.String())
	}

	s := testbed.Default(endAt)
	srv := promtest.Start(t, promtest.Options{DataDir: dataDir, ConfigYAML: expo.PrometheusConfig(addr, s.Instances(), time.Second)})

	// Wait for every instance's scrape to succeed.
	deadline := time.Now().Add(time.Minute)
	for {
		up := query(t, srv.URL, `up{job="inference"} == 1`, time.Now())
		if len(up) == len(s.Instances()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("targets not up: %v\n%s", up, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	now := time.Now()
	got := query(t, srv.URL, `count by (instance, job) (model_loading_status)`, now)
	for _, inst := range s.Instances() {
		if got[fmt.Sprintf(`map[instance:%s job:inference]`, inst)] != 2 {
			t.Errorf("live series of %s: %v", inst, got)
		}
	}
	// A reset would show a live value below the history's last one.
	resets := query(t, srv.URL, `sum(resets(inference_requests_total{instance="node-a:8000"}[10m]))`, now)
	if len(resets) != 1 || resets["map[]"] != 0 {
		t.Errorf("counters reset between history and live scrape: %v", resets)
	}
	samples := query(t, srv.URL, `count_over_time(process_start_time_seconds{instance="node-a:8000"}[10m])`, now)
	for _, n := range samples {
		if n < 3 { // history samples before endAt plus live scrapes after it
			t.Errorf("only %v samples around the seam", n)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("loadgen did not stop on cancel")
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("no shutdown message:\n%s", stderr.String())
	}
}

func query(t *testing.T, base, expr string, at time.Time) map[string]float64 {
	t.Helper()
	u := base + "/api/v1/query?" + url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query %s: %v %s", expr, err, body.Error)
	}
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		v, _ := strconv.ParseFloat(r.Value[1].(string), 64)
		out[fmt.Sprint(r.Metric)] = v
	}
	return out
}

// The live server also serves the scenario's GPU clock: a mock probe's clock reads the same
// truth as the scenario in this process.
func TestServesTheGPUClock(t *testing.T) {
	endAt := time.Now().UTC().Truncate(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr promtest.LogBuffer
	go func() {
		done <- run(ctx, []string{"--listen=127.0.0.1:0", "--end=" + endAt.Format(time.RFC3339)}, io.Discard, &stderr, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("loadgen stopped: %v\n%s", err, stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("loadgen did not start serving\n%s", stderr.String())
	}
	s := testbed.Default(endAt)
	want := gpuclock.FromScenario(s, mockclock.DGXA100)
	remote, err := mockclock.NewRemote("http://"+addr, mockclock.DGXA100, 8, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := endAt.Add(-time.Minute)
	for _, inst := range s.Instances() {
		for g := range 8 {
			if got, w := remote.GPU(inst, g, at), want.GPU(inst, g, at); !reflect.DeepEqual(got, w) {
				t.Fatalf("%s gpu %d: served %+v, scenario %+v", inst, g, got, w)
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
