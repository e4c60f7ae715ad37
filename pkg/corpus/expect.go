// Package corpus judges the triage and the alert-rule catalog on the test bed's incident corpus
// (testbed.GenerateCorpus): it replays each server's fleet in a real Prometheus, runs the
// backtest of the catalog over the case days, asks the triage the on-call engineer's question
// for every case, and scores the answers against the expected causes (expect.go, the one place
// where corpus kinds meet triage's cause ids). docs/triage.md, "The incident corpus", says how a
// case is judged; the full run is `go test -run '^$' -bench Corpus -benchtime 1x ./pkg/corpus/`.
package corpus

import (
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/triage"
)

// Cause ids the contract of issue 13 adds to triage's public set (pkg/triage/causes.go); spelt
// here until every branch has them, so the judge compiles either way.
const (
	causeCompute = "compute" // the compute segment slowed, the cause not among the signals measured
	causeKVCache = "kv_cache"
)

// Expected is the set of acceptable first causes of a harmful kind (the shared contract's
// table); nil for the controls, which expect verdict healthy (the warm-up: healthy or warmup).
func Expected(k testbed.CaseKind) []string {
	switch k {
	case testbed.CaseTrafficSurge:
		return []string{triage.CauseTrafficSurge}
	case testbed.CaseLostCapacity, testbed.CaseSmallerBatches:
		return []string{triage.CauseQueue}
	case testbed.CaseComputeMemory:
		return []string{triage.CauseComputeMemory}
	case testbed.CaseComputeFlat, testbed.CaseComputeNoProbe:
		return []string{causeCompute}
	case testbed.CaseMemorySwap:
		return []string{triage.CauseModelRegression, triage.CauseComputeMemory}
	case testbed.CaseKVCache:
		return []string{causeKVCache}
	case testbed.CaseInputShift:
		return []string{triage.CauseInputShift}
	case testbed.CaseThrottle, testbed.CaseXID, testbed.CaseECC:
		return []string{triage.CauseHardware}
	case testbed.CaseGPUIdle:
		return []string{triage.CauseGPUIdle}
	case testbed.CaseGatewayJitter:
		return []string{triage.CauseNetwork}
	case testbed.CaseWarmup:
		return []string{triage.CauseWarmup}
	case testbed.CaseCanary:
		return []string{triage.CauseModelRegression}
	}
	return nil
}

// Acceptable is the set of acceptable first causes of one case: its kind's, and for a GPU
// idle that reports an XID also the hardware cause. Asked at that XID (its alert fires at the
// event; the idleness shows only minutes later) the event is all there is to see, and it is
// part of the case's truth: naming it is right, not a wrong cause.
func Acceptable(c testbed.Case) []string {
	out := Expected(c.Kind)
	if c.Kind == testbed.CaseGPUIdle && c.XID() != 0 {
		out = append(out, triage.CauseHardware)
	}
	return out
}

// Harmful reports whether a kind is an incident the catalog must catch (not a control, not a
// warm-up: warm-ups are recorded, never alerted on).
func Harmful(k testbed.CaseKind) bool { return !k.Control() && k != testbed.CaseWarmup }
