package profile_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// scrape fetches one live exposition and parses it as Prometheus would.
func scrape(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", u, resp.Status, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s: exposition does not parse: %v", u, err)
	}
	return fams
}

// sampleNames lists the sample names a Prometheus scraping fams would store (what its label
// values API returns for __name__), and the label names seen on each.
func sampleNames(fams map[string]*dto.MetricFamily, present map[string]bool, labels map[string]map[string]bool) {
	add := func(name string, m *dto.Metric) {
		present[name] = true
		if labels[name] == nil {
			labels[name] = map[string]bool{}
		}
		for _, l := range m.GetLabel() {
			labels[name][l.GetName()] = true
		}
	}
	for fname, fam := range fams {
		for _, m := range fam.GetMetric() {
			switch fam.GetType() {
			case dto.MetricType_HISTOGRAM:
				add(fname+"_bucket", m)
				add(fname+"_sum", m)
				add(fname+"_count", m)
			case dto.MetricType_SUMMARY:
				add(fname+"_sum", m)
				add(fname+"_count", m)
				if len(m.GetSummary().GetQuantile()) > 0 {
					add(fname, m)
				}
			default:
				add(fname, m)
			}
		}
	}
}

// TestDetectsTheTestBedsExposition serves every naming the test bed plays over HTTP, exactly
// as inferscope-loadgen --profile=NAME does, scrapes each instance, and requires Detect to name
// the same profile, every role the profile measures to resolve, and the role's series to carry
// the profile's model, version and instance labels (instance added as Prometheus does): the
// profile tables and the synthetic servers cannot drift apart.
func TestDetectsTheTestBedsExposition(t *testing.T) {
	sc := testbed.Default(testbed.DefaultEnd)
	if got, want := expo.ProfileNames(), profile.Names(); !sameSet(got, want) {
		t.Fatalf("the test bed plays %v, the profiles are %v", got, want)
	}
	// Mid-slowdown: preemptions, cache hits and every gauge are non-zero somewhere.
	slow, _ := sc.Incident(testbed.ComputeSlowdown)
	at := slow.Start.Add(10 * time.Minute)
	for _, name := range expo.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			want, err := profile.ByName(name)
			if err != nil {
				t.Fatalf("the test bed serves a %q naming that no profile describes: %v", name, err)
			}
			present := map[string]bool{}
			labels := map[string]map[string]bool{}
			// The server's variants (Triton with summaries, with the vLLM backend) are scraped
			// too: each is detected alone, and a role resolves from one of them.
			for _, naming := range append([]string{name}, expo.VariantsOf(name)...) {
				names := scrapeNaming(t, sc, naming, at, present, labels)
				got, d := profile.Detect(names)
				if got.Name != want.Name || d.Ambiguous {
					t.Fatalf("%s: Detect = %q (%s), want %q; names %v", naming, got.Name, d.Reason, want.Name, names)
				}
			}
			p := want
			if name == "tgi" { // the test bed's scrape configuration adds the model label
				if p, err = want.WithLabels(expo.TGIModelLabel, "", ""); err != nil {
					t.Fatal(err)
				}
			}
			for role := range want.Roles {
				m, ok, why := p.Resolve(role, present)
				if !ok {
					t.Errorf("role %s: %s", role, why)
					continue
				}
				wantLabels := []string{p.InstanceLabel}
				if !hostLevel(m, role) {
					wantLabels = append(wantLabels, p.ModelLabel)
					if !modelLevel(name, role) {
						wantLabels = append(wantLabels, p.VersionLabel)
					}
				}
				for _, metric := range m.Required() {
					for _, l := range wantLabels {
						if l != "" && !labels[metric][l] {
							t.Errorf("role %s: %s lacks the %s label (has %v)", role, metric, l, labels[metric])
						}
					}
				}
			}
		})
	}
}

// scrapeNaming serves one naming as inferscope-loadgen does, scrapes each instance into present
// and labels, and returns the sample names of this naming alone.
func scrapeNaming(t *testing.T, sc *testbed.Scenario, naming string, at time.Time, present map[string]bool, labels map[string]map[string]bool) []string {
	t.Helper()
	ep, err := expo.Lookup(naming)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(expo.Handler(sc.Source(), ep, func() time.Time { return at }))
	defer srv.Close()
	own := map[string]bool{}
	for _, inst := range sc.Instances() {
		fams := scrape(t, srv.URL+"/metrics?"+url.Values{"instance": {inst}}.Encode())
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				m.Label = append(m.Label, &dto.LabelPair{Name: strPtr("instance"), Value: strPtr(inst)})
			}
		}
		sampleNames(fams, own, labels)
	}
	names := make([]string, 0, len(own))
	for n := range own {
		present[n] = true
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// hostLevel: measures whose series carry no model label (GPU utilisation and process start
// belong to the server process, PerInstance measures to the host).
func hostLevel(m profile.Measure, r profile.Role) bool {
	return m.PerInstance || r == profile.GPUUtil || r == profile.ProcessStart
}

// modelLevel: roles whose series carry the model label but no version label.
func modelLevel(profileName string, r profile.Role) bool {
	return profileName == "custom" && (r == profile.QueueDepth || r == profile.Waiting || r == profile.LoadState)
}

func sameSet(a, b []string) bool {
	x, y := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func strPtr(s string) *string { return &s }
