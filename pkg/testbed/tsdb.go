package testbed

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"golang.org/x/sync/errgroup"
)

// generatorVersion changes whenever the history's content changes in a way the scenario's own
// fingerprint does not show (formulas, naming); it invalidates cached TSDBs.
const generatorVersion = "testbed-history-v3"

// CacheEnv overrides the directory where built TSDBs are cached across test processes.
const CacheEnv = "INFERSCOPE_TESTBED_CACHE"

// maxBlockDuration lets promtool put the whole history in one block range: with the default
// 2h it would re-parse the input once per 2 hours of history.
const maxBlockDuration = "1458h"

// DefaultGPUHistoryDays is how many days before the end a test TSDB holds GPU series: the GPU
// incidents all sit in the last day, and rendering GPU history through the probe's exporter is
// the slowest part of the build (see doc.go).
const DefaultGPUHistoryDays = 2

// TSDBOptions selects a test TSDB variant. The zero value is TSDB's: custom naming, the probe's
// GPU naming, DefaultHistoryDays of history.
type TSDBOptions struct {
	// Profile is the naming of the inference series: custom (default), vllm, triton,
	// torchserve, tgi or sglang (expo.ProfileNames); or "fleet", the six together in one Prometheus,
	// each serving its own copy of the models on its own port (expo.FleetModel,
	// expo.FleetInstance), or "fleet-<server>", that server's part of the fleet alone; or
	// "<server>+ingress-nginx" (expo.BehindIngressNginx), the server behind an ingress-nginx
	// controller whose upstream histogram alone shows the network segment; or "<server>+envoy"
	// and "<server>+istio" (expo.Behind), the same behind Envoy Gateway or Istio's ingress gateway.
	Profile string
	// GPUNaming is the naming of the GPU series: inferscope (default, the probe's); dcgm
	// (today's dcgm-exporter), dcgm-3, dcgm-4.5 or dcgm-4.9 (those dcgm-exporter versions,
	// through the probe's dcgm namings), each optionally with the variants +xid-count and
	// +defaults (see GPUNamingDCGM); or none.
	GPUNaming string
	// Days of history ending at DefaultEnd; 0 = DefaultTSDBDays(Profile).
	Days int
	// GPUDays of GPU history ending at DefaultEnd; 0 = DefaultGPUHistoryDays (capped at Days).
	GPUDays int
}

// DefaultTSDBDays is the history a test TSDB of a naming holds unless TSDBOptions.Days says
// otherwise: DefaultHistoryDays (8, what the baseline needs: the previous 7 days at the same
// time of day) for every naming but tgi, whose 35 duration and 100 input-length buckets per
// histogram make it the slowest to build (see doc.go); its 2 days cover every incident (all in
// the last day) with the rate windows before them. Set Days: 8 to test a TGI baseline. The
// fleet namings, which include TGI, hold 2 days too, and so do the namings behind a gateway
// (their tests read the last day's incidents) and the variants (expo.VariantNames: Triton with
// summaries, whose quantiles are computed per sample, or with the vLLM backend).
func DefaultTSDBDays(profile string) int {
	if profile == "tgi" || profile == expo.FleetName || strings.HasPrefix(profile, expo.FleetName+"-") ||
		behindGateway(profile) || slices.Contains(expo.VariantNames(), profile) {
		return 2
	}
	return DefaultHistoryDays
}

// behindGateway reports whether a naming is a server behind one of the test bed's gateways.
func behindGateway(profile string) bool {
	for _, g := range expo.GatewayNames {
		if strings.HasSuffix(profile, "+"+g) {
			return true
		}
	}
	return false
}

