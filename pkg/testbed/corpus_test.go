package testbed

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestGenerateCorpus: the seeded corpus is deterministic, holds at least 200 cases, covers each
// server's kinds and controls, and places every case so its reference hour and its 7 baseline
// days are free of other cases on its model.
func TestGenerateCorpus(t *testing.T) {
	a, err := GenerateCorpus(CorpusOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateCorpus(CorpusOptions{Seed: 1})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two corpora")
	}
	c, _ := GenerateCorpus(CorpusOptions{Seed: 2})
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 1 and 2 gave the same corpus")
	}
	one, _ := GenerateCorpus(CorpusOptions{Seed: 1, Servers: []string{"tgi"}})
	var tgi []Case
	for _, x := range a {
		if x.Server == "tgi" {
			tgi = append(tgi, x)
		}
	}
	if !reflect.DeepEqual(one, tgi) {
		t.Error("a server's cases depend on the servers generated with it")
	}
	if len(a) < 200 {
		t.Fatalf("%d cases, want at least 200", len(a))
	}
	for _, server := range CorpusServers {
		kinds := map[CaseKind]int{}
		levels := map[int]bool{}
		for _, x := range a {
			if x.Server == server {
				kinds[x.Kind]++
				levels[x.Level] = true
			}
		}
		for _, k := range append(serverKinds(server), serverControls(server)...) {
			if kinds[k] == 0 {
				t.Errorf("%s: no %s case", server, k)
			}
		}
		if len(levels) < 3 {
			t.Errorf("%s: levels %v, want barely/mild to severe", server, levels)
		}
	}
	start := DefaultEnd.Add(-corpusCaseDays * 24 * time.Hour)
	for i, x := range a {
		if x.Model == "" || x.Instance == "" || x.Onset.Before(start) || !x.End.After(x.Onset) || x.End.After(DefaultEnd.Add(time.Hour)) {
			t.Errorf("%s: bad subject or time: %+v", x.ID, x)
		}
		for _, y := range a[i+1:] {
			if x.Server != y.Server {
				continue
			}
			gap := y.Onset.Sub(x.Onset).Abs()
			if x.Model == y.Model && gap < 100*time.Minute {
				t.Errorf("%s and %s: the same model %s only %s apart", x.ID, y.ID, x.Model, gap)
			}
			if x.Model == y.Model && (gap-24*time.Hour).Abs() < 30*time.Minute {
				t.Errorf("%s and %s: the same model a day apart (baseline)", x.ID, y.ID)
			}
			if (x.Kind.Restarts() || y.Kind.Restarts()) && x.Onset.Truncate(time.Hour).Equal(y.Onset.Truncate(time.Hour)) {
				t.Errorf("%s and %s share the hour of a restart", x.ID, y.ID)
			}
		}
	}
}

