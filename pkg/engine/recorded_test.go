package engine_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// recordedRuleFile writes the Prometheus rendering's latency recording (nothing else: the
// baselines' subquery recordings would only slow the backfill) as a rule file.
func recordedRuleFile(t testing.TB, dir string) string {
	t.Helper()
	p := alerting.Defaults()
	p.Profile = "custom"
	f, err := alerting.PrometheusRules(p)
	if err != nil {
		t.Fatal(err)
	}
	var keep []alerting.PromRule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record == engine.RecordedLatency {
				keep = append(keep, r)
			}
		}
	}
	if len(keep) != 1 {
		t.Fatalf("the rendering records %s %d times, want once", engine.RecordedLatency, len(keep))
	}
	body, err := yaml.Marshal(alerting.PromRuleFile{Groups: []alerting.PromGroup{{Name: "inferscope", Interval: "1m", Rules: keep}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// queriesSeen keeps the PromQL of every query the engine sends.
type queriesSeen struct {
	mu    sync.Mutex
	exprs []string
}

func (q *queriesSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if v, err := url.ParseQuery(string(body)); err == nil && v.Get("query") != "" {
			q.mu.Lock()
			q.exprs = append(q.exprs, v.Get("query"))
			q.mu.Unlock()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// readRecorded says whether a query read the recorded series of a previous day.
func (q *queriesSeen) readRecorded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.exprs {
		if strings.Contains(e, engine.RecordedLatency) && strings.Contains(e, "offset 1d") {
			return true
		}
	}
	return false
}

func engineOn(t *testing.T, url string, end time.Time) *engine.Engine {
	t.Helper()
	return engineVia(t, url, end, http.DefaultClient)
}

func engineVia(t *testing.T, url string, end time.Time, hc *http.Client) *engine.Engine {
	t.Helper()
	c, err := prom.New(url, hc)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.Config{Prom: c, WarmupWindow: 2 * time.Minute, Now: func() time.Time { return end }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func hasNotice(res *engine.Result, text string) bool {
	for _, n := range res.Notices {
		if strings.Contains(n.Text, text) {
			return true
		}
	}
	return false
}

// The fast path: with the rendering's latency recording loaded and backfilled over the history
// (promtool evaluates the rule against the raw history, as Prometheus would have), the
// per-instance baseline reads the previous days from the recorded series and says so; its
// numbers equal the raw path's. Without the rule, or for a quantile or a grouping the recording
// does not hold, the raw buckets are read and no notice appears.
func TestRecordedLatencyFastPath(t *testing.T) {
	rawDir, s := tbtest.TSDB(t)
	raw := promtest.Start(t, promtest.Options{DataDir: rawDir})
	end := s.End()
	from := end.Add(-2 * time.Hour)

	work := t.TempDir()
	rules := recordedRuleFile(t, work)
	backfill := filepath.Join(work, "backfill")
	promtool := promtest.RequireBinary(t, "promtool")
	cmd := exec.CommandContext(t.Context(), promtool, "tsdb", "create-blocks-from", "rules",
		"--start="+strconv.FormatInt(from.Add(-7*24*time.Hour-time.Hour).Unix(), 10),
		"--end="+strconv.FormatInt(end.Add(-24*time.Hour+time.Hour).Unix(), 10),
		"--url="+raw.URL, "--eval-interval=60s", "--output-dir="+backfill, rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool backfill: %v\n%s", err, out)
	}
	recDir, _ := tbtest.TSDB(t)
	blocks, _ := filepath.Glob(filepath.Join(backfill, "*"))
	if len(blocks) == 0 {
		t.Fatal("the backfill wrote no blocks")
	}
	for _, b := range blocks {
		if err := os.Rename(b, filepath.Join(recDir, filepath.Base(b))); err != nil {
			t.Fatal(err)
		}
	}
	rec := promtest.Start(t, promtest.Options{DataDir: recDir, ConfigYAML: "rule_files: [" + strconv.Quote(rules) + "]\n"})

	const q = `{"queryType":"baseline","model":["recsys-ranker"],"quantile":0.95,"days":7,"window":"10m","by":"instance"}`
	want := runQuery(t, engineOn(t, raw.URL, end), q, from, end)
	seen := &queriesSeen{}
	got := runQuery(t, engineVia(t, rec.URL, end, &http.Client{Transport: seen}), q, from, end)
	if !seen.readRecorded() {
		t.Errorf("with the rules loaded no query read %s of a previous day: %q", engine.RecordedLatency, seen.exprs)
	}
	if hasNotice(want, engine.RecordedLatency) {
		t.Errorf("without the rules loaded the answer names the recording: %v", want.Notices)
	}
	if !hasNotice(got, engine.RecordedLatency) {
		t.Fatalf("with the rules loaded the answer does not say it read the recording: %v", got.Notices)
	}
	// Tolerance: the recording is the same expression evaluated at the same minutes, so the
	// previous days' means and deviations agree to float rounding (1e-9). The recording leaves
	// warm-ups out; none falls in these previous days' windows.
	compared := 0
	for _, w := range want.Series {
		if w.Name != "baseline" && w.Name != "std" && w.Name != "days" {
			continue
		}
		var g *engine.Series
		for i := range got.Series {
			if got.Series[i].Name == w.Name && engine.Labels(got.Series[i].Labels).String() == engine.Labels(w.Labels).String() {
				g = &got.Series[i]
			}
		}
		if g == nil || len(g.V) != len(w.V) {
			t.Fatalf("%s %v: missing or of another length on the recorded path", w.Name, w.Labels)
		}
		for i, v := range w.V {
			if math.IsNaN(v) != math.IsNaN(g.V[i]) || math.Abs(g.V[i]-v) > 1e-9*math.Abs(v) {
				t.Fatalf("%s %v at point %d: recorded %.12g, raw %.12g", w.Name, w.Labels, i, g.V[i], v)
			}
			if !math.IsNaN(v) {
				compared++
			}
		}
	}
	if compared < 3*3*100 {
		t.Errorf("only %d points compared", compared)
	}
	for _, other := range []string{
		`{"queryType":"baseline","model":["recsys-ranker"],"quantile":0.99,"days":7,"window":"10m","by":"instance"}`,
		`{"queryType":"baseline","model":["recsys-ranker"],"quantile":0.95,"days":7,"window":"10m"}`,
	} {
		if res := runQuery(t, engineOn(t, rec.URL, end), other, from, end); hasNotice(res, engine.RecordedLatency) {
			t.Errorf("%s reads the recording, which does not hold it: %v", other, res.Notices)
		}
	}
}
