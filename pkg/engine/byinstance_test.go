package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// The service types' `by` field: version (the default) or instance; anything else is named.
func TestParseServiceBy(t *testing.T) {
	perInstance := func(r Runner) bool {
		switch q := r.(type) {
		case latencyQuery:
			return q.perInstance
		case jitterQuery:
			return q.perInstance
		case splitQuery:
			return q.perInstance
		case baselineQuery:
			return q.perInstance
		case errorsQuery:
			return q.perInstance
		}
		t.Fatalf("runner %T is not a service type", r)
		return false
	}
	for _, typ := range []string{"latency", "jitter", "split", "baseline", "errors"} {
		for raw, want := range map[string]bool{`{}`: false, `{"by":""}`: false, `{"by":"version"}`: false, `{"by":" instance "}`: true, `{"by":"instance"}`: true} {
			q, err := ParseAs(typ, []byte(raw))
			if err != nil {
				t.Errorf("%s %s: %v", typ, raw, err)
				continue
			}
			if got := perInstance(q.Runner()); got != want {
				t.Errorf("%s %s: per instance %v, want %v", typ, raw, got, want)
			}
		}
		// throughput's values (total, model) group differently and are not the service types'.
		for _, bad := range []string{`"model"`, `"total"`, `"node"`, `7`} {
			_, err := ParseAs(typ, []byte(`{"by":`+bad+`}`))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "by" || !strings.Contains(err.Error(), "field by must be") {
				t.Errorf("%s by %s: %v, want an error naming the field", typ, bad, err)
			}
		}
		_, err := ParseAs(typ, []byte(`{"by":"node"}`))
		if err == nil || err.Error() != `field by must be one of version, instance, got "node"` {
			t.Errorf("%s: %v", typ, err)
		}
	}
	// throughput keeps its own by.
	for by, want := range map[string]string{`{}`: "model", `{"by":"total"}`: "total", `{"by":"instance"}`: "instance"} {
		q, err := ParseAs("throughput", []byte(by))
		if err != nil || q.Runner().(throughputQuery).by != want {
			t.Errorf("throughput %s: %v %#v", by, err, q.Runner())
		}
	}
}

// seriesByInstance returns the result series of the given name per instance label value.
func seriesByInstance(t *testing.T, res *Result, name string) map[string]Series {
	t.Helper()
	out := map[string]Series{}
	for _, s := range res.Series {
		if s.Name != name {
			continue
		}
		inst := s.Labels["instance"]
		if _, dup := out[inst]; dup || inst == "" {
			t.Fatalf("%s: series %v without an instance or twice", name, s.Labels)
		}
		out[inst] = s
	}
	return out
}

