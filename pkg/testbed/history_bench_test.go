package testbed_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// BenchmarkHistoryDay measures writing one day of history at the default step (the TSDB build
// writes 8 of them, split over concurrent parts).
func BenchmarkHistoryDay(b *testing.B) {
	s := testbed.Default(testbed.DefaultEnd)
	p, _ := expo.Lookup("custom")
	tg := p.Targets(s.Source())
	for i := 0; i < b.N; i++ {
		if err := expo.WriteHistory(context.Background(), io.Discard, tg, expo.HistoryOptions{From: testbed.DefaultEnd.Add(-24 * time.Hour), To: testbed.DefaultEnd, Step: testbed.DefaultHistoryStep, Job: "inference"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGPUHistoryDay measures writing one day of the probes' GPU history: one run of the
// probe's exporter per node and step dominates.
func BenchmarkGPUHistoryDay(b *testing.B) {
	s := testbed.Default(testbed.DefaultEnd)
	from := testbed.DefaultEnd.Add(-24 * time.Hour)
	for i := 0; i < b.N; i++ {
		tg, err := s.GPUTargets(testbed.GPUNamingInferscope, from, testbed.DefaultEnd)
		if err != nil {
			b.Fatal(err)
		}
		if err := expo.WriteHistory(context.Background(), io.Discard, tg, expo.HistoryOptions{From: from, To: testbed.DefaultEnd, Step: testbed.DefaultHistoryStep}); err != nil {
			b.Fatal(err)
		}
	}
}
