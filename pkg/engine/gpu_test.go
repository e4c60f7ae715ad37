package engine

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/prom"
)

func TestInstanceAndGPUNode(t *testing.T) {
	for in, want := range map[string]string{
		"node-a:8000": "node-a", "node-a": "node-a", "10.0.0.5:9400": "10.0.0.5",
		"[fe80::1]:8000": "fe80::1", "[fe80::1]": "fe80::1", " node-b:1 ": "node-b", "": "",
	} {
		if got := InstanceNode(in); got != want {
			t.Errorf("InstanceNode(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"node": "n1", "Hostname": "h", "hostname": "x", "instance": "i:1"}, "n1"},
		{map[string]string{"Hostname": "h", "hostname": "x", "instance": "i:1"}, "h"},
		{map[string]string{"hostname": "x", "instance": "i:1"}, "x"},
		{map[string]string{"instance": "10.1.2.3:9400"}, "10.1.2.3"},
		{map[string]string{"node": "", "instance": "i:1"}, "i"},
	} {
		if got := GPUNode(c.labels); got != c.want {
			t.Errorf("GPUNode(%v) = %q, want %q", c.labels, got, c.want)
		}
	}
}

func TestNodeInstancePattern(t *testing.T) {
	re := regexp.MustCompile("^(?:" + nodeInstancePattern([]string{"node-a", "10.0.0.1", "fe80::1", "a.b*c"}) + ")$")
	for s, want := range map[string]bool{
		"node-a": true, "node-a:9835": true, "10.0.0.1:9400": true, "[fe80::1]:8000": true, "fe80::1": true, "a.b*c:1": true,
		"node-ab": false, "xnode-a": false, "node-a:": false, "node-a:80x": false, "10.0.0.10": false, "10a0b0c1": false, "abbbc": false,
	} {
		if re.MatchString(s) != want {
			t.Errorf("pattern matches %q: %v, want %v", s, !want, want)
		}
	}
}

// TestGPUSelectorEscaping: filter values reach PromQL only quoted and regex-escaped, so they can
// neither close the selector nor widen the match.
func TestGPUSelectorEscaping(t *testing.T) {
	evil := `x"} or vector(1) or {a="`
	sel, err := gpuSelector(gpuSources[GPUUtil], GPUFilter{Instances: []string{evil + ":80"}, GPUs: []string{`.*`, `0"}`}})
	if err != nil {
		t.Fatal(err)
	}
	skeleton, literals := splitLiterals(t, sel)
	arm := `{__name__=~S,gpu=~S,%s=~S}`
	var arms []string
	for _, l := range []string{"node", "Hostname", "hostname", "instance"} {
		arms = append(arms, fmt.Sprintf(arm, l))
	}
	if want := strings.Join(arms, " or "); skeleton != want {
		t.Fatalf("selector shape\n%s\nwant\n%s", skeleton, want)
	}
	// Prometheus' own parser sees four plain selectors joined by or, each with three matchers.
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(sel)
	if err != nil {
		t.Fatalf("%s: %v", sel, err)
	}
	selectors := 0
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.BinaryExpr:
			if n.Op != parser.LOR {
				t.Errorf("operator %s in %s", n.Op, sel)
			}
		case *parser.VectorSelector:
			selectors++
			if len(n.LabelMatchers) != 3 {
				t.Errorf("selector %s has %d matchers", n, len(n.LabelMatchers))
			}
		case nil:
		default:
			t.Errorf("unexpected %T in %s", n, sel)
		}
		return nil
	})
	if selectors != 4 {
		t.Errorf("%d selectors in %s", selectors, sel)
	}
	gpuRE := regexp.MustCompile("^(?:" + literals[1] + ")$")
	for s, want := range map[string]bool{".*": true, `0"}`: true, "5": false, "": false} {
		if gpuRE.MatchString(s) != want {
			t.Errorf("gpu matcher %q matches %q: %v", literals[1], s, !want)
		}
	}
	nodeRE := regexp.MustCompile("^(?:" + literals[len(literals)-1] + ")$")
	if !nodeRE.MatchString(evil+":9835") || nodeRE.MatchString("x") {
		t.Errorf("instance matcher %q", literals[len(literals)-1])
	}
	if _, err := gpuSelector(gpuSources[GPUUtil], GPUFilter{GPUs: []string{"\xff"}}); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	// Without a node filter the selector is one plain matcher set.
	sel, _ = gpuSelector(gpuSources[GPUMemory], GPUFilter{})
	if want := `{__name__=~"DCGM_FI_DEV_FB_CAPACITY_BYTES|DCGM_FI_DEV_FB_FREE|DCGM_FI_DEV_FB_FREE_BYTES|DCGM_FI_DEV_FB_RESERVED|DCGM_FI_DEV_FB_RESERVED_BYTES|DCGM_FI_DEV_FB_TOTAL|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_USED_BYTES|` +
		`inferscope_gpu_memory_reserved_bytes|inferscope_gpu_memory_total_bytes|inferscope_gpu_memory_used_bytes|nv_gpu_memory_total_bytes|nv_gpu_memory_used_bytes"}`; sel != want {
		t.Errorf("selector %s, want %s", sel, want)
	}
}