// normalize fills the defaults and checks the options.
func (o TSDBOptions) normalize() (TSDBOptions, error) {
	if o.Profile == "" {
		o.Profile = "custom"
	}
	if _, err := expo.Lookup(o.Profile); err != nil {
		return o, err
	}
	g, err := ParseGPUNaming(o.GPUNaming)
	if err != nil {
		return o, err
	}
	o.GPUNaming = g
	if o.Days == 0 {
		o.Days = DefaultTSDBDays(o.Profile)
	}
	if o.GPUDays == 0 {
		o.GPUDays = DefaultGPUHistoryDays
	}
	if o.Days < 1 || o.Days > 60 || o.GPUDays < 1 {
		return o, fmt.Errorf("history of %d days (GPU %d days): want 1-60 days", o.Days, o.GPUDays)
	}
	o.GPUDays = min(o.GPUDays, o.Days)
	if o.GPUNaming == GPUNamingNone {
		o.GPUDays = 0
	}
	return o, nil
}

// WarmVariants are the TSDB variants this module's tests use; `inferscope-loadgen
// --warm-test-cache` builds them all: every naming with the probe's GPU naming, plus Triton with
// dcgm-exporter's (Triton fleets usually run dcgm-exporter), and vLLM behind ingress-nginx, Envoy
// and Istio without GPU series (the network segment's tests).
var WarmVariants = []TSDBOptions{
	{},
	{Profile: "vllm"},
	{Profile: "triton"},
	{Profile: "triton", GPUNaming: GPUNamingDCGM},
	{Profile: "torchserve"},
	{Profile: "tgi"},
	{Profile: "sglang"},
	{Profile: expo.BehindIngressNginx("vllm"), GPUNaming: GPUNamingNone},
	{Profile: expo.Behind("vllm", expo.Envoy), GPUNaming: GPUNamingNone},
	{Profile: expo.Behind("vllm", expo.Istio), GPUNaming: GPUNamingNone},
}

// tsdbBuilds remembers, per normalised variant, the cached directory this process uses.
var tsdbBuilds struct {
	mu   sync.Mutex
	dirs map[TSDBOptions]string
}

// PrivateTSDB returns a private copy of the variant's history as a Prometheus data directory
// under parent (dir = parent/tsdb), with the scenario it holds. The blocks are built once per
// variant with promtool and kept under the user cache dir across processes; the copy is
// hard-linked. Tests reach it through tbtest.TSDBFor.
func PrivateTSDB(ctx context.Context, o TSDBOptions, promtool, parent string) (dir string, s *Scenario, err error) {
	o, err = o.normalize()
	if err != nil {
		return "", nil, err
	}
	s = Default(DefaultEnd)
	cached, err := cachedTSDB(ctx, s, o, promtool)
	if err != nil {
		return "", nil, fmt.Errorf("build the test bed TSDB (%+v): %w", o, err)
	}
	dir = filepath.Join(parent, "tsdb")
	if err := linkTree(cached, dir); err != nil {
		return "", nil, fmt.Errorf("copy the cached TSDB: %w", err)
	}
	return dir, s, nil
}