// The queue surge on node-a, read per instance: node-a's queue share is the scenario's (0.69,
// above the 0.6 line of queue-p1), node-b and node-c stay at their steady state, and the same
// query by version reads the three instances together (0.52 on the scenario, under the line).
func TestSplitByInstanceSeesNodeASurge(t *testing.T) {
	b := startBed(t)
	s := b.s
	surge := incident(t, s, testbed.QueueSurge)
	from, to := surge.Start.Add(-30*time.Minute), surge.End.Add(30*time.Minute)
	const model, version = "recsys-ranker", "v1.4.0"
	q := `{"queryType":"split","model":%q,"version":%q%s}`
	perInst := b.run(t, fmt.Sprintf(q, model, version, `,"by":"instance"`), from, to, time.Minute)
	shares := seriesByInstance(t, perInst, "queue_share")
	if len(shares) != 3 {
		t.Fatalf("%d queue_share series, want one per instance: %v", len(shares), perInst.Series)
	}
	shareTruth := func(inst string, ts time.Time) float64 {
		queue := windowMean(s, testbed.Queue, inst, model, version, ts)
		compute := windowMean(s, testbed.Compute, inst, model, version, ts)
		network := windowMean(s, testbed.Gateway, inst, model, version, ts) - windowMean(s, testbed.E2E, inst, model, version, ts)
		return queue / (queue + compute + network)
	}
	// Inside the surge: every point whose rate window lies wholly in it.
	inside := func(ts time.Time) bool { return !ts.Before(surge.Start.Add(window)) && !ts.After(surge.End) }
	for inst, sr := range shares {
		if want := model + " " + version + " " + inst + " queue share"; sr.DisplayName != want {
			t.Errorf("display name %q, want %q", sr.DisplayName, want)
		}
		lo, hi, steady := math.Inf(1), 0.0, math.NaN()
		for i, ms := range sr.T {
			ts := msTime(ms)
			if want := shareTruth(inst, ts); !near(sr.V[i], want, relTol) {
				t.Errorf("%s at %s: queue share %.9g, truth %.9g", inst, ts.Format(time.RFC3339), sr.V[i], want)
			}
			if ts.Equal(surge.Start.Add(-5 * time.Minute)) {
				steady = sr.V[i]
			}
			if inside(ts) {
				lo, hi = min(lo, sr.V[i]), max(hi, sr.V[i])
			}
		}
		t.Logf("%s: queue share before %.3f, in the surge %.3f .. %.3f", inst, steady, lo, hi)
		if inst == surge.Instance {
			// The scenario's own means in the surge (queue ×9 over a flat compute and network):
			// the share is theirs, to 0.005, and above queue-p1's 0.6 line.
			mid := surge.Start.Add(surge.End.Sub(surge.Start) / 2)
			qm := s.SegmentMean(testbed.Queue, inst, model, version, mid)
			want := qm / (qm + s.SegmentMean(testbed.Compute, inst, model, version, mid) + s.SegmentMean(testbed.Network, inst, model, version, mid))
			t.Logf("%s: the scenario's segment means give a queue share of %.3f", inst, want)
			if !(lo > 0.6) || math.Abs(lo-want) > 0.005 || math.Abs(hi-want) > 0.005 {
				t.Errorf("%s: queue share %.3f .. %.3f in the surge, want %.3f (> 0.6)", inst, lo, hi, want)
			}
			continue
		}
		// Steady state: within 0.01 of the share before the surge, far under the line.
		if math.Abs(lo-steady) > 0.01 || math.Abs(hi-steady) > 0.01 || !(hi < 0.4) {
			t.Errorf("%s: queue share %.3f .. %.3f in node-a's surge, %.3f before: want steady", inst, lo, hi, steady)
		}
	}

	// By version (the default, and said explicitly): one series, the instances read together.
	def := b.run(t, fmt.Sprintf(q, model, version, ""), from, to, time.Minute)
	explicit := b.run(t, fmt.Sprintf(q, model, version, `,"by":"version"`), from, to, time.Minute)
	if len(def.Series) != len(explicit.Series) || len(def.Series) != 8 {
		t.Fatalf("by version: %d / %d series, want 8", len(def.Series), len(explicit.Series))
	}
	for i := range def.Series {
		d, e := def.Series[i], explicit.Series[i]
		if labelsText(d.Labels) != labelsText(e.Labels) || !sameValues(d.V, e.V) {
			t.Errorf("by version differs from the default: %v / %v", d.Labels, e.Labels)
		}
		if _, ok := d.Labels["instance"]; ok {
			t.Errorf("by version carries an instance: %v", d.Labels)
		}
	}
	all := pick(t, def, "queue_share", mv(model, version))
	hi := 0.0
	for i, ms := range all.T {
		ts := msTime(ms)
		if want := shareTruth("", ts); !near(all.V[i], want, relTol) {
			t.Errorf("by version at %s: queue share %.9g, truth %.9g", ts.Format(time.RFC3339), all.V[i], want)
		}
		if inside(ts) {
			hi = max(hi, all.V[i])
		}
	}
	t.Logf("by version: queue share up to %.3f in the surge", hi)
	if !(hi < 0.6) {
		t.Errorf("by version: queue share up to %.3f in the surge, want it diluted under 0.6", hi)
	}
}

