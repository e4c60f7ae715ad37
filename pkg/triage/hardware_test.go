package triage

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// TestHardwareReadingsBothGPUNamings: the scenario's one XID (43, on node-a's GPU 6 as the GPU
// idle incident starts) is read as one XID event in the window around it, none in the hour
// before and none on the other nodes, with no uncorrected ECC error and no hardware throttling
// (the power cap and idle reasons do not count), from the probe's series and from
// dcgm-exporter's alike.
func TestHardwareReadingsBothGPUNamings(t *testing.T) {
	for _, naming := range []string{testbed.GPUNamingInferscope, testbed.GPUNamingDCGM} {
		t.Run(naming, func(t *testing.T) {
			e, s := enginetest.Start(t, enginetest.Profile("triton"), enginetest.GPUNaming(naming))
			in, ok := s.Incident(testbed.GPUIdle)
			if !ok {
				t.Fatal("the scenario has no GPU idle incident")
			}
			from, to := in.Start.Add(-5*time.Minute), in.Start.Add(5*time.Minute)
			rd, err := Read(context.Background(), e, Options{Model: in.Model, From: from, To: to})
			if err != nil {
				t.Fatal(err)
			}
			if len(rd.Instances) < 2 {
				t.Fatalf("%d instances serve %s: want the incident's and another node's", len(rd.Instances), in.Model)
			}
			for _, got := range rd.Instances {
				wantXID := 0.0
				if got.Node == testbed.Node(in.Instance) {
					wantXID = 1
				}
				t.Logf("%s: XID %v → %v, uncorrected ECC %v → %v, throttle %v", got.Name, got.XID.Before, got.XID.Now,
					got.ECCUncorrected.Before, got.ECCUncorrected.Now, got.Throttle)
				if got.XID.Now != wantXID || got.XID.Before != 0 {
					t.Errorf("%s: XID events %v in the window, %v before; want %v and 0", got.Name, got.XID.Now, got.XID.Before, wantXID)
				}
				if got.ECCUncorrected.Now != 0 || got.ECCUncorrected.Before != 0 || math.IsNaN(got.ECCUncorrected.Now) {
					t.Errorf("%s: uncorrected ECC %v → %v, want 0 → 0", got.Name, got.ECCUncorrected.Before, got.ECCUncorrected.Now)
				}
				if len(got.Throttle) > 0 {
					t.Errorf("%s: hardware throttling %v, the scenario has none", got.Name, got.Throttle)
				}
			}
			r := Score(rd, DefaultThresholds())
			hw := cause(t, &r, CauseHardware)
			if hw.Instance != in.Instance || hw.Model != in.Model || !strings.Contains(hw.Summary, "1 XID event") {
				t.Errorf("hardware cause on %s of %q: %q", hw.Instance, hw.Model, hw.Summary)
			}
			// Asked as a GPU alert asks (node and GPU), the XID is the node's, no model's.
			node, err := Diagnose(context.Background(), e, Options{Node: testbed.Node(in.Instance), GPU: strconv.Itoa(in.GPUs[0]), From: from, To: to})
			if err != nil {
				t.Fatal(err)
			}
			if hw := cause(t, node, CauseHardware); hw.Model != "" || !strings.Contains(hw.Summary, "1 XID event(s) on GPU "+strconv.Itoa(in.GPUs[0])+" of "+testbed.Node(in.Instance)) {
				t.Errorf("node question: hardware cause of %q: %q", hw.Model, hw.Summary)
			}
		})
	}
}