// WarmTSDBCache builds the cached TSDBs of the given variants (WarmVariants when none), one
// after the other, when missing, and returns their directories. A CI can call it
// (inferscope-loadgen --warm-test-cache) before running tests under -race, where generating the
// history in-process is several times slower.
func WarmTSDBCache(ctx context.Context, promtool string, variants ...TSDBOptions) ([]string, error) {
	if len(variants) == 0 {
		variants = WarmVariants
	}
	var dirs []string
	for _, v := range variants {
		o, err := v.normalize()
		if err != nil {
			return dirs, err
		}
		d, err := cachedTSDB(ctx, Default(DefaultEnd), o, promtool)
		if err != nil {
			return dirs, fmt.Errorf("%+v: %w", o, err)
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

// cachedTSDB returns the directory of the cached blocks, building them when missing.
func cachedTSDB(ctx context.Context, s *Scenario, o TSDBOptions, promtool string) (string, error) {
	tsdbBuilds.mu.Lock()
	defer tsdbBuilds.mu.Unlock()
	if d, ok := tsdbBuilds.dirs[o]; ok { // the scenario is always Default(DefaultEnd)
		return d, nil
	}
	key, err := tsdbKey(s, o, DefaultHistoryStep)
	if err != nil {
		return "", err
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	final := filepath.Join(root, key)
	if !validTSDB(final) {
		unlock, err := lockFile(ctx, filepath.Join(root, key+".lock"))
		if err != nil {
			return "", err
		}
		defer unlock()
		if !validTSDB(final) { // another process may have built it while we waited
			if err := buildTSDB(ctx, s, o, DefaultHistoryStep, promtool, root, final); err != nil {
				return "", err
			}
		}
	}
	if tsdbBuilds.dirs == nil {
		tsdbBuilds.dirs = map[TSDBOptions]string{}
	}
	tsdbBuilds.dirs[o] = final
	return final, nil
}

func cacheRoot() (string, error) {
	root := os.Getenv(CacheEnv)
	if root == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		root = filepath.Join(base, "inferscope-testbed")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("create cache dir: %w", err)
	}
	return root, nil
}

// tsdbKey fingerprints everything the history depends on: the scenario, the variant, and what
// the variant's targets expose at a few telling instants (so a changed naming or GPU rendering
// invalidates the cache without anyone remembering to bump generatorVersion).
func tsdbKey(s *Scenario, o TSDBOptions, step time.Duration) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%s|%s|%+v\n", generatorVersion, s.name, s.end.Format(time.RFC3339), step, o)
	for _, in := range s.instances {
		fmt.Fprintf(h, "%+v\n", in)
	}
	for _, m := range s.models {
		fmt.Fprintf(h, "%+v\n", *m)
	}
	for _, inc := range s.incidents {
		fmt.Fprintf(h, "%+v\n", inc)
	}
	if err := exposureFingerprint(h, s, o); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-%s-%s-%dd-", s.name, o.Profile, o.GPUNaming, o.Days) + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// exposureFingerprint writes the variant's exposition at the end of the history and in the
// middle of every incident.
func exposureFingerprint(w io.Writer, s *Scenario, o TSDBOptions) error {
	gpuFrom := s.end.AddDate(0, 0, -max(o.GPUDays, 1))
	targets, err := s.HistoryTargets(o.Profile, o.GPUNaming, s.end.AddDate(0, 0, -o.Days), gpuFrom, s.end)
	if err != nil {
		return err
	}
	at := []time.Time{s.end}
	for _, in := range s.incidents {
		if m := in.Start.Add(in.End.Sub(in.Start) / 2).Truncate(time.Minute); m.Before(s.end) && !m.Before(gpuFrom) {
			at = append(at, m)
		}
	}
	for _, t := range at {
		for _, tg := range targets {
			if err := expo.WriteText(w, tg.Families, t, append([]expo.Label{{Name: "instance", Value: tg.Instance}}, tg.Labels...)); err != nil {
				return err
			}
		}
	}
	return nil
}

// validTSDB reports whether dir holds at least one complete block.
func validTSDB(dir string) bool {
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	return len(metas) > 0
}

// BuildHistoryTSDB writes the targets' history (opt.From..opt.To, see expo.HistoryOptions) and
// imports it with promtool into dir, which is created and must not exist. The span is cut into
// parts written and imported concurrently, which is what makes 8 days fast on 2 cores; each
// part's OpenMetrics file is removed once imported (historyParts, maxPartSamples).
func BuildHistoryTSDB(ctx context.Context, targets []expo.Target, promtool, dir string, opt expo.HistoryOptions) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s already exists", dir)
	}
	if opt.Step < time.Second || !opt.To.After(opt.From) {
		return fmt.Errorf("bad history span %s..%s step %s", opt.From.Format(time.RFC3339), opt.To.Format(time.RFC3339), opt.Step)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(parent, filepath.Base(dir)+".work-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	blocks := filepath.Join(work, "blocks")
	if err := os.Mkdir(blocks, 0o755); err != nil {
		return err
	}

	first := opt.From.Truncate(opt.Step)
	if first.Before(opt.From) {
		first = first.Add(opt.Step)
	}
	n := int(opt.To.Sub(first)/opt.Step) + 1 // samples per series
	workers := max(2, min(runtime.NumCPU(), 4))
	parts := historyParts(n, workers, maxPartSamples)
	// The first error is the part that failed; the parts cancelled because of it come after.
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, p := range parts {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			part := opt
			part.Progress = nil
			part.From = first.Add(time.Duration(p[0]) * opt.Step)
			part.To = first.Add(time.Duration(p[1]) * opt.Step)
			return importPart(ctx, targets, promtool, filepath.Join(work, fmt.Sprintf("part%d.om", i)), blocks, part)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return os.Rename(blocks, dir)
}

// maxPartSamples bounds a part's samples per series. A part's OpenMetrics text is written whole
// before promtool reads it, tens of bytes a sample: a fleet's nine days at 15 s in two parts
// were tens of GB each. Parts of at most a day at 15 s (four at 1 m), at most one per worker on
// disk at once, keep the disk a build needs to a few parts' text, whatever the span.
var maxPartSamples = 5760

// historyParts cuts n samples per series into [first, last] index ranges: at least workers
// parts (each writes while promtool reads another), none over maxPart samples, sizes within one.
func historyParts(n, workers, maxPart int) [][2]int {
	if n <= 0 {
		return nil
	}
	parts := min(n, max(workers, (n+maxPart-1)/maxPart))
	out := make([][2]int, parts)
	for i := range out {
		out[i] = [2]int{i * n / parts, (i+1)*n/parts - 1}
	}
	return out
}

func importPart(ctx context.Context, targets []expo.Target, promtool, file, blocks string, opt expo.HistoryOptions) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = expo.WriteHistory(ctx, bw, targets, opt)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write history %s..%s: %w", opt.From.Format(time.RFC3339), opt.To.Format(time.RFC3339), err)
	}
	defer os.Remove(file)
	cmd := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics",
		"--max-block-duration="+maxBlockDuration, "--quiet", file, blocks)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("promtool tsdb create-blocks-from openmetrics: %w: %s", err, lastBytes(out.Bytes(), 2000))
	}
	return nil
}