// Per instance, the warm-up filter drops node-c's points around its restart in node-c's own
// series and leaves node-a's and node-b's as they are: each equals the scenario's own P95.
func TestLatencyByInstanceWarmup(t *testing.T) {
	b := startBed(t)
	s := b.s
	restart := incident(t, s, testbed.WarmupRestart).Start
	from, to := restart.Add(-20*time.Minute), restart.Add(30*time.Minute)
	const model, version = "recsys-ranker", "v1.4.0"
	res := b.run(t, fmt.Sprintf(`{"queryType":"latency","model":%q,"version":%q,"quantiles":[0.95],"by":"instance"}`, model, version), from, to, time.Minute)
	p95 := seriesByInstance(t, res, "p95")
	if len(p95) != 3 {
		t.Fatalf("%d p95 series, want 3", len(p95))
	}
	gone := 0
	for inst, sr := range p95 {
		for i, ms := range sr.T {
			ts := msTime(ms)
			want := s.BucketQuantile(testbed.E2E, inst, model, version, 0.95, ts.Add(-window), ts)
			if inst == "node-c:8000" {
				switch {
				case warmObservations(restart, ts):
					if !math.IsNaN(sr.V[i]) {
						t.Errorf("node-c at %s: %.4g, want no data (warm-up)", ts.Format(time.RFC3339), sr.V[i])
					}
					gone++
					continue
				case !ts.Before(restart) && !ts.After(restart.Add(10*time.Minute)):
					continue // the mask may reach a step past the warm-up
				}
			}
			if !near(sr.V[i], want, relTol) {
				t.Errorf("%s at %s: P95 %.9g, truth %.9g", inst, ts.Format(time.RFC3339), sr.V[i], want)
			}
		}
	}
	if want := int((testbed.LoadDuration + testbed.WarmupDuration + window) / time.Minute); gone != want {
		t.Errorf("%d node-c points dropped, want %d", gone, want)
	}
	if len(res.Warmup) != 1 || res.Warmup[0].Instance != "node-c:8000" {
		t.Errorf("warm-up intervals %+v, want node-c's alone", res.Warmup)
	}
}

// Every service type by instance equals, series by series, the same type by version selecting
// that one instance: over node-c's restart (the warm-up filter on, node-c fetched on its own and
// masked) and over node-a's queue surge (the baseline against each instance's own previous days).
func TestByInstanceEqualsOneInstanceSelected(t *testing.T) {
	b := startBed(t)
	s := b.s
	restart := incident(t, s, testbed.WarmupRestart).Start
	surge := incident(t, s, testbed.QueueSurge)
	ranges := []struct {
		name     string
		from, to time.Time
	}{
		{"restart", restart.Add(-15 * time.Minute), restart.Add(25 * time.Minute)},
		{"surge", surge.Start.Add(-10 * time.Minute), surge.End.Add(10 * time.Minute)},
	}
	types := []string{
		`"queryType":"latency"`, `"queryType":"jitter"`, `"queryType":"split"`, `"queryType":"errors"`, `"queryType":"baseline"`,
	}
	for _, r := range ranges {
		for _, typ := range types {
			t.Run(r.name+" "+strings.Split(typ, `"`)[3], func(t *testing.T) {
				perInst := b.run(t, `{`+typ+`,"model":"recsys-ranker","by":"instance"}`, r.from, r.to, time.Minute)
				n := 0
				for _, inst := range s.Instances() {
					one := b.run(t, fmt.Sprintf(`{%s,"model":"recsys-ranker","instance":%q}`, typ, inst), r.from, r.to, time.Minute)
					for _, want := range one.Series {
						labels := copyWithout(want.Labels, SeriesLabel)
						labels["instance"] = inst
						got := pick(t, perInst, want.Name, labels)
						for i := range want.V {
							if !near(got.V[i], want.V[i], relTol) {
								t.Errorf("%s %s at %s: by instance %.9g, instance selected %.9g", inst, want.Name,
									msTime(want.T[i]).Format(time.RFC3339), got.V[i], want.V[i])
								break
							}
						}
						n++
					}
				}
				if n == 0 || n != len(perInst.Series) {
					t.Errorf("%d series compared, %d by instance", n, len(perInst.Series))
				}
			})
		}
	}
}

