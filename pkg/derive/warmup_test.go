package derive

import (
	"reflect"
	"testing"
	"time"
)

func TestWarmupMask(t *testing.T) {
	const step = 15_000
	t0 := int64(1_700_000_000_000)
	n := 70
	ts := grid(t0, step, n)
	ready := make([]float64, n)
	start := make([]float64, n)
	presence := make([]float64, n)
	for i := range ts {
		ready[i], presence[i] = 1, 1
		start[i] = float64(t0)/1000 - 3600 // started an hour before the range
	}
	ready[0] = nan            // unknown: not "not ready"
	ready[1], ready[2] = 0, 0 // loading
	for i := 20; i < n; i++ { // restart 7.5 s before sample 20
		start[i] = float64(ts[20]-7_500) / 1000
	}
	for i := 30; i < 34; i++ { // gone for a minute, back at 34
		ready[i], start[i], presence[i] = nan, nan, nan
	}
	sig := InstanceSignals{
		Ready:     series(ts, ready...),
		StartTime: series(ts, start...),
		Presence:  series(ts, presence...),
		Resets:    []int64{ts[50]},
	}
	mask, err := WarmupMask(ts, sig, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := make(Mask, n)
	want[1], want[2] = WarmNotReady, WarmNotReady
	for i := 3; i <= 10; i++ { // ready at 3: [t3, t3+2m) = 8 points
		want[i] |= WarmJustReady
	}
	for i := 20; i <= 27; i++ { // [t20−7.5s, t20+112.5s)
		want[i] |= WarmRestart
	}
	for i := 34; i <= 41; i++ {
		want[i] |= WarmFirstSeen
	}
	for i := 50; i <= 57; i++ {
		want[i] |= WarmCounterReset
	}
	if !reflect.DeepEqual(mask, want) {
		t.Errorf("mask\n got %v\nwant %v", mask, want)
	}

	iv := mask.Intervals(ts)
	wantIv := []WarmInterval{
		{Interval{ts[1], ts[10]}, WarmNotReady | WarmJustReady},
		{Interval{ts[20], ts[27]}, WarmRestart},
		{Interval{ts[34], ts[41]}, WarmFirstSeen},
		{Interval{ts[50], ts[57]}, WarmCounterReset},
	}
	if !reflect.DeepEqual(iv, wantIv) {
		t.Errorf("intervals\n got %v\nwant %v", iv, wantIv)
	}
	if s := iv[0].Reason.String(); s != "model not ready, model just became ready" {
		t.Errorf("reason text = %q", s)
	}

	lat := make([]float64, n)
	for i := range lat {
		lat[i] = 0.05
	}
	masked, err := mask.Apply(series(ts, lat...))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range masked.V {
		if mask.Warming(i) != (v != v) {
			t.Fatalf("point %d: warming %v but value %v", i, mask.Warming(i), v)
		}
	}
	if lat[1] != 0.05 {
		t.Error("Apply modified its input")
	}
	if _, err := mask.Apply(series(ts[:3], 1, 2, 3)); err == nil {
		t.Error("want an error for a series off the mask's grid")
	}
}

func TestWarmupMaskSignalsOptional(t *testing.T) {
	ts := grid(0, 15_000, 10)
	mask, err := WarmupMask(ts, InstanceSignals{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(mask.Intervals(ts)) != 0 {
		t.Errorf("no signals should mean steady state, got %v", mask)
	}
	// A counter reset before the grid still covers the first points.
	mask, _ = WarmupMask(ts, InstanceSignals{Resets: []int64{-60_000}}, 0)
	if want := (Mask{WarmCounterReset, WarmCounterReset, WarmCounterReset, WarmCounterReset, 0, 0, 0, 0, 0, 0}); !reflect.DeepEqual(mask, want) {
		t.Errorf("reset before grid: %v", mask)
	}
	if _, err := WarmupMask(ts, InstanceSignals{Ready: series(ts[:2], 1, 1)}, 0); err == nil {
		t.Error("want an error for a signal off the grid")
	}
	if _, err := WarmupMask(ts, InstanceSignals{}, -time.Second); err == nil {
		t.Error("want an error for a negative window")
	}
}

func BenchmarkWarmupMask(b *testing.B) {
	ts := grid(0, 15_000, 30*5760)
	ready := make([]float64, len(ts))
	start := make([]float64, len(ts))
	for i := range ts {
		ready[i] = 1
		start[i] = float64(ts[i]/3_600_000*3_600_000) / 1000 // a restart every hour
	}
	sig := InstanceSignals{Ready: series(ts, ready...), StartTime: series(ts, start...)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := WarmupMask(ts, sig, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ts)), "ns/point")
}
