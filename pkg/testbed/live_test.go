package testbed_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// sampleKey is a sample's name and sorted labels, e.g. `x_bucket{instance="a",le="1.0"}`.
func sampleKey(name string, labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(name + "{")
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := labels[n]
		if f, err := strconv.ParseFloat(v, 64); n == "le" && err == nil {
			v = strconv.FormatFloat(f, 'g', -1, 64) // "1.0" (Python), "1" (Rust) and 1 agree
		}
		fmt.Fprintf(&b, "%s=%q", n, v)
	}
	b.WriteString("}")
	return b.String()
}

// flatten turns parsed families into samples keyed by sampleKey, adding extra labels.
func flatten(t *testing.T, fams map[string]*dto.MetricFamily, extra map[string]string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range extra {
				labels[k] = v
			}
			with := func(k, v string) map[string]string {
				c := map[string]string{k: v}
				for a, b := range labels {
					c[a] = b
				}
				return c
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[sampleKey(name, labels)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[sampleKey(name, labels)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					out[sampleKey(name+"_bucket", with("le", expo.FormatBound(b.GetUpperBound())))] = float64(b.GetCumulativeCountFloat())
				}
				out[sampleKey(name+"_bucket", with("le", "+Inf"))] = h.GetSampleCountFloat()
				out[sampleKey(name+"_count", labels)] = h.GetSampleCountFloat()
				out[sampleKey(name+"_sum", labels)] = h.GetSampleSum()
			case dto.MetricType_SUMMARY:
				// expfmt keeps summary counts as integers (Prometheus keeps the float); the
				// comparison below truncates the history's value to match.
				out[sampleKey(name+"_count", labels)] = float64(m.GetSummary().GetSampleCount())
				out[sampleKey(name+"_sum", labels)] = m.GetSummary().GetSampleSum()
			default:
				t.Fatalf("%s: unexpected type %v", name, f.GetType())
			}
		}
	}
	return out
}

// parseHistory reads OpenMetrics history lines and keeps the samples at ts.
func parseHistory(t *testing.T, r io.Reader, ts int64) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	sawEOF := false
	for sc.Scan() {
		line := sc.Text()
		if line == "# EOF" {
			sawEOF = true
			continue
		}
		if sawEOF {
			t.Fatalf("content after # EOF: %q", line)
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		brace := strings.IndexByte(line, '{')
		closing := strings.LastIndexByte(line, '}')
		fields := strings.Fields(line[closing+1:])
		if brace < 0 || closing < brace || len(fields) != 2 {
			t.Fatalf("malformed history line %q", line)
		}
		at, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			t.Fatalf("timestamp in %q: %v", line, err)
		}
		if at != ts {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			t.Fatalf("value in %q: %v", line, err)
		}
		labels := map[string]string{}
		for _, pair := range strings.Split(line[brace+1:closing], ",") {
			k, val, ok := strings.Cut(pair, "=")
			if !ok {
				t.Fatalf("label %q in %q", pair, line)
			}
			labels[k], err = strconv.Unquote(val)
			if err != nil {
				t.Fatalf("label value %q in %q: %v", val, line, err)
			}
		}
		out[sampleKey(line[:brace], labels)] = v
	}
	if !sawEOF {
		t.Fatal("history does not end with # EOF")
	}
	return out
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", u, resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != expo.TextContentType {
		t.Fatalf("GET %s: content type %q", u, ct)
	}
	return body
}

func parseText(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("live exposition does not parse: %v", err)
	}
	return fams
}

// A Prometheus scraping the live endpoint sees exactly the values the history holds at the same
// instant, in every naming, so scraped data continues the imported history seamlessly.
func TestLiveMatchesHistory(t *testing.T) {
	s := testbed.Default(end)
	for _, name := range expo.ProfileNames() {
		t.Run(name, func(t *testing.T) { liveMatchesHistory(t, s, name) })
	}
}

func liveMatchesHistory(t *testing.T, s *testbed.Scenario, name string) {
	p, err := expo.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{end.Add(-time.Hour), mustIncident(t, s, testbed.WarmupRestart).Start.Add(2 * time.Minute)} {
		srv := httptest.NewServer(expo.Handler(s.Source(), p, func() time.Time { return at }))
		live := map[string]float64{}
		for _, inst := range s.Instances() {
			body := get(t, srv.URL+"/metrics?"+url.Values{"instance": {inst}}.Encode())
			if !bytes.Contains(body, []byte(`le="+Inf"`)) && name != "triton" && name != "torchserve" {
				t.Errorf("%s: no histogram", inst)
			}
			if name == "custom" && !bytes.Contains(body, []byte(`le="1.0"`)) {
				t.Errorf("%s: bucket bounds not written like prometheus_client (le=\"1.0\")", inst)
			}
			if bytes.Contains(body, []byte(`instance=`)) {
				t.Errorf("%s: per-instance exposition must leave the instance label to Prometheus", inst)
			}
			for k, v := range flatten(t, parseText(t, body), map[string]string{"instance": inst, "job": "inference"}) {
				live[k] = v
			}
		}
		// The all-instances endpoint carries the same samples, labelled.
		all := flatten(t, parseText(t, get(t, srv.URL+"/metrics")), map[string]string{"job": "inference"})
		srv.Close()

		var hist bytes.Buffer
		err := expo.WriteHistory(context.Background(), &hist, p.Targets(s.Source()), expo.HistoryOptions{
			From: at.Add(-time.Minute), To: at.Add(time.Minute), Step: time.Minute, Job: "inference"})
		if err != nil {
			t.Fatal(err)
		}
		written := parseHistory(t, &hist, at.Unix())

		if len(live) < 50 || len(live) != len(written) || len(all) != len(live) {
			t.Fatalf("at %s: %d live samples, %d all-instance samples, %d history samples", at, len(live), len(all), len(written))
		}
		for k, v := range live {
			w, ok := written[k]
			if !ok {
				t.Errorf("live sample %s missing from the history", k)
				continue
			}
			if strings.HasPrefix(k, "inference_prediction_confidence_count{") {
				w = math.Trunc(w)
			}
			if v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
				t.Errorf("%s at %s: live %v, history %v", k, at, v, w)
			}
			if a := all[k]; a != v {
				t.Errorf("%s: /metrics %v, /metrics?instance= %v", k, a, v)
			}
		}
	}
}

func TestLiveHandlerErrors(t *testing.T) {
	s := testbed.Default(end)
	p, _ := expo.Lookup("custom")
	srv := httptest.NewServer(expo.Handler(s.Source(), p, func() time.Time { return end }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics?instance=nowhere:1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "node-a:8000") {
		t.Errorf("unknown instance: %s %q", resp.Status, body)
	}
	resp, err = http.Post(srv.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %s", resp.Status)
	}
	index := string(get200(t, srv.URL+"/"))
	if !strings.Contains(index, "__param_instance") || !strings.Contains(index, "node-c:8000") {
		t.Errorf("index page lacks the scrape configuration:\n%s", index)
	}
}

func get200(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	return b
}
