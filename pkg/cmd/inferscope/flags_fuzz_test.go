package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gate"
)

// FuzzFlagValues: the parsers behind the commands' flag values (times, durations, ratios,
// per-profile label renames, rule lists) never panic, and refuse with a message.
func FuzzFlagValues(f *testing.F) {
	for _, seed := range []string{"0", "1700000000.5", "2026-11-23T12:00:00Z", "-1", "1e300", "NaN", "90s", "1h30m", "3 minutes",
		"10%", "0.05", "120%", "tgi.model=model_name", "vllm.version=", "x.model=a", "latency-p0,,gpu-mem-p1", "\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = gate.ParseTime(s)
		_, _ = engine.ParseDuration(s)
		var ratio float64
		_ = ratioFlag{&ratio}.Set(s)
		if err := (profileLabelsFlag{}).Set(s); err != nil && err.Error() == "" {
			t.Fatal("an empty message")
		}
		var ids []string
		_ = rulesFlag{&ids}.Set(s)
	})
}

// FuzzRulesListFlags: any command line of `rules list` (every catalog parameter is a flag)
// ends in an answer or a usage error, never a panic. `rules list` reads nothing and writes no
// file, so arbitrary flags are safe to try.
func FuzzRulesListFlags(f *testing.F) {
	for _, seed := range []string{"--jitter-ratio 7", "--latency-warn-for 3m --gpu-mem-warn 0.8", "--gpu-mem-warn 0.95", "--group mine",
		"--quiet", "--no-such-flag", "extra", "--latency-warn-ratio=-1", "--observation=maybe"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := append([]string{"rules", "list"}, strings.Fields(line)...)
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		if code != exitOK && code != exitUsage {
			t.Fatalf("%q: exit %d: %s", line, code, errOut.String())
		}
		if code == exitUsage && errOut.Len() == 0 {
			t.Fatalf("%q: a usage error without a message", line)
		}
	})
}