// splitLiterals replaces every PromQL double-quoted string in expr by S and returns the decoded
// strings.
func splitLiterals(t *testing.T, expr string) (string, []string) {
	t.Helper()
	var b strings.Builder
	var lits []string
	for i := 0; i < len(expr); i++ {
		if expr[i] != '"' {
			b.WriteByte(expr[i])
			continue
		}
		j := i + 1
		for ; j < len(expr) && expr[j] != '"'; j++ {
			if expr[j] == '\\' {
				j++
			}
		}
		if j >= len(expr) {
			t.Fatalf("unterminated string in %s", expr)
		}
		lit, err := strconv.Unquote(expr[i : j+1])
		if err != nil {
			t.Fatalf("literal %s: %v", expr[i:j+1], err)
		}
		lits = append(lits, lit)
		b.WriteByte('S')
		i = j
	}
	return b.String(), lits
}

func TestMemoryRatio(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		used, total, free, reserved, want float64
	}{
		{30, 40, nan, nan, 0.75}, // probe: used / total
		{30, nan, 10, nan, 0.75}, // dcgm-exporter default fields: used / (used + free)
		{30, nan, 9, 1, 0.75},    // with reserved memory
		{30, 40, 9, 1, 0.75},     // total wins
		{30, nan, nan, nan, nan}, // nothing to divide by
		{0, nan, 0, nan, nan},    // an empty reading
		{nan, 40, nan, nan, nan}, // no used sample
		{30, 0, 10, nan, 0.75},   // a zero total falls back to the parts
	} {
		got := gpufields.MemoryRatio(c.used, c.total, c.free, c.reserved)
		if math.IsNaN(got) != math.IsNaN(c.want) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("gpufields.MemoryRatio(%v) = %v, want %v", c, got, c.want)
		}
	}
}

// TestMergeGPUNamings: the probe's naming wins where both report a GPU; series of one GPU whose
// labels changed (a pod moved) fill each other's gaps; dcgm units are converted.
func TestMergeGPUNamings(t *testing.T) {
	nan := math.NaN()
	k := GPUKey{Node: "n", GPU: "0"}
	src := func(name string) gpuSource { s, _ := sourceByMetric(gpuSources[GPUUtil], name); return s }
	raws := []gpuRaw{
		{key: k, src: src("inferscope_gpu_utilization_ratio"), v: []float64{0.5, nan, nan}},
		{key: k, src: src("DCGM_FI_DEV_GPU_UTIL"), series: prom.Labels{"pod": "a"}, v: []float64{90, 40, nan}},
		{key: k, src: src("DCGM_FI_DEV_GPU_UTIL"), series: prom.Labels{"pod": "b"}, v: []float64{nan, 10, 70}},
	}
	got := mergeGPU(GPUUtil, raws)
	if len(got.keys) != 1 || fmt.Sprint(got.values[k]) != "[0.5 0.4 0.7000000000000001]" || len(got.namings[k]) != 2 {
		t.Errorf("merged %v %v %v", got.keys, got.values[k], got.namings[k])
	}
	memSrc := func(name string) gpuSource { s, _ := sourceByMetric(gpuSources[GPUMemory], name); return s }
	mem := mergeGPU(GPUMemory, []gpuRaw{
		{key: k, src: memSrc("DCGM_FI_DEV_FB_USED"), v: []float64{30 << 10, nan}},
		{key: k, src: memSrc("DCGM_FI_DEV_FB_FREE"), v: []float64{10 << 10, 1}},
	})
	if v := mem.values[k]; v[0] != 0.75 || !math.IsNaN(v[1]) {
		t.Errorf("dcgm memory ratio %v", v)
	}
}

func TestParseGPUMetrics(t *testing.T) {
	ms, err := ParseGPUMetrics([]string{"power", "util", "power"})
	if err != nil || fmt.Sprint(ms) != "[util power]" {
		t.Errorf("%v %v", ms, err)
	}
	if ms, _ := ParseGPUMetrics(nil); len(ms) != 7 {
		t.Errorf("default %v", ms)
	}
	if _, err := ParseGPUMetrics([]string{"fan"}); err == nil || !strings.Contains(err.Error(), "util, engine_active, tensor_active, dram_active, memory, temperature, power") {
		t.Errorf("unknown metric: %v", err)
	}
	for _, raw := range []string{
		`{"queryType":"gpumem_forecast","threshold":1.5}`, `{"queryType":"gpumem_forecast","window":"10s"}`,
		`{"queryType":"gpu_idle_under_traffic","idleFor":"banana"}`, `{"queryType":"gpu_idle_under_traffic","qpsFraction":-1}`,
		`{"queryType":"gpu","metrics":3}`,
	} {
		if _, err := Parse([]byte(raw)); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
	for _, raw := range []string{
		`{"queryType":"gpumem_forecast","threshold":"0.9","window":"1h"}`, `{"queryType":"gpu_idle_under_traffic","idleFor":"5m","qpsFraction":0.3}`,
		`{"queryType":"gpu","metrics":"memory|util"}`, `{"queryType":"gpu_live","instance":"node-a:8000|node-b"}`,
	} {
		if _, err := Parse([]byte(raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestGridResampling(t *testing.T) {
	src := []int64{0, 10, 20, 30, 40, 50, 60}
	v := []float64{0, 1, 0, 0, math.NaN(), 0, 1}
	out := []int64{20, 40, 60}
	if got := fmt.Sprint(sampleMax(v, src, out, 20)); got != "[1 0 1]" {
		t.Errorf("sampleMax %s", got)
	}
	idx := lastIndex(src, []int64{-5, 0, 15, 60, 99})
	if fmt.Sprint(idx) != "[-1 0 1 6 6]" {
		t.Errorf("lastIndex %v", idx)
	}
	if got := sampleAt(v, idx); !math.IsNaN(got[0]) || got[2] != 1 || got[4] != 1 {
		t.Errorf("sampleAt %v", got)
	}
}
