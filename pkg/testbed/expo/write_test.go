package expo

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestFormatBoundLikePrometheusClient(t *testing.T) {
	cases := map[float64]string{0.005: "0.005", 1: "1.0", 2.5: "2.5", 5: "5.0", 2048: "2048.0", math.Inf(1): "+Inf", 1e-5: "1e-05"}
	for in, want := range cases {
		if got := FormatBound(in); got != want {
			t.Errorf("FormatBound(%v) = %q, want %q", in, got, want)
		}
	}
}

func fixedFamilies() []Family {
	at := func(p Point) func(time.Time) Point { return func(time.Time) Point { return p } }
	return []Family{
		{Name: "x_requests_total", Help: "Requests.\nSecond line", Type: CounterType, Series: []Series{
			{Labels: []Label{{"model_name", `a"b\c`}}, At: at(Point{Value: 1234567.5})},
		}},
		{Name: "x_seconds", Help: "Latency.", Type: HistogramType, Bounds: []float64{0.1, 1}, Series: []Series{
			{Labels: []Label{{"model_name", "m"}}, At: at(Point{Buckets: []float64{1, 2.5}, Count: 3, Sum: 0.25})},
			{Labels: []Label{{"model_name", "late"}}, Since: time.Unix(1000, 0), At: at(Point{Buckets: []float64{0, 0}})},
		}},
		{Name: "x_conf", Help: "Confidence.", Type: SummaryType, Series: []Series{{At: at(Point{Count: 2, Sum: 1.5})}}},
		{Name: "x_up", Help: "Up.", Type: GaugeType, Series: []Series{{At: at(Point{Value: 0})}}},
	}
}

