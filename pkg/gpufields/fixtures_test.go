package gpufields_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/promexport"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// The fixtures: one exposition per dcgm-exporter version the table tells apart, written from
// the facts (testdata/dcgm-<version>.prom), and the probe's naming that plays each.
var fixtures = []struct {
	ver    gpufields.Version
	naming promexport.Naming
}{
	{gpufields.DCGM3, promexport.NamingDCGM3},
	{gpufields.DCGM45, promexport.NamingDCGM45},
	{gpufields.DCGM48, promexport.NamingDCGM},
	{gpufields.DCGM49, promexport.NamingDCGM49},
}

func readFixture(t *testing.T, v gpufields.Version) ([]byte, map[string]*dto.MetricFamily) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "dcgm-"+string(v)+".prom"))
	if err != nil {
		t.Fatal(err)
	}
	return b, parseExposition(t, b)
}

func parseExposition(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	return fams
}

func TestFixturesPassPromtool(t *testing.T) {
	for _, f := range fixtures {
		b, _ := readFixture(t, f.ver)
		findings := promtest.CheckMetrics(t, b)
		for _, line := range findings {
			if !promtest.DCGMCompatible(line) {
				t.Errorf("%s: promtool check metrics: %s", f.ver, line)
			}
		}
		if len(findings) == 0 {
			t.Errorf("%s: promtool found no camelCase label; is this dcgm-exporter's output?", f.ver)
		}
	}
}

// field finds the table's field and name of a metric of version v.
func field(v gpufields.Version, metric string) (gpufields.Field, gpufields.Name, bool) {
	for _, f := range gpufields.All() {
		for _, n := range f.Names {
			if n.Metric == metric && n.In(v) {
				return f, n, true
			}
		}
	}
	return gpufields.Field{}, gpufields.Name{}, false
}

func label(m *dto.Metric, name string) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue(), true
		}
	}
	return "", false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// plausible bounds of a value in a field's base unit, for two A100-40GB.
var plausible = map[string][2]float64{
	"ratio": {0, 1}, "bytes": {1 << 28, 41 << 30}, "hertz": {1e8, 3e9}, "celsius": {20, 100}, "watts": {20, 700},
	"joules": {1e4, 1e8}, "bytes per second": {1e5, 64e9},
}

// Each fixture holds every signal the version's default counters file exports, under the
// name gpufields gives it, and nothing gpufields does not know; values scaled by the table
// land in their unit's range; every series carries the version's labels.
func TestFixturesHoldEverySignalOfTheirVersion(t *testing.T) {
	for _, fx := range fixtures {
		_, fams := readFixture(t, fx.ver)
		for _, sig := range gpufields.DefaultSignals(fx.ver) {
			n, _ := gpufields.DCGMName(sig, fx.ver)
			if fams[n.Metric] == nil {
				t.Errorf("%s: no %s (%s)", fx.ver, n.Metric, sig)
			}
		}
		lbl := gpufields.Labels(fx.ver)
		for name, fam := range fams {
			f, n, ok := field(fx.ver, name)
			if !ok || !n.DefaultIn(fx.ver) {
				t.Errorf("%s: %s is not a default field of the version in gpufields", fx.ver, name)
				continue
			}
			for _, m := range fam.GetMetric() {
				v := value(m) * n.Scale
				if r, ok := plausible[f.Unit]; ok && (v < r[0] || v > r[1]) && !(f.Unit == "ratio" && v == 0) && !(f.Unit == "bytes per second" && v == 0) {
					t.Errorf("%s: %s = %v %s after scaling by %v", fx.ver, name, v, f.Unit, n.Scale)
				}
				for _, want := range []string{lbl.GPU, lbl.UUID, lbl.Device, lbl.ModelName, lbl.Node, lbl.Driver, lbl.PCIBusID} {
					if _, ok := label(m, want); want != "" && !ok {
						t.Errorf("%s: %s lacks the label %s", fx.ver, name, want)
					}
				}
				for _, other := range append(slices.Clone(gpufields.NodeLabels), gpufields.DriverLabels...) {
					if _, ok := label(m, other); ok && other != lbl.Node && other != lbl.Driver {
						t.Errorf("%s: %s has %s, not a label of the version", fx.ver, name, other)
					}
				}
				if f.Signal == gpufields.XID {
					code, _ := label(m, lbl.XIDCode)
					msg, _ := label(m, lbl.XIDMessage)
					if c, err := strconv.ParseUint(code, 10, 64); err != nil || float64(c) != value(m) || msg != gpufields.XIDMessage(c) {
						t.Errorf("%s: XID sample %v with err_code %q err_msg %q", fx.ver, value(m), code, msg)
					}
				}
			}
		}
		checkMemoryRatio(t, fx.ver, fams)
	}
}

