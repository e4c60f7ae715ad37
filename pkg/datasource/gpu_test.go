package datasource

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// dcgmOnly is a Prometheus holding dcgm-exporter's default GPU fields of one node and no
// inference server: GPU 0 at 50 % utilisation with 30000 of 40000 MiB used, GPU 1 at 90 %
// memory (36000 used, 4000 free), whose pod label changes half-way (a pod moved).
func startDCGMOnly(t *testing.T) *promtest.Server {
	t.Helper()
	var om strings.Builder
	type series struct {
		gpu, pod         string
		util, used, free float64
		from, to         time.Duration
	}
	all := []series{
		{"0", "", 50, 30000, 10000, 0, counterSpan},
		{"1", "pod-a", 20, 36000, 4000, 0, counterSpan / 2},
		{"1", "pod-b", 20, 36000, 4000, counterSpan/2 + 15*time.Second, counterSpan},
	}
	for _, fam := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"} {
		fmt.Fprintf(&om, "# TYPE %s gauge\n", fam)
		for _, s := range all {
			v := map[string]float64{"DCGM_FI_DEV_GPU_UTIL": s.util, "DCGM_FI_DEV_FB_USED": s.used, "DCGM_FI_DEV_FB_FREE": s.free}[fam]
			labels := fmt.Sprintf(`gpu="%s",UUID="GPU-%s",modelName="NVIDIA A100-SXM4-40GB",Hostname="gpu-node-7",instance="10.1.2.3:9400",job="dcgm"`, s.gpu, s.gpu)
			if s.pod != "" {
				labels += `,pod="` + s.pod + `",namespace="ml"`
			}
			for ts := s.from; ts <= s.to; ts += 15 * time.Second {
				fmt.Fprintf(&om, "%s{%s} %g %d\n", fam, labels, v, dataStart.Add(ts).Unix())
			}
		}
	}
	om.WriteString("# EOF\n")
	return promtest.StartWithHistory(t, om.String(), promtest.Options{})
}

// TestGPUWithoutInferenceServer: dcgm-exporter alone. gpu and gpumem_forecast answer from the
// GPU series (memory = used / (used + free), node from Hostname); the idle condition, which
// needs the servers' traffic, says so.
func TestGPUWithoutInferenceServer(t *testing.T) {
	srv := startDCGMOnly(t)
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))
	from, to := dataStart.Add(5*time.Minute), dataStart.Add(55*time.Minute)
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("gpu", from, to, time.Minute, map[string]any{"refId": "gpu", "queryType": "gpu", "instance": "gpu-node-7:8000", "metrics": "memory|util"}),
		dataQuery("other", from, to, time.Minute, map[string]any{"refId": "other", "queryType": "gpu", "instance": "10.1.2.3"}),
		dataQuery("fc", from, to, time.Minute, map[string]any{"refId": "fc", "queryType": "gpumem_forecast", "gpu": "1"}),
		dataQuery("idle", from, to, time.Minute, map[string]any{"refId": "idle", "queryType": "gpu_idle_under_traffic"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"0/memory": 0.75, "0/util": 0.5, "1/memory": 0.9, "1/util": 0.2}
	g := resp.Responses["gpu"]
	if g.Error != nil || len(g.Frames) != len(want) {
		t.Fatalf("gpu: %v, %d frames", g.Error, len(g.Frames))
	}
	for _, f := range g.Frames {
		l := f.Fields[1].Labels
		w, ok := want[l["gpu"]+"/"+l["series"]]
		if !ok || l["node"] != "gpu-node-7" {
			t.Errorf("unexpected series %v", l)
			continue
		}
		if f.Rows() != 51 {
			t.Errorf("%v: %d points, want 51", l, f.Rows())
		}
		for i := 0; i < f.Rows(); i++ {
			v, ok := f.Fields[1].ConcreteAt(i)
			if !ok || math.Abs(v.(float64)-w) > 1e-12 {
				t.Errorf("%v at %d: %v, want %g (no gap where the pod label changed)", l, i, v, w)
				break
			}
		}
	}
	// The node comes from Hostname, not from the exporter's own address.
	if o := resp.Responses["other"]; o.Error != nil || len(o.Frames) != 1 || o.Frames[0].Rows() != 0 || len(o.Frames[0].Meta.Notices) == 0 {
		t.Errorf("instance 10.1.2.3: %v, %d frames", o.Error, len(o.Frames))
	}
	fc := resp.Responses["fc"]
	if fc.Error != nil || len(fc.Frames) != 3 {
		t.Fatalf("gpumem_forecast: %v, %d frames", fc.Error, len(fc.Frames))
	}
	for _, f := range fc.Frames {
		if f.Fields[1].Labels["series"] != "state" {
			continue
		}
		if v, _ := f.Fields[1].ConcreteAt(f.Rows() - 1); v != 2.0 {
			t.Errorf("flat memory: state %v, want 2 (not rising)", v)
		}
	}
	var notices []string
	for _, n := range fc.Frames[0].Meta.Notices {
		notices = append(notices, n.Text)
	}
	if !strings.Contains(strings.Join(notices, "\n"), "warm-up filter has nothing to go by") {
		t.Errorf("forecast notices %q", notices)
	}
	if idle := resp.Responses["idle"]; idle.Error == nil || idle.Status != backend.StatusBadRequest || !strings.Contains(idle.Error.Error(), "profile") {
		t.Errorf("idle without an inference server: %v %v", idle.Status, idle.Error)
	}
}
