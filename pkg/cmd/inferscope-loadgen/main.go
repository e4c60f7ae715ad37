// Command inferscope-loadgen plays a fleet of inference servers whose truth is known: it serves
// their live /metrics and writes the same scenario's history as OpenMetrics for
// `promtool tsdb create-blocks-from openmetrics`.
//
//	inferscope-loadgen --listen=127.0.0.1:9400                      # serve live metrics
//	inferscope-loadgen --history-out=history.om --end=2026-11-23T12:00:00Z
//	inferscope-loadgen --history-out=history.om --serve             # history up to now, then serve
//	inferscope-loadgen --tsdb-out=data --end=2026-11-23T12:00:00Z    # history imported with promtool
//	inferscope-loadgen --warm-test-cache                            # build the TSDBs the tests use
//	inferscope-loadgen --profile=triton --gpu-naming=dcgm --tsdb-out=data
//
// --profile names the inference series as vLLM, Triton, TorchServe, TGI or SGLang serve them
// (default: the brief's custom service), live and in the history alike; vllm+ingress-nginx and
// triton+ingress-nginx put an ingress-nginx controller in front (instance
// ingress-nginx-controller:10254, job ingress-nginx), whose upstream histogram alone carries the
// network segment (inferscope --gateway ingress-nginx --gateway-model-regex '(.+)-svc');
// vllm+envoy and triton+envoy put Envoy Gateway's proxy in front (instance envoy-gateway:19001,
// job envoy; --gateway envoy --gateway-model-regex 'httproute/[^/]+/(.+)/rule/[0-9]+'), vllm+istio
// and triton+istio Istio's ingress gateway and a sidecar per server (--gateway istio
// --gateway-model-regex '(.+)-predictor'). The history also holds every node's GPU series as a
// Prometheus scraping inferscope-probe (job inferscope-probe, instance <node>:9835, node label)
// stores them, rendered by the probe's own exporter from the same
// scenario, in the probe's naming or a dcgm-exporter version's (--gpu-naming=dcgm, dcgm-3,
// dcgm-4.5, dcgm-4.9, with variants +xid-count and +defaults; none leaves them out). Live
// GPU metrics come from the probe itself (inferscope-probe --mock=dgxa100 --naming=… --mock.instance=…
// --mock.clock=http://<the loadgen's --listen>), not from the loadgen: the loadgen serves the
// scenario's GPU truth at /mock/v1/gpus and the mock probe follows it, so the probe does not
// link the test bed.
//
// Live layout: GET /metrics?instance=node-a:8000 serves one instance without an instance label,
// so each instance is its own Prometheus target and Prometheus sets instance and job exactly as
// the history has them (GET / prints this for the actual address):
//
//	scrape_configs:
//	  - job_name: inference
//	    scrape_interval: 15s
//	    static_configs:
//	      - targets: [node-a:8000, node-b:8000, node-c:8000]
//	    relabel_configs:
//	      - source_labels: [__address__]
//	        target_label: __param_instance
//	      - source_labels: [__address__]
//	        target_label: instance
//	      - target_label: __address__
//	        replacement: 127.0.0.1:9400
//
// The hosts' node_exporter series (CPU by mode, memory, disk IO time, network bytes; the
// scenario's host model) are served per host on GET /metrics/node?node=node-a and written into
// the history as job="node", instance="<node>:9100"; scrape them as node_exporter targets:
//
//	scrape_configs:
//	  - job_name: node
//	    metrics_path: /metrics/node
//	    static_configs:
//	      - targets: [node-a:9100, node-b:9100, node-c:9100]
//	    relabel_configs:
//	      - source_labels: [__address__]
//	        regex: '(.+):\d+'
//	        target_label: __param_node
//	      - source_labels: [__address__]
//	        target_label: instance
//	      - target_label: __address__
//	        replacement: 127.0.0.1:9400
//
// GET /metrics serves every instance at once, each series labelled instance="…": one target with
// honor_labels: true (its up series is then the loadgen's, not each instance's).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/mockclock"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	var ue usageError
	switch {
	case err == nil:
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, "inferscope-loadgen:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "inferscope-loadgen:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line.
type usageError struct{ error }

type config struct {
	listen      string
	historyOut  string
	tsdbOut     string
	warmCache   bool
	incidents   bool
	serve       bool
	historyDays int
	step        time.Duration
	end         time.Time
	profile     expo.Profile
	job         string
	gpuNaming   string
	gpuDays     int
}

func parseFlags(args []string, stderr io.Writer, now time.Time) (config, error) {
	fs := flag.NewFlagSet("inferscope-loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var endFlag, profileFlag, scenarioFlag string
	fs.StringVar(&c.listen, "listen", "127.0.0.1:9400", "address to serve live /metrics on")
	fs.StringVar(&c.historyOut, "history-out", "", "write the scenario's history as OpenMetrics to this file (\"-\" = stdout) and exit, unless --serve")
	fs.StringVar(&c.tsdbOut, "tsdb-out", "", "write the history as TSDB blocks into this new directory (runs promtool from PATH) and exit, unless --serve")
	fs.BoolVar(&c.warmCache, "warm-test-cache", false, "build the cached TSDB used by the tests (testbed.TSDB) and exit")
	fs.BoolVar(&c.incidents, "incidents", false, "list the scenario's scripted incidents (ending at --end) with the inferscope triage question for each, and exit")
	fs.BoolVar(&c.serve, "serve", false, "with --history-out or --tsdb-out: serve live metrics after writing the history")
	fs.IntVar(&c.historyDays, "history-days", testbed.DefaultHistoryDays, "days of history to write (1-60)")
	fs.DurationVar(&c.step, "history-step", testbed.DefaultHistoryStep, "spacing of history samples (≥ 1s)")
	fs.StringVar(&endFlag, "end", "now", "end of the history and the scenario's clock anchor: now or an RFC 3339 time")
	fs.StringVar(&profileFlag, "profile", "custom", "metric naming profile: "+fmt.Sprint(expo.ProfileNames())+", a variant "+fmt.Sprint(expo.VariantNames())+", or a mixed fleet of them all in one: "+fmt.Sprint(expo.FleetNames())+", or a server behind a gateway: vllm+ingress-nginx, triton+ingress-nginx, vllm+envoy, triton+envoy, vllm+istio, triton+istio")
	fs.StringVar(&scenarioFlag, "scenario", "default", "scenario: default")
	fs.StringVar(&c.job, "job", "inference", "job label written into the history")
	fs.StringVar(&c.gpuNaming, "gpu-naming", testbed.GPUNamingInferscope, "GPU series in the history: inferscope (the probe's naming); dcgm (today's dcgm-exporter, 4.8.3 on), dcgm-3, dcgm-4.5 or dcgm-4.9 (those versions of dcgm-exporter), each optionally +xid-count (with DCGM_EXP_XID_ERRORS_COUNT) and +defaults (only the default counters file's fields); or none")
	fs.IntVar(&c.gpuDays, "gpu-history-days", 0, "days of GPU history at the end of the history (0 = all of it); GPU history is the slow part")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usageError{err}
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	if scenarioFlag != "default" {
		return c, usageError{fmt.Errorf("unknown scenario %q (known: default)", scenarioFlag)}
	}
	p, err := expo.Lookup(profileFlag)
	if err != nil {
		return c, usageError{err}
	}
	c.profile = p
	if endFlag == "now" {
		c.end = now
	} else {
		c.end, err = time.Parse(time.RFC3339, endFlag)
		if err != nil {
			return c, usageError{fmt.Errorf("--end must be \"now\" or an RFC 3339 time like 2026-11-23T12:00:00Z: %w", err)}
		}
	}
	if c.historyDays < 1 || c.historyDays > 60 {
		return c, usageError{fmt.Errorf("--history-days must be between 1 and 60, got %d", c.historyDays)}
	}
	if c.step < time.Second || c.step > time.Hour {
		return c, usageError{fmt.Errorf("--history-step must be between 1s and 1h, got %s", c.step)}
	}
	if c.historyOut != "" && c.tsdbOut != "" {
		return c, usageError{errors.New("choose one of --history-out and --tsdb-out")}
	}
	if c.warmCache && (c.historyOut != "" || c.tsdbOut != "" || c.serve || c.incidents) {
		return c, usageError{errors.New("--warm-test-cache stands alone")}
	}
	if c.incidents && (c.historyOut != "" || c.tsdbOut != "" || c.serve) {
		return c, usageError{errors.New("--incidents only lists them: it takes --end, nothing that writes or serves")}
	}
	if c.serve && c.historyOut == "" && c.tsdbOut == "" {
		return c, usageError{errors.New("--serve only makes sense with --history-out or --tsdb-out (serving is the default without them)")}
	}
	if c.serve && c.historyOut == "-" {
		return c, usageError{errors.New("--serve cannot be combined with --history-out=- (stdout)")}
	}
	if c.job == "" {
		return c, usageError{errors.New("--job must not be empty")}
	}
	if c.gpuNaming, err = testbed.ParseGPUNaming(c.gpuNaming); err != nil {
		return c, usageError{fmt.Errorf("--gpu-naming: %w", err)}
	}
	if c.gpuDays < 0 || c.gpuDays > c.historyDays {
		return c, usageError{fmt.Errorf("--gpu-history-days must be between 0 and --history-days (%d), got %d", c.historyDays, c.gpuDays)}
	}
	return c, nil
}

// run is the whole command; onListen, when set, learns the bound address (tests use port 0).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, onListen func(addr string)) error {
	c, err := parseFlags(args, stderr, time.Now())
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.warmCache {
		return warmCache(ctx, stderr)
	}
	s := testbed.Default(c.end)
	if c.incidents {
		return printIncidents(stdout, s, c.end)
	}
	switch {
	case c.historyOut != "":
		if err := writeHistory(ctx, s, c, stdout, stderr); err != nil {
			return err
		}
	case c.tsdbOut != "":
		if err := writeTSDB(ctx, s, c, stderr); err != nil {
			return err
		}
	default:
		return serve(ctx, s, c, stderr, onListen)
	}
	if !c.serve {
		return nil
	}
	return serve(ctx, s, c, stderr, onListen)
}

func historyOptions(c config) expo.HistoryOptions {
	from := c.end.Add(-time.Duration(c.historyDays) * 24 * time.Hour)
	return expo.HistoryOptions{From: from, To: c.end, Step: c.step, Job: c.job}
}

// historyTargets are the inference instances in the chosen naming plus the probes' GPU series.
func historyTargets(s *testbed.Scenario, c config, opt expo.HistoryOptions) ([]expo.Target, error) {
	gpuFrom := opt.From
	if c.gpuDays > 0 {
		gpuFrom = c.end.Add(-time.Duration(c.gpuDays) * 24 * time.Hour)
	}
	return s.HistoryTargets(c.profile.Name(), c.gpuNaming, opt.From, gpuFrom, opt.To)
}

func writeTSDB(ctx context.Context, s *testbed.Scenario, c config, stderr io.Writer) error {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		return fmt.Errorf("--tsdb-out needs promtool on PATH: %w", err)
	}
	began := time.Now()
	opt := historyOptions(c)
	targets, err := historyTargets(s, c, opt)
	if err != nil {
		return err
	}
	if err := testbed.BuildHistoryTSDB(ctx, targets, promtool, c.tsdbOut, opt); err != nil {
		return fmt.Errorf("build TSDB: %w", err)
	}
	fmt.Fprintf(stderr, "tsdb: %s .. %s every %s written to %s in %s\n", opt.From.Format(time.RFC3339), opt.To.Format(time.RFC3339),
		c.step, c.tsdbOut, time.Since(began).Round(time.Millisecond))
	return nil
}