// The one memory definition reads the same card at the same ratio from every version's names.
func checkMemoryRatio(t *testing.T, v gpufields.Version, fams map[string]*dto.MetricFamily) {
	t.Helper()
	read := func(sig gpufields.Signal, gpu string) float64 {
		n, ok := gpufields.DCGMName(sig, v)
		if !ok || !n.DefaultIn(v) || fams[n.Metric] == nil {
			return math.NaN()
		}
		for _, m := range fams[n.Metric].GetMetric() {
			if g, _ := label(m, "gpu"); g == gpu {
				return value(m) * n.Scale
			}
		}
		return math.NaN()
	}
	for gpu, want := range map[string]float64{"0": 36864.0 / 40960, "1": 20480.0 / 40960} {
		got := gpufields.MemoryRatio(read(gpufields.MemUsed, gpu), read(gpufields.MemTotal, gpu), read(gpufields.MemFree, gpu), read(gpufields.MemReserved, gpu))
		if v == gpufields.DCGM3 { // no FB_RESERVED in 3.x's defaults: used / (used + free)
			want = map[string]float64{"0": 36864.0 / (36864 + 3590), "1": 20480.0 / (20480 + 19974)}[gpu]
		}
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s GPU %s: memory ratio %v, want %v", v, gpu, got, want)
		}
	}
}

// probeDoesNotMeasure are the default fields of dcgm-exporter the probe has no reading for
// (NVML's encoder/decoder, energy, memory temperature, NVLink and vGPU calls are not made;
// the profiling fields need DCGM's profiling module).
var probeDoesNotMeasure = []gpufields.Signal{
	gpufields.EngineActive, gpufields.TensorActive, gpufields.DRAMActive, gpufields.EncoderUtil, gpufields.DecoderUtil,
	gpufields.Energy, gpufields.MemoryTemperature, gpufields.NVLinkBandwidth, gpufields.VGPULicense,
}

// The probe in the version's naming renders the fixture's node the way the exporter does:
// every fixture family it can measure, with the same label names per GPU (a label the probe
// leaves empty is dropped by a scrape, as the exporter leaves it out); beyond them only fields
// a counters file may enable (gpufields: the version's name, off by default).
func TestProbeRendersLikeTheExporter(t *testing.T) {
	for _, fx := range fixtures {
		_, want := readFixture(t, fx.ver)
		got := probeFamilies(t, fx.naming)
		for name, fam := range want {
			f, _, _ := field(fx.ver, name)
			pf := got[name]
			if pf == nil {
				if !slices.Contains(probeDoesNotMeasure, f.Signal) {
					t.Errorf("%s: the probe (%s) does not render %s", fx.ver, fx.naming, name)
				}
				continue
			}
			if slices.Contains(probeDoesNotMeasure, f.Signal) {
				t.Errorf("%s: the probe renders %s, listed as not measured", fx.ver, name)
			}
			for _, gpu := range []string{"0", "1"} {
				w, g := labelNames(fam, gpu), labelNames(pf, gpu)
				if !slices.Equal(w, g) {
					t.Errorf("%s %s GPU %s: probe labels %v, exporter %v", fx.ver, name, gpu, g, w)
				}
			}
		}
		for name := range got {
			if want[name] != nil || !strings.HasPrefix(name, "DCGM_") {
				continue
			}
			if _, n, ok := field(fx.ver, name); !ok || n.DefaultIn(fx.ver) {
				t.Errorf("%s: the probe renders %s, which is neither in the fixture nor a field the version's counters file may enable", fx.ver, name)
			}
		}
	}
}

