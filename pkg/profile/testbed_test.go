package profile_test

import (
	"bytes"
	"sort"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// TestDetectsTheTestBedsExposition renders every naming the test bed
// serves, exactly as its /metrics does, and requires Detect to name the
// same profile and every role the profile measures to resolve: the profile
// tables and the synthetic servers cannot drift apart.
func TestDetectsTheTestBedsExposition(t *testing.T) {
	sc := testbed.Default(testbed.DefaultEnd)
	for _, name := range expo.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			want, err := profile.ByName(name)
			if err != nil {
				t.Fatalf("the test bed serves a %q naming that no profile describes: %v", name, err)
			}
			ep, err := expo.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			present := map[string]bool{}
			for _, tg := range ep.Targets(sc.Source()) {
				var buf bytes.Buffer
				if err := expo.WriteText(&buf, tg.Families, testbed.DefaultEnd, nil); err != nil {
					t.Fatal(err)
				}
				parser := expfmt.NewTextParser(model.UTF8Validation)
				fams, err := parser.TextToMetricFamilies(&buf)
				if err != nil {
					t.Fatalf("%s exposition of %s: %v", name, tg.Instance, err)
				}
				for fname, fam := range fams {
					switch fam.GetType() {
					case dto.MetricType_HISTOGRAM:
						present[fname+"_bucket"], present[fname+"_sum"], present[fname+"_count"] = true, true, true
					case dto.MetricType_SUMMARY:
						present[fname+"_sum"], present[fname+"_count"] = true, true
						for _, m := range fam.GetMetric() {
							if len(m.GetSummary().GetQuantile()) > 0 {
								present[fname] = true
							}
						}
					default:
						present[fname] = true
					}
				}
			}
			names := make([]string, 0, len(present))
			for n := range present {
				names = append(names, n)
			}
			sort.Strings(names)
			got, d := profile.Detect(names)
			if got.Name != want.Name || d.Ambiguous {
				t.Fatalf("Detect = %q (%s), want %q; names %v", got.Name, d.Reason, want.Name, names)
			}
			for role := range want.Roles {
				if _, ok, why := want.Resolve(role, present); !ok {
					t.Errorf("role %s: %s", role, why)
				}
			}
		})
	}
}
