package testbed

import (
	"math"
	"testing"
	"time"
)

// Prefill and decode split compute exactly: in steady state prefill is PrefillShare of compute
// (its distribution too), in the compute slowdown prefill keeps the steady mean and decode takes
// the rest; the phases' means always add up to compute's.
func TestComputePhasesAddUp(t *testing.T) {
	s := Default(DefaultEnd)
	slow, _ := s.Incident(ComputeSlowdown)
	before := slow.Start.Add(-10 * time.Minute)
	during := slow.Start.Add(10 * time.Minute)
	for _, inst := range s.Instances() {
		for _, model := range s.Models() {
			for _, at := range []time.Time{before, during, s.End().Add(-time.Minute)} {
				c := s.SegmentMean(Compute, inst, model, "", at)
				p, d := s.SegmentMean(Prefill, inst, model, "", at), s.SegmentMean(Decode, inst, model, "", at)
				if math.Abs(p+d-c) > 1e-12*c {
					t.Errorf("%s %s at %s: prefill %.9g + decode %.9g ≠ compute %.9g", inst, model, at, p, d, c)
				}
			}
		}
	}
	inst, model := slow.Instance, slow.Model
	pb, pd := s.SegmentMean(Prefill, inst, model, "", before), s.SegmentMean(Prefill, inst, model, "", during)
	if r := s.SegmentMean(Prefill, inst, model, "", before) / s.SegmentMean(Compute, inst, model, "", before); math.Abs(r-PrefillShare) > 1e-12 {
		t.Errorf("steady prefill share %.12g, want %g", r, PrefillShare)
	}
	if r := pd / pb; math.Abs(r-1) > 0.05 { // only the day's latency scale moves it
		t.Errorf("prefill moved ×%.4f in the slowdown", r)
	}
	if r := s.SegmentMean(Decode, inst, model, "", during) / s.SegmentMean(Decode, inst, model, "", before); r < 3 {
		t.Errorf("decode grew only ×%.3f in the slowdown", r)
	}
	q := s.SegmentQuantile(Prefill, inst, model, "", 0.5, before) / s.SegmentQuantile(Compute, inst, model, "", 0.5, before)
	if math.Abs(q-PrefillShare) > 1e-6 {
		t.Errorf("steady prefill median / compute median = %.9g, want %g", q, PrefillShare)
	}
}
