package testbed_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

var dcgmNamings = []struct {
	naming string
	ver    gpufields.Version
}{
	{testbed.GPUNamingDCGM3, gpufields.DCGM3},
	{testbed.GPUNamingDCGM45, gpufields.DCGM45},
	{testbed.GPUNamingDCGM, gpufields.DCGM48},
	{testbed.GPUNamingDCGM49, gpufields.DCGM49},
}

func TestParseGPUNamings(t *testing.T) {
	for _, ok := range []string{"", "inferscope", "none", "dcgm", "dcgm-3", "dcgm-4.5", "dcgm-4.9", "dcgm+xid-count",
		"dcgm-4.9+defaults+xid-count", "dcgm-3+defaults"} {
		if _, err := testbed.ParseGPUNaming(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"nvsmi", "dcgm-4.8", "inferscope+xid-count", "none+defaults", "dcgm+nothing", "dcgm-5"} {
		if _, err := testbed.ParseGPUNaming(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Each dcgm naming's history holds the version's names from gpufields; +defaults drops the
// fields its default counters file leaves off, +xid-count adds the window count.
func TestDCGMHistoryFamilies(t *testing.T) {
	for _, c := range dcgmNamings {
		fams := testbed.GPUHistoryFamilies(c.naming)
		for _, sig := range []gpufields.Signal{gpufields.Util, gpufields.MemUsed, gpufields.XID, gpufields.ClockEvents} {
			n, _ := gpufields.DCGMName(sig, c.ver)
			if !slices.Contains(fams, n.Metric) {
				t.Errorf("%s: no %s (%s) in %v", c.naming, n.Metric, sig, fams)
			}
		}
		defaults := testbed.GPUHistoryFamilies(c.naming + testbed.GPUVariantDefaults)
		for _, f := range defaults {
			if n, _ := gpufields.Of(gpufields.ClockEvents).DCGMName(c.ver); f == n.Metric || strings.Contains(f, "ECC") {
				t.Errorf("%s+defaults holds %s, off in the default counters file", c.naming, f)
			}
		}
		if slices.Contains(fams, "DCGM_EXP_XID_ERRORS_COUNT") || !slices.Contains(testbed.GPUHistoryFamilies(c.naming+testbed.GPUVariantXIDCount), "DCGM_EXP_XID_ERRORS_COUNT") {
			t.Errorf("%s: the window count only with +xid-count", c.naming)
		}
	}
	if got := testbed.GPUHistoryFamilies(testbed.GPUNamingDCGM49); !slices.Contains(got, "DCGM_FI_DEV_FB_CAPACITY_BYTES") || slices.Contains(got, "DCGM_FI_DEV_FB_USED") {
		t.Errorf("dcgm-4.9: %v", got)
	}
}

// xidHistory writes the scenario's GPU history around its XIDs in a naming, one sample a
// minute, as OpenMetrics.
func xidHistory(t *testing.T, s *testbed.Scenario, naming string, from, to time.Time) []byte {
	t.Helper()
	targets, err := s.GPUTargets(naming, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := expo.WriteHistory(context.Background(), &b, targets, expo.HistoryOptions{From: from, To: to, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type scenarioXID struct {
	instance string
	gpu      int
	code     uint64
	at       time.Time
}

func scenarioXIDs(t *testing.T, s *testbed.Scenario) []scenarioXID {
	t.Helper()
	var out []scenarioXID
	for _, inst := range s.Instances() {
		for g := 0; g < s.GPUsPerInstance(); g++ {
			for _, x := range s.GPU(inst, g, s.End()).XIDs {
				out = append(out, scenarioXID{inst, g, x.Code, x.Time})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the scenario has no XID")
	}
	return out
}

// Every XID of the scenario is in each dcgm naming's history in dcgm-exporter's form: the
// XID field's err_code="<code>" series starts at the event with the code as its value (the
// err_code="0" series before it ends), and with +xid-count the window count has the code.
func TestScenarioXIDsInEveryDCGMNaming(t *testing.T) {
	s := testbed.Default(end)
	for _, x := range scenarioXIDs(t, s) {
		code := strconv.FormatUint(x.code, 10)
		for _, c := range dcgmNamings {
			field, _ := gpufields.DCGMName(gpufields.XID, c.ver)
			lbl := gpufields.Labels(c.ver)
			hist := string(xidHistory(t, s, c.naming+testbed.GPUVariantXIDCount, x.at.Add(-10*time.Minute), x.at.Add(10*time.Minute)))
			gpuSel := fmt.Sprintf(`%s="%d"`, lbl.GPU, x.gpu)
			node := fmt.Sprintf(`%s="%s"`, lbl.Node, testbed.Node(x.instance))
			var after, before, window int
			for _, line := range strings.Split(hist, "\n") {
				if !strings.Contains(line, gpuSel) || !strings.Contains(line, node) || !strings.Contains(line, `instance="`+testbed.ProbeInstance(x.instance)+`"`) {
					continue
				}
				ts := sampleTime(t, line)
				switch {
				case strings.HasPrefix(line, field.Metric+"{") && strings.Contains(line, lbl.XIDCode+`="`+code+`"`):
					if ts.Before(x.at) || !strings.Contains(line, `} `+code+` `) || !strings.Contains(line, lbl.XIDMessage+`="`+gpufields.XIDMessage(x.code)+`"`) {
						t.Errorf("%s: %s", c.naming, line)
					}
					after++
				case strings.HasPrefix(line, field.Metric+"{") && strings.Contains(line, lbl.XIDCode+`="0"`):
					if !ts.Before(x.at) {
						t.Errorf("%s: err_code 0 after the XID: %s", c.naming, line)
					}
					before++
				case strings.HasPrefix(line, "DCGM_EXP_XID_ERRORS_COUNT{") && strings.Contains(line, `xid="`+code+`"`):
					if ts.Before(x.at) || ts.Sub(x.at) >= 5*time.Minute || !strings.Contains(line, `window_size_in_ms="300000"`) {
						t.Errorf("%s: %s", c.naming, line)
					}
					window++
				}
			}
			if after != 11 || before != 10 || window != 5 {
				t.Errorf("%s XID %s on %s GPU %d: %d samples with err_code %s (want 11), %d with 0 (want 10), %d window counts (want 5)",
					c.naming, code, x.instance, x.gpu, after, code, before, window)
			}
		}
	}
}

func sampleTime(t *testing.T, line string) time.Time {
	t.Helper()
	f := strings.Fields(line)
	sec, err := strconv.ParseFloat(f[len(f)-1], 64)
	if err != nil {
		t.Fatalf("no timestamp in %q", line)
	}
	return time.Unix(int64(sec), 0)
}

// On a real Prometheus, for each dcgm naming: the scenario's XID is stored as dcgm-exporter
// stores it — a new err_code series with the code as value, on the GPU's series only — and
// the window count (with +xid-count) has the code for the 5 minutes after it.
func TestScenarioXIDsOnPrometheus(t *testing.T) {
	promtest.RequireBinary(t, "prometheus")
	s := testbed.Default(end)
	xids := scenarioXIDs(t, s)
	x := xids[0]
	from, to := x.at.Add(-2*time.Hour), x.at.Add(time.Hour)
	for _, c := range dcgmNamings {
		t.Run(c.naming, func(t *testing.T) {
			dir := t.TempDir()
			om := filepath.Join(dir, "history.om")
			if err := os.WriteFile(om, xidHistory(t, s, c.naming+testbed.GPUVariantXIDCount, from, to), 0o644); err != nil {
				t.Fatal(err)
			}
			promtest.RequireBinary(t, "promtool")
			if err := promtest.CreateBlocks(t.Context(), om, filepath.Join(dir, "tsdb")); err != nil {
				t.Fatal(err)
			}
			srv := promtest.Start(t, promtest.Options{DataDir: filepath.Join(dir, "tsdb")})
			field, _ := gpufields.DCGMName(gpufields.XID, c.ver)
			lbl := gpufields.Labels(c.ver)
			for _, x := range xids {
				code := strconv.FormatUint(x.code, 10)
				sel := fmt.Sprintf(`job=%q,instance=%q,%s=%q,%s="%d"`, testbed.ProbeJob, testbed.ProbeInstance(x.instance),
					lbl.Node, testbed.Node(x.instance), lbl.GPU, x.gpu)
				// The labelled series: absent before, the code after, on that GPU alone.
				if res := promQuery(t, srv.URL, field.Metric+`{err_code="`+code+`"}`, x.at.Add(-time.Minute)); len(res) != 0 {
					t.Errorf("err_code %s before the XID: %v", code, res)
				}
				if v := scalar(t, srv.URL, field.Metric+`{`+sel+`,`+lbl.XIDCode+`="`+code+`",`+lbl.XIDMessage+`="`+gpufields.XIDMessage(x.code)+`"}`, x.at.Add(10*time.Minute)); v != float64(x.code) {
					t.Errorf("XID field after the XID: %v, want %d", v, x.code)
				}
				if v := scalar(t, srv.URL, `count(`+field.Metric+`{err_code="`+code+`"})`, x.at.Add(30*time.Minute)); v != 1 {
					t.Errorf("%v GPUs with err_code %s, want 1", v, code)
				}
				if v := scalar(t, srv.URL, field.Metric+`{`+sel+`,err_code="0"}`, x.at.Add(-time.Minute)); v != 0 {
					t.Errorf("XID field before the XID: %v, want 0 (err_code 0)", v)
				}
				// Every other GPU keeps err_code 0.
				if v := scalar(t, srv.URL, `count(`+field.Metric+`{err_code="0"})`, x.at.Add(30*time.Minute)); v != float64(3*s.GPUsPerInstance()-1) {
					t.Errorf("%v GPUs with err_code 0, want all but one", v)
				}
				// The window count: the code for 5 minutes, then one unlabelled 0 again.
				if v := scalar(t, srv.URL, `DCGM_EXP_XID_ERRORS_COUNT{`+sel+`,xid="`+code+`",window_size_in_ms="300000"}`, x.at.Add(2*time.Minute)); v != 1 {
					t.Errorf("window count 2 minutes after: %v, want 1", v)
				}
				if res := promQuery(t, srv.URL, `DCGM_EXP_XID_ERRORS_COUNT{xid="`+code+`"}`, x.at.Add(20*time.Minute)); len(res) != 0 {
					t.Errorf("window count 20 minutes after: %v", res)
				}
				if v := scalar(t, srv.URL, `DCGM_EXP_XID_ERRORS_COUNT{`+sel+`,xid=""}`, x.at.Add(20*time.Minute)); v != 0 {
					t.Errorf("window count without XIDs: %v, want 0", v)
				}
			}
			// The version's names and labels alone.
			if res := promQuery(t, srv.URL, `{__name__=~"inferscope_.*"}`, x.at); len(res) != 0 {
				t.Errorf("inferscope series in a dcgm history: %d", len(res))
			}
			for _, other := range []string{"Hostname", "hostname"} {
				if other != lbl.Node {
					if res := promQuery(t, srv.URL, field.Metric+`{`+other+`!=""}`, x.at); len(res) != 0 {
						t.Errorf("%s label in %s: %d series", other, c.naming, len(res))
					}
				}
			}
			// One XID series per GPU once the old err_code series is past the lookback (a TSDB
			// imported from OpenMetrics has no staleness markers: the err_code="0" series of the
			// GPU is still seen for 5 minutes after its last sample).
			if v := scalar(t, srv.URL, `count(`+field.Metric+`{`+lbl.Driver+`="550.54.15"})`, x.at.Add(30*time.Minute)); v != float64(3*s.GPUsPerInstance()) {
				t.Errorf("driver label %s on %v series", lbl.Driver, v)
			}
		})
	}
}