func TestWriteTextFormat(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, fixedFamilies(), time.Unix(500, 0), []Label{{"instance", "i:1"}}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP x_requests_total Requests.\nSecond line
# TYPE x_requests_total counter
x_requests_total{model_name="a\"b\\c",instance="i:1"} 1234567.5
# HELP x_seconds Latency.
# TYPE x_seconds histogram
x_seconds_bucket{model_name="m",instance="i:1",le="0.1"} 1
x_seconds_bucket{model_name="m",instance="i:1",le="1.0"} 2.5
x_seconds_bucket{model_name="m",instance="i:1",le="+Inf"} 3
x_seconds_count{model_name="m",instance="i:1"} 3
x_seconds_sum{model_name="m",instance="i:1"} 0.25
# HELP x_conf Confidence.
# TYPE x_conf summary
x_conf_count{instance="i:1"} 2
x_conf_sum{instance="i:1"} 1.5
# HELP x_up Up.
# TYPE x_up gauge
x_up{instance="i:1"} 0
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteHistoryOpenMetrics(t *testing.T) {
	var b bytes.Buffer
	targets := []Target{{Instance: "i:1", Families: fixedFamilies()}, {Instance: "i:2", Families: fixedFamilies()}}
	var calls int
	err := WriteHistory(context.Background(), &b, targets, HistoryOptions{
		From: time.Unix(901, 0), To: time.Unix(1080, 0), Step: time.Minute, Job: "j",
		Progress: func(done, total int) { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasSuffix(out, "# EOF\n") || strings.Count(out, "# EOF") != 1 {
		t.Error("history must end with exactly one # EOF")
	}
	// Counter families drop _total in OpenMetrics metadata; samples keep it.
	if !strings.HasPrefix(out, "# TYPE x_requests counter\n# HELP x_requests Requests.\\nSecond line\n") {
		t.Errorf("bad counter metadata:\n%s", out[:80])
	}
	// Families are not interleaved: each TYPE line once, in order.
	order := []string{"# TYPE x_requests counter", "# TYPE x_seconds histogram", "# TYPE x_conf summary", "# TYPE x_up gauge"}
	last := -1
	for _, o := range order {
		i := strings.Index(out, o)
		if i < last || strings.Count(out, o) != 1 {
			t.Errorf("%q missing, repeated or out of order", o)
		}
		last = i
	}
	// Steps at 960, 1020, 1080 (From rounded up to the minute); "late" exists from 1000 on.
	if n := strings.Count(out, `x_up{instance="i:1",job="j"} 0 `); n != 3 {
		t.Errorf("%d gauge points for i:1, want 3", n)
	}
	if strings.Contains(out, `model_name="late",instance="i:1",job="j",le="0.1"} 0 960`) ||
		!strings.Contains(out, `model_name="late",instance="i:2",job="j",le="0.1"} 0 1020`) {
		t.Error("series written before it exists, or missing after")
	}
	if !strings.Contains(out, "x_seconds_bucket{model_name=\"m\",instance=\"i:2\",job=\"j\",le=\"+Inf\"} 3 1080\n") {
		t.Error("missing histogram +Inf bucket with timestamp")
	}
	if calls != 10 {
		t.Errorf("progress called %d times, want once per series (10)", calls)
	}
}

func TestWriteHistoryRejectsBadOptions(t *testing.T) {
	targets := []Target{{Instance: "i", Families: fixedFamilies()}}
	t0 := time.Unix(1000, 0)
	bad := []HistoryOptions{
		{From: t0, To: t0.Add(time.Hour), Step: 0, Job: "j"},
		{From: t0, To: t0, Step: time.Minute, Job: "j"},
		{From: t0, To: t0.Add(time.Hour), Step: time.Minute},
	}
	for _, o := range bad {
		if err := WriteHistory(context.Background(), &bytes.Buffer{}, targets, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := WriteHistory(context.Background(), &bytes.Buffer{}, nil, HistoryOptions{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Job: "j"}); err == nil {
		t.Error("no targets accepted")
	}
	retyped := fixedFamilies()
	retyped[3].Type = CounterType
	mismatched := []Target{{Instance: "a", Families: fixedFamilies()}, {Instance: "b", Families: retyped}}
	if err := WriteHistory(context.Background(), &bytes.Buffer{}, mismatched, HistoryOptions{From: t0, To: t0.Add(time.Hour), Step: time.Minute, Job: "j"}); err == nil || !strings.Contains(err.Error(), "x_up") {
		t.Errorf("a family typed differently on two targets: %v", err)
	}
}

// Targets of different kinds (inference servers, GPU probes) share one history: each family is
// written once with the series of every target that has it, each target with its own job and
// target labels; absent points are skipped.
func TestWriteHistoryMixedTargets(t *testing.T) {
	at := func(p Point) func(time.Time) Point { return func(time.Time) Point { return p } }
	gaps := func(t time.Time) Point { return Point{Value: 7, Absent: t.Unix()%120 != 0} }
	targets := []Target{
		{Instance: "i:1", Families: fixedFamilies()[3:]},
		{Instance: "n:9", Job: "probe", Labels: []Label{{"node", "n"}}, Families: []Family{
			{Name: "gpu_util", Help: "", Type: GaugeType, Series: []Series{{Labels: []Label{{"gpu", "0"}}, At: gaps}}},
			{Name: "x_up", Help: "Up.", Type: GaugeType, Series: []Series{{At: at(Point{Value: 1})}}},
		}},
	}
	var b bytes.Buffer
	if err := WriteHistory(context.Background(), &b, targets, HistoryOptions{From: time.Unix(960, 0), To: time.Unix(1200, 0), Step: time.Minute, Job: "inference"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := `# TYPE x_up gauge
# HELP x_up Up.
x_up{instance="i:1",job="inference"} 0 960
x_up{instance="i:1",job="inference"} 0 1020
x_up{instance="i:1",job="inference"} 0 1080
x_up{instance="i:1",job="inference"} 0 1140
x_up{instance="i:1",job="inference"} 0 1200
x_up{instance="n:9",job="probe",node="n"} 1 960
x_up{instance="n:9",job="probe",node="n"} 1 1020
x_up{instance="n:9",job="probe",node="n"} 1 1080
x_up{instance="n:9",job="probe",node="n"} 1 1140
x_up{instance="n:9",job="probe",node="n"} 1 1200
# TYPE gpu_util gauge
gpu_util{gpu="0",instance="n:9",job="probe",node="n"} 7 960
gpu_util{gpu="0",instance="n:9",job="probe",node="n"} 7 1080
gpu_util{gpu="0",instance="n:9",job="probe",node="n"} 7 1200
# EOF
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	// Live, the same targets merge per family too.
	var live bytes.Buffer
	if err := writeAll(&live, targets, time.Unix(1020, 0)); err != nil {
		t.Fatal(err)
	}
	if got := live.String(); strings.Count(got, "# TYPE x_up gauge") != 1 || !strings.Contains(got, `x_up{instance="n:9",node="n"} 1`) || strings.Contains(got, "gpu_util{") {
		t.Errorf("live merge:\n%s", got)
	}
}

func TestRustBoundFormat(t *testing.T) {
	cases := map[float64]string{1: "1", 0.5: "0.5", 0.00015000000000000001: "0.00015000000000000001", 40.96: "40.96", math.Inf(1): "+Inf"}
	for in, want := range cases {
		if got := formatRust(in); got != want {
			t.Errorf("formatRust(%v) = %q, want %q", in, got, want)
		}
	}
	first := 0.0001 // TGI multiplies at run time: the float product, not the exact constant 0.00015
	if b := TGIDurationBuckets; len(b) != 35 || b[0] != first*1.5 || b[34] < 145 || b[34] > 146 {
		t.Errorf("TGI duration buckets: %d from %v to %v", len(b), b[0], b[len(b)-1])
	}
}

func TestLookupProfile(t *testing.T) {
	if got := ProfileNames(); strings.Join(got, ",") != "custom,sglang,tgi,torchserve,triton,vllm" {
		t.Errorf("namings: %v", got)
	}
	for _, name := range ProfileNames() {
		if _, err := Lookup(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if p, err := Lookup("custom"); err != nil || p.Name() != "custom" {
		t.Errorf("custom: %v %v", p, err)
	}
	if _, err := Lookup("lmdeploy"); err == nil || !strings.Contains(err.Error(), "custom") {
		t.Errorf("unknown profile error should list known ones: %v", err)
	}
}
