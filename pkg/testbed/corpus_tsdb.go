package testbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"
)

// CorpusTSDBOptions is the history a server's corpus fleet is written in: the server's naming,
// CorpusHistoryDays of it and CorpusGPUDays of GPU series; Triton's fleet with dcgm-exporter's
// GPU names (Triton fleets usually run it), the others with the probe's.
func CorpusTSDBOptions(server string) TSDBOptions {
	o := TSDBOptions{Profile: server, GPUNaming: GPUNamingInferscope, Days: CorpusHistoryDays, GPUDays: CorpusGPUDays}
	if server == "triton" {
		o.GPUNaming = GPUNamingDCGM
	}
	return o
}

// CorpusBuild reports what building a corpus history cost.
type CorpusBuild struct {
	Cached  bool
	Seconds float64 // wall time of writing and importing (0 when cached)
}

// CorpusTSDB returns a private copy (dir = parent/tsdb) of the history of a server's corpus
// cases (CorpusScenario ending at end, CorpusTSDBOptions), one sample every step (0:
// DefaultHistoryStep; the brief's fleets scrape every 15 s), built once with promtool and cached
// like the default scenario's TSDBs under a key that hashes the cases and the step.
func CorpusTSDB(ctx context.Context, server string, cases []Case, end time.Time, step time.Duration, promtool, parent string) (string, *Scenario, CorpusBuild, error) {
	var b CorpusBuild
	if step == 0 {
		step = DefaultHistoryStep
	}
	if step < time.Second || step > DefaultHistoryStep {
		return "", nil, b, fmt.Errorf("history step %s: want 1s to %s", step, DefaultHistoryStep)
	}
	s, err := CorpusScenario(server, cases, end)
	if err != nil {
		return "", nil, b, err
	}
	o, err := CorpusTSDBOptions(server).normalize()
	if err != nil {
		return "", nil, b, err
	}
	key, err := tsdbKey(s, o, step)
	if err != nil {
		return "", nil, b, err
	}
	h := sha256.New()
	h.Write([]byte(key))
	for _, c := range s.ext.cases {
		fmt.Fprintf(h, "%+v\n", *c)
	}
	key = fmt.Sprintf("corpus-%s-%dd-%s", server, o.Days, hex.EncodeToString(h.Sum(nil))[:16])
	root, err := cacheRoot()
	if err != nil {
		return "", nil, b, err
	}
	final := filepath.Join(root, key)
	b.Cached = true
	if !validTSDB(final) {
		unlock, err := lockFile(ctx, filepath.Join(root, key+".lock"))
		if err != nil {
			return "", nil, b, err
		}
		defer unlock()
		if !validTSDB(final) {
			began := time.Now()
			if err := buildTSDB(ctx, s, o, step, promtool, root, final); err != nil {
				return "", nil, b, fmt.Errorf("build the corpus TSDB of %s: %w", server, err)
			}
			b.Cached, b.Seconds = false, time.Since(began).Seconds()
		}
	}
	dir := filepath.Join(parent, "tsdb")
	if err := linkTree(final, dir); err != nil {
		return "", nil, b, fmt.Errorf("copy the cached corpus TSDB: %w", err)
	}
	return dir, s, b, nil
}
