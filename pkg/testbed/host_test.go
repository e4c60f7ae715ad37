package testbed_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// The hosts' node_exporter series: live /metrics/node?node= serves what the history holds, at a
// quiet hour, while node-c's models load after the restart and in the compute slowdown.
func TestLiveNodeMatchesHistory(t *testing.T) {
	s := testbed.Default(end)
	p, _ := expo.Lookup("custom")
	restart := mustIncident(t, s, testbed.WarmupRestart).Start
	slow := mustIncident(t, s, testbed.ComputeSlowdown).Start
	for _, at := range []time.Time{end.Add(-time.Hour), restart.Add(time.Minute), slow.Add(10 * time.Minute)} {
		srv := httptest.NewServer(expo.Handler(s.Source(), p, func() time.Time { return at }))
		live := map[string]float64{}
		for _, node := range s.Nodes() {
			body := get(t, srv.URL+"/metrics/node?node="+node)
			fams := parseText(t, body)
			if n := len(fams[expo.NodeCPUSeconds].GetMetric()); n != 8*len(expo.CPUModes) {
				t.Errorf("%s: %d CPU series, want %d", node, n, 8*len(expo.CPUModes))
			}
			for k, v := range flatten(t, fams, map[string]string{"instance": expo.NodeInstance(node), "job": expo.NodeJob}) {
				live[k] = v
			}
		}
		srv.Close()
		var hist bytes.Buffer
		err := expo.WriteHistory(context.Background(), &hist, expo.NodeTargets(s.HostSource()), expo.HistoryOptions{
			From: at.Add(-time.Minute), To: at.Add(time.Minute), Step: time.Minute, Job: "unused"})
		if err != nil {
			t.Fatal(err)
		}
		written := parseHistory(t, &hist, at.Unix())
		if len(live) != 3*(8*len(expo.CPUModes)+5) || len(written) != len(live) {
			t.Fatalf("at %s: %d live samples, %d history samples", at, len(live), len(written))
		}
		for k, v := range live {
			if w, ok := written[k]; !ok || w != v {
				t.Errorf("%s at %s: live %v, history %v (%v)", k, at, v, w, ok)
			}
		}
	}
}

