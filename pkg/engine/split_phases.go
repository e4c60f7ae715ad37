package engine

import (
	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
)

// computePhases are the prefill and decode phases of compute, for servers that time them
// (vLLM's request_prefill_time_seconds and request_decode_time_seconds). They are shown under
// compute: the regime rule reads queue, compute and network only.
type computePhases struct {
	at              int // index of the prefill read among the split's reads; decode follows; -1 = none
	prefill, decode map[string]derive.Series
}

// phaseReqs appends the phases' reads to reqs where the server has both.
func phaseReqs(x *Exec, reqs *[]roleRead) *computePhases {
	cp := &computePhases{at: -1}
	pre, okP, _ := x.resolve(profile.PrefillTime)
	dec, okD, _ := x.resolve(profile.DecodeTime)
	if !okP || !okD {
		return cp
	}
	cp.at = len(*reqs)
	*reqs = append(*reqs, roleRead{profile.PrefillTime, pre, []float64{0}}, roleRead{profile.DecodeTime, dec, []float64{0}})
	x.Notice(Info, "compute is also split into its prefill and decode phases (mean seconds per request): "+
		pre.Metrics[0]+" and "+dec.Metrics[0])
	return cp
}

// index keeps the phases' reads by group.
func (cp *computePhases) index(read [][]stat, by []string) {
	if cp.at < 0 {
		return
	}
	cp.prefill, cp.decode = statIndex(read[cp.at], by), statIndex(read[cp.at+1], by)
}

// add adds one group's prefill and decode series and their shares of compute.
func (cp *computePhases) add(x *Exec, t []int64, l map[string]string, key string, compute derive.Series) error {
	if cp.at < 0 {
		return nil
	}
	for _, ph := range []struct {
		name  string
		value derive.Series
		ok    bool
	}{{"prefill", cp.prefill[key], cp.prefill != nil}, {"decode", cp.decode[key], cp.decode != nil}} {
		if !ph.ok || ph.value.Empty() {
			continue
		}
		x.Add(newSeries(ph.name, x.displayName(l, ph.name+" (compute)"), UnitSeconds, l, t, x.output(ph.value).V))
		share, err := derive.Ratio(ph.value, compute, 1)
		if err != nil {
			return err
		}
		s := newSeries(ph.name+"_compute_share", x.displayName(l, ph.name+" share of compute"), UnitPercentUnit, l, t, x.output(share).V)
		s.Min, s.Max = ptr(0), ptr(1)
		x.Add(s)
	}
	return nil
}
