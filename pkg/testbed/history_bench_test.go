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