// TestCorpusOnsetVisible: every case of seed 1's fleets shows in the scenario's truth at its
// onset the way its kind says, and the controls show nothing.
func TestCorpusOnsetVisible(t *testing.T) {
	all, err := GenerateCorpus(CorpusOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, server := range CorpusServers {
		var cases []Case
		for _, c := range all {
			if c.Server == server {
				cases = append(cases, c)
			}
		}
		s, err := CorpusScenario(server, cases, DefaultEnd)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Cases() {
			checkOnset(t, s, c)
		}
	}
}

func checkOnset(t *testing.T, s *Scenario, c Case) {
	t.Helper()
	before, after := c.Onset.Add(-5*time.Minute), c.Onset.Add(5*time.Minute)
	if c.Kind == CaseMemorySwap || c.Kind == CaseDeploy {
		after = c.Onset.Add(LoadDuration + WarmupDuration + 2*time.Minute) // past the new version's warm-up
	}
	inst, model := c.Instance, c.Model
	ratio := func(f func(time.Time) float64) float64 { return f(after) / f(before) }
	mean := func(g Segment, version string) func(time.Time) float64 {
		return func(t time.Time) float64 { return s.SegmentMean(g, inst, model, version, t) }
	}
	qps := func(instance, version string) func(time.Time) float64 {
		return func(t time.Time) float64 { return s.QPS(instance, model, version, t) }
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.IsNaN(got) || math.Abs(got/want-1) > tol {
			t.Errorf("%s %s: %s %.3f, want %.3f ±%.0f %%", c.ID, c.Kind, what, got, want, 100*tol)
		}
	}
	above := func(what string, got, line float64) {
		t.Helper()
		if math.IsNaN(got) || got <= line {
			t.Errorf("%s %s: %s %.3f, want above %.3f", c.ID, c.Kind, what, got, line)
		}
	}
	gpus := c.GPUs
	if len(gpus) == 0 {
		gpus = s.ModelGPUs(model)
	}
	gpu := func(at time.Time) GPUState { return s.GPU(inst, gpus[0], at) }
	stable := s.StableVersion(model)
	diurnal := s.QPS(inst, model, stable, after) / s.QPS(inst, model, stable, before) // unaffected streams drift this much
	if c.Kind == CaseLostCapacity || c.p.traffic != 1 && c.p.traffic != 0 || c.Version != "" || c.Kind == CaseWarmup {
		other := otherInstance(s, inst)
		diurnal = s.QPS(other, model, "", after) / s.QPS(other, model, "", before)
	}
	switch c.Kind {
	case CaseTrafficSurge:
		near("QPS ratio", ratio(qps(inst, "")), c.Magnitude*diurnal, 0.02)
		above("queue mean ratio", ratio(mean(Queue, "")), 1.5)
		near("compute mean ratio", ratio(mean(Compute, "")), 1, 0.15)
	case CaseLostCapacity:
		if s.Ready(inst, after) || s.QPS(inst, model, "", after) != 0 {
			t.Errorf("%s: %s still serves during its outage", c.ID, inst)
		}
		other := otherInstance(s, inst)
		near("a survivor's QPS ratio", s.QPS(other, model, "", after)/s.QPS(other, model, "", before), c.Magnitude*diurnalOf(s, model, before, after), 0.02)
		near("the model's QPS ratio", ratio(func(t time.Time) float64 { return s.QPS("", model, "", t) }), diurnalOf(s, model, before, after), 0.02)
	case CaseSmallerBatches:
		near("queue mean ratio", ratio(mean(Queue, "")), c.Magnitude, 0.05)
		if ratio(mean(BatchSize, "")) >= 1 {
			t.Errorf("%s: batches did not shrink", c.ID)
		}
	case CaseComputeMemory:
		above("GPU memory at onset", gpu(after).MemUsedRatio, 0.92)
		if m := gpu(c.Onset.Add(-c.p.memRamp - 5*time.Minute)).MemUsedRatio; m > 0.85 {
			t.Errorf("%s: memory %.3f already high before the ramp", c.ID, m)
		}
		above("compute mean ratio", ratio(mean(Compute, "")), 1.2)
	case CaseComputeFlat, CaseComputeNoProbe:
		near("compute mean ratio", ratio(mean(Compute, "")), c.Magnitude, 0.05)
		near("queue mean ratio", ratio(mean(Queue, "")), 1+0.1*(c.Magnitude-1), 0.05)
		if c.Kind == CaseComputeFlat && math.Abs(gpu(after).MemUsedRatio-gpu(before).MemUsedRatio) > 0.01 {
			t.Errorf("%s: GPU memory moved", c.ID)
		}
		if s.Probed(inst) == (c.Kind == CaseComputeNoProbe) {
			t.Errorf("%s: probed %v", c.ID, s.Probed(inst))
		}
	case CaseMemorySwap:
		if s.QPS(inst, model, stable, after) != 0 || s.QPS(inst, model, c.Version, after) == 0 {
			t.Errorf("%s: the new version did not replace the old", c.ID)
		}
		if got := s.ProcessStart(inst, after); !got.Equal(c.Onset) {
			t.Errorf("%s: process start %s, want the upgrade's restart", c.ID, got)
		}
		above("GPU memory after the upgrade", gpu(after).MemUsedRatio, 0.96)
		above("compute mean, new / old", s.SegmentMean(Compute, inst, model, c.Version, after)/s.SegmentMean(Compute, inst, model, stable, before), 1.3)
	case CaseKVCache:
		above("KV-cache usage", s.KVCacheUsage(inst, model, after), 0.94)
		if u := s.KVCacheUsage(inst, model, before); u > 0.8 {
			t.Errorf("%s: KV cache %.2f before the onset", c.ID, u)
		}
		near("preemptions per request", s.Increase(Preemptions, inst, model, "", c.Onset, after, 0)/s.Increase(Requests, inst, model, "", c.Onset, after, 0), c.p.preempt, 0.01)
	case CaseInputShift:
		near("input length mean ratio", ratio(mean(InputLength, "")), 1+c.p.share*(c.p.input-1), 0.02)
		above("compute mean ratio", ratio(mean(Compute, "")), 1.05)
	case CaseThrottle:
		g := gpu(after)
		if g.SMClockMHz != c.p.clockMHz || g.ThrottleReasons&c.p.throttleMask != c.p.throttleMask || gpu(before).ThrottleReasons&c.p.throttleMask != 0 {
			t.Errorf("%s: clock %d reasons 0x%x (before 0x%x)", c.ID, g.SMClockMHz, g.ThrottleReasons, gpu(before).ThrottleReasons)
		}
		above("compute mean ratio", ratio(mean(Compute, "")), 1.02)
	case CaseXID:
		atOnset := func(x XIDEvent) bool { return x.Code == c.p.xid && x.Time.Equal(c.Onset) }
		if slices.ContainsFunc(gpu(before).XIDs, atOnset) || !slices.ContainsFunc(gpu(after).XIDs, atOnset) {
			t.Errorf("%s: XID %d not there at onset only: before %v after %v", c.ID, c.p.xid, gpu(before).XIDs, gpu(after).XIDs)
		}
		above("error ratio", s.ErrorRatio(inst, model, "", after), s.ErrorRatio(inst, model, "", before))
	case CaseECC:
		above("corrected ECC errors since onset", float64(gpu(after).ECCCorrected-gpu(before).ECCCorrected), 0)
	case CaseGPUIdle:
		if g := gpu(after); g.UtilRatio != 0 || !s.Ready(inst, after) {
			t.Errorf("%s: GPU util %.2f ready %v", c.ID, g.UtilRatio, s.Ready(inst, after))
		}
		near("QPS ratio", ratio(qps(inst, "")), diurnal, 0.001)
		near("fallback ratio", s.FallbackRatio(inst, model, "", after), c.p.share+s.FallbackRatio(inst, model, "", before), 0.01)
	case CaseGatewayJitter:
		near("network mean increase (s)", s.SegmentMean(Network, inst, model, "", after)-s.SegmentMean(Network, inst, model, "", before), c.p.netShare*c.p.netDelay, 0.01)
		near("e2e mean ratio", ratio(mean(E2E, "")), 1, 0.02)
	case CaseWarmup:
		if !s.ProcessStart(inst, c.Onset.Add(time.Second)).Equal(c.Onset) || s.Ready(inst, c.Onset.Add(30*time.Second)) || s.WarmupFactor(inst, c.Onset.Add(LoadDuration)) <= 1 {
			t.Errorf("%s: no restart and warm-up at onset", c.ID)
		}
	case CaseCanary, CaseFasterVersion:
		near("new version's compute / stable's", s.SegmentMean(Compute, inst, model, c.Version, after)/s.SegmentMean(Compute, inst, model, stable, after), c.Magnitude, 0.01)
		near("new version's traffic share", s.QPS(inst, model, c.Version, after)/s.QPS(inst, model, "", after), c.p.versionShare, 0.01)
	case CaseDeploy:
		near("new version's compute / old's", s.SegmentMean(Compute, inst, model, c.Version, after)/s.SegmentMean(Compute, inst, model, stable, before), 1, 0.04)
	case CaseQuietHour, CaseBusyHour:
		near("e2e mean ratio", ratio(mean(E2E, "")), 1, 0.04)
	}
}

func otherInstance(s *Scenario, inst string) string {
	for _, i := range s.Instances() {
		if i != inst && i != corpusUnprobed && !s.ext.down(i, time.Time{}) {
			return i
		}
	}
	return ""
}

// diurnalOf is how much the model's undisturbed traffic changes between two instants.
func diurnalOf(s *Scenario, model string, a, b time.Time) float64 {
	m := s.model(model)
	return m.diurnal(unix(b)) / m.diurnal(unix(a))
}

// TestCorpusKindsAreNotIncidentKinds: a corpus kind never shares a name with the default
// scenario's incident kinds, whose logic would then apply to it.
func TestCorpusKindsAreNotIncidentKinds(t *testing.T) {
	for _, in := range Default(DefaultEnd).Incidents() {
		if slices.Contains(CaseKinds, CaseKind(in.Kind)) {
			t.Errorf("corpus kind %s is also a scenario incident kind", in.Kind)
		}
	}
}