func TestNodeHandlerErrors(t *testing.T) {
	s := testbed.Default(end)
	p, _ := expo.Lookup("custom")
	srv := httptest.NewServer(expo.Handler(s.Source(), p, func() time.Time { return end }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics/node?node=node-x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "node-a, node-b, node-c") {
		t.Errorf("unknown node: %s %q", resp.Status, body)
	}
	if index := string(get200(t, srv.URL+"/")); !strings.Contains(index, "/metrics/node?node=") {
		t.Errorf("index page does not list the node endpoint:\n%s", index)
	}
}

// Host counters are continuous through the inference server's restart (the host does not
// reboot), their rates are the documented model, the CPU time adds up, and the loads react to
// the incidents: model loading makes the disk busy and CPUs wait, the compute slowdown raises
// node-b's CPU.
func TestHostModel(t *testing.T) {
	s := testbed.Default(end)
	h := s.HostSource()
	restart := mustIncident(t, s, testbed.WarmupRestart).Start
	slow := mustIncident(t, s, testbed.ComputeSlowdown)
	rate := func(f func(time.Time) float64, a, b time.Time) float64 { return (f(b) - f(a)) / b.Sub(a).Seconds() }
	rx := func(node string) func(time.Time) float64 {
		return func(t time.Time) float64 { return h.NetworkBytes(node, false, t) }
	}
	busy := func(node string, a, b time.Time) float64 {
		var idle float64
		for c := 0; c < h.CPUs(); c++ {
			idle += rate(func(t time.Time) float64 { return h.CPUSeconds(node, c, "idle", t) }, a, b)
		}
		return 1 - idle/float64(h.CPUs())
	}

	// Continuity through node-c's restart: no counter goes back.
	before, after := restart.Add(-time.Nanosecond), restart.Add(time.Nanosecond)
	for _, mode := range expo.CPUModes {
		if a, b := h.CPUSeconds("node-c", 3, mode, before), h.CPUSeconds("node-c", 3, mode, after); b < a || b-a > 1e-3 {
			t.Errorf("node-c cpu 3 %s jumps at the restart: %v → %v", mode, a, b)
		}
	}
	for _, tx := range []bool{false, true} {
		if a, b := h.NetworkBytes("node-c", tx, before), h.NetworkBytes("node-c", tx, after); b < a || b-a > 1 {
			t.Errorf("node-c network (transmit %v) jumps at the restart: %v → %v", tx, a, b)
		}
	}
	// Every CPU's modes add up to the time since boot.
	t0 := end.Add(-time.Hour)
	for c := 0; c < h.CPUs(); c++ {
		for _, mode := range expo.CPUModes {
			if v := h.CPUSeconds("node-a", c, mode, t0); v < 0 {
				t.Errorf("cpu %d %s negative: %v", c, mode, v)
			}
		}
		up := h.CPUSeconds("node-a", c, "idle", t0.Add(time.Hour)) - h.CPUSeconds("node-a", c, "idle", t0)
		if up <= 0 || up >= 3600 {
			t.Errorf("cpu %d idle grew %v s in an hour", c, up)
		}
	}
	if s0, s1 := sumModes(h, "node-a", 2, t0), sumModes(h, "node-a", 2, t0.Add(time.Hour)); math.Abs(s1-s0-3600) > 1e-6 {
		t.Errorf("CPU modes grew %v s in an hour, want 3600", s1-s0)
	}

	// Rates over 5 minutes of steady traffic are the instantaneous model at the middle.
	for _, at := range []time.Time{t0, slow.Start.Add(20 * time.Minute)} {
		a, b := at.Add(-5*time.Minute), at
		mid := at.Add(-150 * time.Second)
		for _, node := range s.Nodes() {
			if got, want := rate(rx(node), a, b), s.HostNetworkRate(node, false, mid); math.Abs(got-want) > 1e-3*want {
				t.Errorf("%s rx at %s: %v B/s, model %v", node, at, got, want)
			}
			if got, want := busy(node, a, b), s.HostCPUBusy(node, mid); math.Abs(got-want) > 1e-3*want {
				t.Errorf("%s CPU busy at %s: %v, model %v", node, at, got, want)
			}
		}
	}
	// Traffic and payload: rx follows the diurnal request rate (3x peak/trough in the model).
	peak, trough := time.Date(2026, 11, 20, 16, 0, 0, 0, time.UTC), time.Date(2026, 11, 20, 4, 0, 0, 0, time.UTC)
	if p, q := s.HostNetworkRate("node-a", false, peak), s.HostNetworkRate("node-a", false, trough); p < 2*q {
		t.Errorf("rx at the peak %v, at the trough %v: traffic shape missing", p, q)
	}
	// The compute slowdown raises node-b's CPU above node-a's at the same instant.
	mid := slow.Start.Add(20 * time.Minute)
	if b, a := s.HostCPUBusy("node-b", mid), s.HostCPUBusy("node-a", mid); b < a*1.2 {
		t.Errorf("CPU busy in the slowdown: node-b %v, node-a %v", b, a)
	}
	// Model loading after the restart: disk busy and iowait up on node-c, not on node-a.
	la, lb := restart.Add(5*time.Second), restart.Add(55*time.Second)
	disk := func(node string) float64 {
		return rate(func(t time.Time) float64 { return h.DiskIOSeconds(node, t) }, la, lb)
	}
	if c, a := disk("node-c"), disk("node-a"); c < 0.9 || a > 0.1 {
		t.Errorf("disk busy while node-c loads: node-c %v, node-a %v", c, a)
	}
	if used, total := s.HostMemUsedBytes("node-c", t0), h.MemTotalBytes("node-c"); used <= 0 || used >= total || h.MemAvailableBytes("node-c", t0) != total-used {
		t.Errorf("memory: used %v of %v", used, total)
	}
}

func sumModes(h expo.HostSource, node string, cpu int, t time.Time) float64 {
	var sum float64
	for _, mode := range expo.CPUModes {
		sum += h.CPUSeconds(node, cpu, mode, t)
	}
	return sum
}