// Per instance, the surge shows on node-a alone: its P95 passes 3× its own baseline and its
// timeouts reach 1 %, while node-b and node-c stay at their baselines and 0.02 %.
func TestBaselineAndErrorsByInstance(t *testing.T) {
	b := startBed(t)
	s := b.s
	surge := incident(t, s, testbed.QueueSurge)
	from, to := surge.Start.Add(-10*time.Minute), surge.End.Add(10*time.Minute)
	base := b.run(t, `{"queryType":"baseline","model":"recsys-ranker","version":"v1.4.0","by":"instance"}`, from, to, time.Minute)
	for inst, sr := range seriesByInstance(t, base, "ratio") {
		top := 0.0
		for i, ms := range sr.T {
			ts := msTime(ms)
			cur, mean := baselineTruth(s, inst, "recsys-ranker", "v1.4.0", ts, time.Minute)
			if !near(sr.V[i], cur/mean, 10*relTol) {
				t.Errorf("%s at %s: ratio %.9g, truth %.9g", inst, ts.Format(time.RFC3339), sr.V[i], cur/mean)
			}
			top = max(top, sr.V[i])
		}
		t.Logf("%s: P95 up to %.2f× its baseline", inst, top)
		if (inst == surge.Instance) != (top > 3) || (inst != surge.Instance && top > 1.5) {
			t.Errorf("%s: ratio up to %.3g in node-a's surge", inst, top)
		}
	}
	errs := b.run(t, `{"queryType":"errors","model":"recsys-ranker","version":"v1.4.0","by":"instance"}`, from, to, time.Minute)
	timeouts := seriesByInstance(t, errs, "timeout_ratio")
	if len(timeouts) != 3 {
		t.Fatalf("%d timeout_ratio series", len(timeouts))
	}
	checked := 0
	for inst, sr := range timeouts {
		for i, ms := range sr.T {
			ts := msTime(ms)
			a, z := s.TimeoutRatio(inst, "recsys-ranker", "v1.4.0", ts.Add(-window)), s.TimeoutRatio(inst, "recsys-ranker", "v1.4.0", ts)
			if a != z { // the truth changes inside the rate window
				continue
			}
			if !near(sr.V[i], z, 1e-9) {
				t.Errorf("%s at %s: timeout ratio %.9g, truth %.9g", inst, ts.Format(time.RFC3339), sr.V[i], z)
			}
			if inst == surge.Instance && surge.Active(ts.Add(-window)) && !near(z, 0.01, 1e-9) {
				t.Errorf("truth in the surge %.6g, want 1 %%", z)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Errorf("%d points checked", checked)
	}
}

// The other metric profiles group by instance the same way: vLLM and SGLang (no version label), Triton
// (µs counters: means only) and TorchServe (µs counters and a host-wide 5xx counter, whose
// ratio is then per instance over all its models). Each series by instance equals the query
// by version selecting that one instance, over the queue surge.
func TestByInstanceEveryProfile(t *testing.T) {
	for _, name := range []string{"vllm", "triton", "torchserve", "sglang"} {
		t.Run(name, func(t *testing.T) {
			dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: name})
			srv := promtest.Start(t, promtest.Options{DataDir: dir})
			c, err := prom.New(srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			names, err := c.LabelValues(context.Background(), "__name__", nil, time.Time{}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			p, det := profile.Detect(names)
			if !det.Found || p.Name != name {
				t.Fatalf("detected %+v", det)
			}
			present := map[string]bool{}
			for _, n := range names {
				present[n] = true
			}
			b := bed{e: &Engine{Prom: c, Profile: p, Present: present, WarmupWindow: 2 * time.Minute}, s: s}
			surge := incident(t, s, testbed.QueueSurge)
			from, to := surge.Start.Add(-10*time.Minute), surge.End.Add(10*time.Minute)
			for _, typ := range []string{"latency", "split", "errors"} {
				perInst := b.run(t, fmt.Sprintf(`{"queryType":%q,"by":"instance"}`, typ), from, to, time.Minute)
				n := 0
				for _, inst := range s.Instances() {
					one := b.run(t, fmt.Sprintf(`{"queryType":%q,"instance":%q}`, typ, inst), from, to, time.Minute)
					for _, want := range one.Series {
						labels := copyWithout(want.Labels, SeriesLabel)
						labels["instance"] = inst
						got := pick(t, perInst, want.Name, labels)
						for i := range want.V {
							if !near(got.V[i], want.V[i], relTol) {
								t.Errorf("%s %s %v at %s: by instance %.9g, instance selected %.9g", typ, want.Name, labels,
									msTime(want.T[i]).Format(time.RFC3339), got.V[i], want.V[i])
								break
							}
						}
						n++
					}
				}
				if n == 0 || n != len(perInst.Series) {
					t.Errorf("%s: %d series compared, %d by instance", typ, n, len(perInst.Series))
				}
			}
		})
	}
}