func warmCache(ctx context.Context, stderr io.Writer) error {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		return fmt.Errorf("--warm-test-cache needs promtool on PATH: %w", err)
	}
	for _, v := range testbed.WarmVariants {
		began := time.Now()
		dirs, err := testbed.WarmTSDBCache(ctx, promtool, v)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "test TSDB ready in %s: %s\n", time.Since(began).Round(time.Millisecond), dirs[0])
	}
	return nil
}

func writeHistory(ctx context.Context, s *testbed.Scenario, c config, stdout, stderr io.Writer) (err error) {
	began := time.Now()
	var w io.Writer = stdout
	if c.historyOut != "-" {
		f, err := os.Create(c.historyOut)
		if err != nil {
			return fmt.Errorf("create history file: %w", err)
		}
		defer func() {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
		w = f
	}
	cw := &countingWriter{w: bufio.NewWriterSize(w, 1<<20)}
	last := -1
	opt := historyOptions(c)
	opt.Progress = func(done, total int) {
		if pct := done * 100 / total; pct/10 != last/10 {
			last = pct
			fmt.Fprintf(stderr, "history: %3d%% (%d/%d series, %d MB)\n", pct, done, total, cw.n>>20)
		}
	}
	targets, err := historyTargets(s, c, opt)
	if err != nil {
		return err
	}
	if err := expo.WriteHistory(ctx, cw, targets, opt); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	if err := cw.w.(*bufio.Writer).Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	fmt.Fprintf(stderr, "history: %s .. %s every %s, %d MB in %s\n", opt.From.Format(time.RFC3339), opt.To.Format(time.RFC3339),
		c.step, cw.n>>20, time.Since(began).Round(time.Millisecond))
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func serve(ctx context.Context, s *testbed.Scenario, c config, stderr io.Writer, onListen func(string)) error {
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.listen, err)
	}
	// Live metrics, and the scenario's GPU clock that mock probes (inferscope-probe --mock) follow.
	mux := http.NewServeMux()
	mux.Handle("/", expo.Handler(s.Source(), c.profile, time.Now))
	mux.Handle(mockclock.Path, gpuclock.Handler(s))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	addr := ln.Addr().String()
	fmt.Fprintf(stderr, "serving %d instances (profile %s) on http://%s/metrics?instance=NAME and http://%s/metrics; GPU clock for inferscope-probe --mock.clock=http://%s\n",
		len(c.profile.Targets(s.Source())), c.profile.Name(), addr, addr, addr)
	if onListen != nil {
		onListen(addr)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	<-errc
	fmt.Fprintln(stderr, "stopped")
	return nil
}
