package testbed

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// generatorVersion changes whenever the history's content changes in a way the scenario's own
// fingerprint does not show (formulas, naming); it invalidates cached TSDBs.
const generatorVersion = "testbed-history-v2"

// CacheEnv overrides the directory where built TSDBs are cached across test processes.
const CacheEnv = "INFERSCOPE_TESTBED_CACHE"

// maxBlockDuration lets promtool put the whole history in one block range: with the default
// 2h it would re-parse the input once per 2 hours of history.
const maxBlockDuration = "1458h"

var tsdbBuilds struct {
	mu   sync.Mutex
	dirs map[string]string
}

// TSDB returns a private copy of the default scenario's history (DefaultHistoryDays days ending
// at DefaultEnd, custom naming, job="inference", one sample per DefaultHistoryStep) as a
// Prometheus data directory, ready for promtest.Start. The blocks are built once per cache key
// (promtool is required: a skip, or a failure when CI=true) and kept under the user cache dir
// across test processes; the copy is hard-linked into t.TempDir().
func TSDB(t testing.TB) (dir string, s *Scenario) {
	t.Helper()
	promtool := promtest.RequireBinary(t, "promtool")
	s = Default(DefaultEnd)
	cached, err := cachedTSDB(t.Context(), s, promtool)
	if err != nil {
		t.Fatalf("build the test bed TSDB: %v", err)
	}
	dir = filepath.Join(t.TempDir(), "tsdb")
	if err := linkTree(cached, dir); err != nil {
		t.Fatalf("copy the cached TSDB: %v", err)
	}
	return dir, s
}

// WarmTSDBCache builds the cached TSDB that TSDB uses, when missing, and returns its directory.
// A CI can call it (inferscope-loadgen --warm-test-cache) before running tests under -race,
// where generating the history in-process is several times slower.
func WarmTSDBCache(ctx context.Context, promtool string) (string, error) {
	return cachedTSDB(ctx, Default(DefaultEnd), promtool)
}

// cachedTSDB returns the directory of the cached blocks, building them when missing.
func cachedTSDB(ctx context.Context, s *Scenario, promtool string) (string, error) {
	key := tsdbKey(s, DefaultHistoryDays, DefaultHistoryStep)
	tsdbBuilds.mu.Lock()
	defer tsdbBuilds.mu.Unlock()
	if d, ok := tsdbBuilds.dirs[key]; ok {
		return d, nil
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
			if err := buildTSDB(ctx, s, promtool, root, final); err != nil {
				return "", err
			}
		}
	}
	if tsdbBuilds.dirs == nil {
		tsdbBuilds.dirs = map[string]string{}
	}
	tsdbBuilds.dirs[key] = final
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

// tsdbKey fingerprints everything the history depends on.
func tsdbKey(s *Scenario, days int, step time.Duration) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%s|%d|%s|custom|inference\n", generatorVersion, s.name, s.end.Format(time.RFC3339), days, step)
	for _, in := range s.instances {
		fmt.Fprintf(h, "%+v\n", in)
	}
	for _, m := range s.models {
		fmt.Fprintf(h, "%+v\n", *m)
	}
	for _, inc := range s.incidents {
		fmt.Fprintf(h, "%+v\n", inc)
	}
	return "default-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// validTSDB reports whether dir holds at least one complete block.
func validTSDB(dir string) bool {
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	return len(metas) > 0
}

// BuildHistoryTSDB writes the targets' history (opt.From..opt.To, see expo.HistoryOptions) and
// imports it with promtool into dir, which is created and must not exist. The span is cut into
// parts written and imported concurrently, which is what makes 8 days fast on 2 cores; the
// OpenMetrics files are removed afterwards.
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

	parts := max(2, min(runtime.NumCPU(), 4))
	first := opt.From.Truncate(opt.Step)
	if first.Before(opt.From) {
		first = first.Add(opt.Step)
	}
	n := int(opt.To.Sub(first)/opt.Step) + 1 // samples per series
	parts = min(parts, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := 0; i < parts; i++ {
		part := opt
		part.Progress = nil
		part.From = first.Add(time.Duration(i*n/parts) * opt.Step)
		part.To = first.Add(time.Duration((i+1)*n/parts-1) * opt.Step)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := importPart(ctx, targets, promtool, filepath.Join(work, fmt.Sprintf("part%d.om", i)), blocks, part); err != nil {
				errs[i] = err
				cancel()
			}
		}(i)
	}
	wg.Wait()
	// Report the part that failed, not the parts cancelled because of it.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return os.Rename(blocks, dir)
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

func buildTSDB(ctx context.Context, s *Scenario, promtool, root, final string) error {
	tmp, err := os.MkdirTemp(root, filepath.Base(final)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, "tsdb")
	p, err := expo.Lookup("custom")
	if err != nil {
		return err
	}
	opt := expo.HistoryOptions{From: s.Start(), To: s.end, Step: DefaultHistoryStep, Job: "inference"}
	if err := BuildHistoryTSDB(ctx, p.Targets(s.Source()), promtool, built, opt); err != nil {
		return err
	}
	_ = os.RemoveAll(final) // an invalid leftover
	return os.Rename(built, final)
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