func labelNames(fam *dto.MetricFamily, gpu string) []string {
	for _, m := range fam.GetMetric() {
		if g, _ := label(m, "gpu"); g != gpu {
			continue
		}
		var out []string
		for _, l := range m.GetLabel() {
			if l.GetValue() != "" {
				out = append(out, l.GetName())
			}
		}
		sort.Strings(out)
		return out
	}
	return nil
}

type fixedSource struct{ s *snapshot.Snapshot }

func (f fixedSource) Snapshot() *snapshot.Snapshot { return f.s }
func (f fixedSource) Stats() collector.Stats       { return collector.Stats{} }

func p[T any](v T) *T { return &v }

// probeFamilies renders the fixtures' node (GPU 0 serving a pod, GPU 1 idle after XID 43)
// through the probe's exporter in a naming, as a scrape reads it.
func probeFamilies(t *testing.T, naming promexport.Naming) map[string]*dto.MetricFamily {
	t.Helper()
	gpu := func(i int, uuid, bus string) snapshot.GPU {
		return snapshot.GPU{
			Index: i, UUID: uuid, Name: "NVIDIA A100-SXM4-40GB", Minor: p(i), PCIBusID: bus, State: snapshot.StateUp,
			UtilRatio: p(0.87), MemBandwidthRatio: p(0.41),
			MemUsedBytes: p(uint64(36864 << 20)), MemTotalBytes: p(uint64(40960 << 20)), MemReservedBytes: p(uint64(506 << 20)),
			TemperatureCelsius: p(61.0), PowerWatts: p(312.417), PowerLimitWatts: p(400.0),
			SMClockMHz: p(uint32(1410)), MemClockMHz: p(uint32(1215)), ThrottleReasonsMask: p(uint64(0)),
			PCIeRxBytesPerSecond: p(40894464.0), PCIeTxBytesPerSecond: p(118235136.0), PCIeReplays: p(uint64(0)),
			ECCCorrected: p(uint64(0)), ECCUncorrected: p(uint64(0)),
			RemappedRowsCorrectable: p(uint64(0)), RemappedRowsUncorrectable: p(uint64(0)), RowRemapPending: p(false), RowRemapFailure: p(false),
		}
	}
	g0 := gpu(0, "GPU-5d1e6a34-8c2b-4f0e-9a7d-3b6c1e2f4a50", "00000000:07:00.0")
	g0.Processes = []snapshot.Process{{PID: 4100, Name: "tritonserver", UsedMemoryBytes: 36 << 30, Container: "model-server", Pod: "inference-0", Namespace: "inference"}}
	g1 := gpu(1, "GPU-9a0f2c71-4b3d-4e8a-b6c5-0d7e1f2a3b64", "00000000:17:00.0")
	g1.XIDErrors, g1.LastXID = map[string]uint64{"43": 1}, p(uint64(43))
	s := &snapshot.Snapshot{Hostname: "gpu-node-7", DriverVersion: "550.54.15", CUDAVersion: "12.4", CollectedAt: time.Now(),
		NVML: snapshot.NVMLStatus{OK: true}, GPUs: []snapshot.GPU{g0, g1}}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(promexport.New(fixedSource{s}, promexport.Options{Naming: naming})); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	if out[fmt.Sprint("inferscope_gpu_up")] == nil {
		t.Fatalf("%s: the probe rendered no GPU", naming)
	}
	return out
}

