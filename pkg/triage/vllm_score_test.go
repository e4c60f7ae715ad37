package triage

import (
	"strings"
	"testing"
)

// vllmLike makes the readings of a vLLM instance: GPU memory pre-allocated at 93 %, the KV cache
// at 40 %, compute split 30/70 into prefill and decode, no deferred waiting requests.
func vllmLike(s *Subject, in *Instance) {
	in.GPUMem, in.GPUMemPeak = Pair{0.93, 0.93}, 0.93
	in.KVCache = Pair{0.4, 0.4}
	in.WaitingDeferred = Pair{0, 0}
	s.Prefill, s.Decode = Pair{0.0037, 0.0037}, Pair{0.0087, 0.0087}
}

// TestScoreVLLMReadings: on a server that reports its KV cache, GPU memory used (pre-allocated)
// is neither a symptom nor a cause; the KV cache is the memory-pressure signal; the compute
// cause names the phase that grew, and the queue cause says whether the backlog is load or
// blocked requests.
func TestScoreVLLMReadings(t *testing.T) {
	th := DefaultThresholds()
	cases := []struct {
		name     string
		mutate   func(s *Subject, in *Instance)
		verdict  Verdict
		want     string
		contains []string
	}{
		{"pre-allocated memory is healthy", nil, Healthy, "", nil},
		// The KV cache full without preemptions: a pre-allocated cache fills with the requests in
		// flight, which a slower compute keeps longer; it does not explain the rise, so the
		// compute segment's own diagnosis leads (the full cache stays a candidate).
		{"decode grows with the KV cache full, nothing preempted", func(s *Subject, in *Instance) {
			s.Compute.Now, s.Prefill.Now, s.Decode.Now = 0.055, 0.0037, 0.0513
			in.KVCache.Now = 0.97
			s.P95.Now, s.BaselineRatio = 0.3, 12
		}, Diagnosed, CauseCompute, []string{"decode grew", "prefill stays"}},
		// Compute rising with memory calm is the compute segment's diagnosis, "compute" (as for
		// every server); it names the phase.
		{"prefill grows", func(s *Subject, in *Instance) {
			s.Compute.Now, s.Prefill.Now, s.Decode.Now = 0.045, 0.0363, 0.0087
			s.P95.Now, s.BaselineRatio = 0.2, 8
		}, Diagnosed, CauseCompute, []string{"prefill grew", "decode stays", "the cause is not among the signals measured here"}},
		// Both phases slower by the same ratio: not "decode grew while prefill stays", although
		// decode, the longer phase, holds most of the rise.
		{"both phases grow alike", func(s *Subject, in *Instance) {
			s.Compute.Now, s.Prefill.Now, s.Decode.Now = 3*(s.Prefill.Before+s.Decode.Before), 3*s.Prefill.Before, 3*s.Decode.Before
			s.P95.Now, s.BaselineRatio = 0.3, 12
		}, Diagnosed, CauseCompute, []string{"prefill (×3.0) and decode (×3.0) grew alike"}},
		// The KV cache full with requests preempted: KV-cache exhaustion.
		{"KV cache exhausted with preemptions", func(s *Subject, in *Instance) {
			s.Compute.Now, s.Prefill.Now, s.Decode.Now = 0.055, 0.0037, 0.0513
			in.KVCache.Now, in.Preemption = 0.97, Pair{0, 0.02}
			s.P95.Now, s.BaselineRatio = 0.3, 12
		}, Diagnosed, CauseKVCache, []string{"the KV cache of node-a:8000 is near full (97.0 %", "2.0 % of the requests are preempted", "decode grew"}},
		{"load backlog", func(s *Subject, in *Instance) {
			s.Queue.Now, s.QPS.Now, in.QPS.Now, in.QueueDepth.Now = 0.032, 120, 120, 5
			in.Waiting, in.WaitingDeferred = Pair{0.5, 5}, Pair{0.05, 0.5}
			s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.09, 3.6, 6.7
		}, Diagnosed, CauseQueue, []string{"the backlog is load: 90 %"}},
		{"blocked backlog", func(s *Subject, in *Instance) {
			s.Queue.Now, in.QueueDepth.Now = 0.032, 5
			in.Waiting, in.WaitingDeferred = Pair{0.5, 5}, Pair{0.05, 4}
			s.P95.Now, s.BaselineRatio, s.Jitter.Now = 0.09, 3.6, 6.7
		}, Diagnosed, CauseQueue, []string{"80 % of the waiting requests are deferred (blocked"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rd := readings("", func(s *Subject, in *Instance) {
				vllmLike(s, in)
				if c.mutate != nil {
					c.mutate(s, in)
				}
			})
			vllmLike(&rd.Subjects[1], &rd.Instances[1])
			r := Score(rd, th)
			t.Logf("%s: %s; %s", r.Verdict, causeList(&r), r.Summary)
			if r.Verdict != c.verdict {
				t.Fatalf("verdict %s, want %s: %s", r.Verdict, c.verdict, r.Summary)
			}
			if strings.Contains(r.Summary, "GPU memory 93") {
				t.Errorf("pre-allocated GPU memory reported as a symptom: %s", r.Summary)
			}
			if c.want == "" {
				return
			}
			if len(r.Causes) == 0 || r.Causes[0].ID != c.want {
				t.Fatalf("first cause: want %s, got %s", c.want, causeList(&r))
			}
			for _, want := range c.contains {
				if !strings.Contains(r.Causes[0].Summary, want) {
					t.Errorf("summary %q lacks %q", r.Causes[0].Summary, want)
				}
			}
			for _, x := range r.Causes {
				if x.ID == CauseComputeMemory && x.Score >= th.DiagnosedScore && strings.Contains(c.name, "nothing preempted") {
					t.Errorf("a KV cache full without preemptions diagnosed as memory pressure: %s", x.Summary)
				}
			}
		})
	}
}