func buildTSDB(ctx context.Context, s *Scenario, o TSDBOptions, step time.Duration, promtool, root, final string) error {
	tmp, err := os.MkdirTemp(root, filepath.Base(final)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, "tsdb")
	opt := expo.HistoryOptions{From: s.End().AddDate(0, 0, -o.Days), To: s.End(), Step: step, Job: "inference"}
	targets, err := s.HistoryTargets(o.Profile, o.GPUNaming, opt.From, s.End().AddDate(0, 0, -o.GPUDays), opt.To)
	if err != nil {
		return err
	}
	if err := BuildHistoryTSDB(ctx, targets, promtool, built, opt); err != nil {
		return err
	}
	_ = os.RemoveAll(final) // an invalid leftover
	return os.Rename(built, final)
}

// HistoryTargets are the scrape targets whose history the test bed writes: the inference
// instances in a profile's naming and the hosts' node_exporter series (job expo.NodeJob) from
// from on, and the probes' GPU series in a GPU naming
// (GPUNamingNone: none) from gpuFrom on, both up to to.
func (s *Scenario) HistoryTargets(profile, gpuNaming string, from, gpuFrom, to time.Time) ([]expo.Target, error) {
	p, err := expo.Lookup(profile)
	if err != nil {
		return nil, err
	}
	targets := append(p.Targets(s.Source()), expo.NodeTargets(s.HostSource())...)
	if gpuNaming == GPUNamingNone {
		return targets, nil
	}
	if gpuFrom.Before(from) {
		gpuFrom = from
	}
	gpu, err := s.GPUTargets(gpuNaming, gpuFrom, to)
	if err != nil {
		return nil, err
	}
	return append(targets, gpu...), nil
}

// linkTree recreates src under dst with hard links (copies across file systems).
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if err := os.Link(path, target); err == nil {
			return nil
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