// A real Prometheus scrapes each fixture as it would scrape that exporter: every default
// signal of the version is stored under its name for both GPUs, with the version's node
// label; the XID field's err_code="43" series holds 43 on the GPU that had it; and the one
// memory definition, written in PromQL over the version's names, gives GPU 0's ratio.
func TestFixturesScrapedByPrometheus(t *testing.T) {
	promtest.RequireBinary(t, "prometheus")
	bodies := map[string][]byte{}
	for _, fx := range fixtures {
		b, _ := readFixture(t, fx.ver)
		bodies["/metrics/"+string(fx.ver)] = b
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\nscrape_configs:\n")
	for _, fx := range fixtures {
		fmt.Fprintf(&cfg, "  - job_name: dcgm-%s\n    metrics_path: /metrics/%s\n    static_configs:\n      - targets: [%q]\n", fx.ver, fx.ver, host)
	}
	prom := promtest.Start(t, promtest.Options{ConfigYAML: cfg.String()})
	deadline := time.Now().Add(30 * time.Second)
	for query(t, prom.URL, `count(DCGM_FI_DEV_GPU_UTIL) + count(DCGM_FI_DEV_GPU_UTIL_RATIO)`) != 8 {
		if time.Now().After(deadline) {
			t.Fatal("Prometheus did not scrape the fixtures within 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, fx := range fixtures {
		job := `job="dcgm-` + string(fx.ver) + `"`
		lbl := gpufields.Labels(fx.ver)
		for _, sig := range gpufields.DefaultSignals(fx.ver) {
			n, _ := gpufields.DCGMName(sig, fx.ver)
			if v := query(t, prom.URL, `count(`+n.Metric+`{`+job+`,`+lbl.Node+`="gpu-node-7"})`); v != 2 {
				t.Errorf("%s: %v series of %s with %s, want 2", fx.ver, v, n.Metric, lbl.Node)
			}
		}
		xid, _ := gpufields.DCGMName(gpufields.XID, fx.ver)
		if v := query(t, prom.URL, xid.Metric+`{`+job+`,gpu="1",err_code="43",err_msg="GPU stopped processing"}`); v != 43 {
			t.Errorf("%s: XID field of GPU 1: %v, want 43", fx.ver, v)
		}
		name := func(s gpufields.Signal) string {
			n, _ := gpufields.DCGMName(s, fx.ver)
			return n.Metric + `{` + job + `,gpu="0"}`
		}
		scale := func(s gpufields.Signal) string {
			n, _ := gpufields.DCGMName(s, fx.ver)
			return strconv.FormatFloat(n.Scale, 'g', -1, 64)
		}
		denominator := name(gpufields.MemUsed) + " * " + scale(gpufields.MemUsed) + " + " + name(gpufields.MemFree) + " * " + scale(gpufields.MemFree)
		want := 36864.0 / (36864 + 3590)
		if n, ok := gpufields.DCGMName(gpufields.MemReserved, fx.ver); ok && n.DefaultIn(fx.ver) {
			denominator += " + " + name(gpufields.MemReserved) + " * " + scale(gpufields.MemReserved)
			want = 36864.0 / 40960
		}
		if v := query(t, prom.URL, name(gpufields.MemUsed)+" * "+scale(gpufields.MemUsed)+" / ("+denominator+")"); math.Abs(v-want) > 1e-12 {
			t.Errorf("%s: GPU 0 memory ratio %v, want %v", fx.ver, v, want)
		}
	}
}

// query runs an instant query expected to return one sample (NaN when none).
func query(t *testing.T, base, expr string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {expr}}.Encode())
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query %s: %v %s", expr, err, body.Error)
	}
	switch len(body.Data.Result) {
	case 0:
		return math.NaN()
	case 1:
		v, _ := strconv.ParseFloat(body.Data.Result[0].Value[1].(string), 64)
		return v
	}
	t.Fatalf("query %s: %d samples", expr, len(body.Data.Result))
	return math.NaN()
}