// TestScoreKVCacheExhaustedAtTheWindowsEnd: asked a minute after the KV cache filled (its P0
// fires then), the window's means barely move, but its highest points show the cache past its
// critical line with requests preempted: KV-cache exhaustion, not a healthy window; the same
// peak without preemptions is a symptom, not a diagnosis.
func TestScoreKVCacheExhaustedAtTheWindowsEnd(t *testing.T) {
	th := DefaultThresholds()
	rd := readings("", func(s *Subject, in *Instance) {
		vllmLike(s, in)
		in.KVCache, in.KVCachePeak = Pair{0.5, 0.55}, 0.97
		in.Preemption, in.PreemptionPeak = Pair{0, 0.002}, 0.03
	})
	vllmLike(&rd.Subjects[1], &rd.Instances[1])
	r := Score(rd, th)
	t.Logf("%s: %s; %s", r.Verdict, causeList(&r), r.Summary)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseKVCache || !strings.Contains(r.Causes[0].Summary, "reached 97.0 %") {
		t.Fatalf("KV cache exhausted at the window's end: %s %s", r.Verdict, causeList(&r))
	}
	rd.Instances[0].Preemption, rd.Instances[0].PreemptionPeak = Pair{0, 0}, 0
	r = Score(rd, th)
	if r.Verdict == Healthy || (r.Verdict == Diagnosed && r.Causes[0].ID == CauseKVCache) {
		t.Errorf("a KV cache peak without preemptions: %s %s (%s)", r.Verdict, causeList(&r), r.Summary)
	}
	if !strings.Contains(r.Summary, "KV cache peaked at 97 %") {
		t.Errorf("the peak is not a symptom: %s", r.Summary)
	}
}

// TestScoreKVCacheExhaustedUnderComputesLine: the KV cache full through the window (98 %, 20 % in
// the hour before) with 8 % of the requests preempted is the exhaustion itself, even where
// compute rose 1.4× (under its own 1.5× line, leading the change): kv_cache, not "compute, the
// cause not among the signals measured".
func TestScoreKVCacheExhaustedUnderComputesLine(t *testing.T) {
	rd := readings("", func(s *Subject, in *Instance) {
		vllmLike(s, in)
		s.Compute.Now, s.P95.Now, s.BaselineRatio = 0.0174, 0.04, 1.6
		in.KVCache, in.KVCachePeak = Pair{0.2, 0.98}, 0.98
		in.Preemption, in.PreemptionPeak = Pair{0.001, 0.079}, 0.08
	})
	vllmLike(&rd.Subjects[1], &rd.Instances[1])
	r := Score(rd, DefaultThresholds())
	t.Logf("%s: %s lead %q", r.Verdict, causeList(&r), r.Lead)
	if r.Verdict != Diagnosed || r.Causes[0].ID != CauseKVCache || hasCause(&r, CauseCompute) {
		t.Errorf("want kv_cache first and no compute: %s %s", r.Verdict, causeList(&r))
	}
}
