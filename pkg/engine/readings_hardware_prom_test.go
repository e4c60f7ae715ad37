package engine

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestCorrectedECCOnTheTestBed: the hardware readings count node-b's corrected ECC errors as the
// scenario wrote them (GPU 2's weak cell: one every 6 hours), in the window and in the reference
// window before it, and node-a's GPUs, which count none, read 0 (measured), not "not measured".
// Tolerance 0.05: increase() extrapolates a day's count to the window's edges by at most one
// scrape interval (15 s of 24 h).
func TestCorrectedECCOnTheTestBed(t *testing.T) {
	b := startBed(t)
	end := b.s.End()
	from := end.Add(-24 * time.Hour)
	hw, err := b.e.Reader().HardwareReadings(context.Background(), HardwareQuery{Nodes: []string{"node-a", "node-b"}, From: from, To: end, Before: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	truth := func(at time.Time) float64 {
		n := 0.0
		for g := 0; g < b.s.GPUsPerInstance(); g++ {
			n += float64(b.s.GPU("node-b:8000", g, at).ECCCorrected)
		}
		return n
	}
	h := hw.Nodes["node-b"]
	wantNow, wantBefore := truth(end)-truth(from), truth(from)-truth(from.Add(-24*time.Hour))
	if wantNow == 0 || math.Abs(h.CorrectedNow-wantNow) > 0.05 || math.Abs(h.CorrectedBefore-wantBefore) > 0.05 {
		t.Errorf("node-b corrected ECC: %v in the window (%v before), want %v (%v)", h.CorrectedNow, h.CorrectedBefore, wantNow, wantBefore)
	}
	if a := hw.Nodes["node-a"]; a.CorrectedNow != 0 || a.CorrectedBefore != 0 {
		t.Errorf("node-a corrected ECC: %v (%v before), want 0 and 0", a.CorrectedNow, a.CorrectedBefore)
	}
}
