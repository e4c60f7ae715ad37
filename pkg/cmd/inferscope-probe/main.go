// Command inferscope-probe exports NVML GPU metrics for Prometheus and serves a live JSON
// snapshot for the Inferscope data source. Without a GPU, --mock=dgxa100|dgxh100 simulates one.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/inferscope/inferscope/pkg/probe"
	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/gpu/nvmlgpu"
	"github.com/inferscope/inferscope/pkg/probe/mockclock"
	"github.com/inferscope/inferscope/pkg/probe/mockgpu"
	"github.com/inferscope/inferscope/pkg/probe/procinfo"
	"github.com/inferscope/inferscope/pkg/probe/promexport"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// run is the whole program; ready (optional) receives the bound listen addresses.
// It returns the process exit code.
func run(ctx context.Context, args []string, stderr io.Writer, ready func([]net.Addr)) int {
	app := kingpin.New("inferscope-probe", "Exports NVML GPU metrics for Prometheus and a live JSON snapshot for Inferscope.")
	app.Version(version)
	app.HelpFlag.Short('h')
	app.UsageWriter(stderr)
	app.ErrorWriter(stderr)
	terminated := -1 // kingpin "terminates" after --help and --version; we return instead
	app.Terminate(func(code int) {
		if terminated < 0 {
			terminated = code
		}
	})

	webFlags := kingpinflag.AddFlags(app, probe.DefaultListenAddress)
	metricsPath := app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").String()
	interval := app.Flag("collect.interval", "How often NVML is read in the background; scrapes serve the last reading.").Default("5s").Duration()
	naming := app.Flag("naming", "Metric naming: inferscope (inferscope_gpu_*, base units); dcgm (today's dcgm-exporter, 4.8.3 on: DCGM_FI_DEV_* names and labels, hostname, pci_bus_id, XID err_code/err_msg); dcgm-3 (dcgm-exporter 3.4: Hostname, no pci_bus_id); dcgm-4.5 (3.5 to 4.8.2: Hostname); dcgm-4.9 (4.9 on: DCGM's base-unit names, DCGM_FI_SYSTEM_DRIVER_VERSION).").Default("inferscope").Enum("inferscope", "dcgm", "dcgm-3", "dcgm-4.5", "dcgm-4.8", "dcgm-4.9")
	xidCount := app.Flag("dcgm.xid-errors-count", "In the dcgm namings, also export DCGM_EXP_XID_ERRORS_COUNT{xid,window_size_in_ms=\"300000\"}: XID events per code over the last 5 minutes (off by default, as in dcgm-exporter's default counters file).").Bool()
	mock := app.Flag("mock", "Simulate a system instead of reading NVML: dgxa100 or dgxh100.").Default("").Enum("", mockgpu.DGXA100, mockgpu.DGXH100)
	mockInstance := app.Flag("mock.instance", "Which test-bed scenario instance the mock plays, e.g. node-b:8000 (default: the clock's first).").Default("").String()
	mockClockURL := app.Flag("mock.clock", "The scenario clock the mock follows: the address inferscope-loadgen serves on (its --listen), so GPUs and traffic tell one story.").Default("http://127.0.0.1:9400").String()
	mockGPUs := app.Flag("mock.gpus", "Number of simulated GPUs.").Default("8").Int()
	failWithoutNVML := app.Flag("fail-without-nvml", "Exit non-zero when NVML cannot be initialised (default: keep serving, report the reason on /healthz, retry).").Bool()
	nvmlLibrary := app.Flag("nvml.library", "Path of libnvidia-ml.so.1 (default: the dynamic loader's search path).").Default("").String()
	procfs := app.Flag("path.procfs", "Host procfs, for attributing GPU processes to containers.").Default("/proc").String()
	logsPath := app.Flag("path.logs", "Host log directory holding the kubelet's containers/ and pods/ links, for pod and namespace; empty disables.").Default("/var/log").String()
	hostname := app.Flag("hostname", "Host name reported in the snapshot and in the dcgm namings' hostname (Hostname) label (default: $NODE_NAME, else the system host name).").Default("").String()
	logCfg := &promslog.Config{}
	promslogflag.AddFlags(app, logCfg)

	_, err := app.Parse(args)
	if terminated >= 0 {
		return terminated
	}
	if err != nil {
		fmt.Fprintf(stderr, "inferscope-probe: %v\n", err)
		return 2
	}
	logCfg.Writer = stderr
	logger := promslog.New(logCfg)

	if err := checkFlags(*interval, *metricsPath, *webFlags.WebConfigFile, *mockGPUs); err != nil {
		fmt.Fprintf(stderr, "inferscope-probe: %v\n", err)
		return 2
	}
	host := *hostname
	if host == "" {
		host = os.Getenv("NODE_NAME")
	}

	namingValue, _ := promexport.ParseNaming(*naming) // the flag's enum admits only valid namings (and dcgm-4.8, which is dcgm)
	cfg := probe.Config{
		Interval: *interval, Naming: namingValue, XIDCount: *xidCount, Version: version,
		MetricsPath: *metricsPath, Logger: logger,
	}
	if code := configureGPUs(ctx, &cfg, &host, gpuFlags{
		mock: *mock, mockInstance: *mockInstance, mockClock: *mockClockURL, mockGPUs: *mockGPUs,
		nvmlLibrary: *nvmlLibrary, procfs: *procfs, logsPath: *logsPath,
	}, logger, stderr); code != 0 {
		return code
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	cfg.Hostname = host
	p, err := probe.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "inferscope-probe: %v\n", err)
		return 1
	}
	if err := p.Start(ctx); err != nil {
		what := "NVML unavailable"
		if errors.Is(err, gpu.ErrLibraryNotFound) {
			what = "no NVML library found"
		}
		if *failWithoutNVML {
			logger.Error(what+"; exiting (--fail-without-nvml)", "err", err)
			p.Close()
			return 1
		}
		logger.Warn(what+"; serving without GPU data, reporting the reason on /healthz and retrying every minute", "err", err)
	}
	defer p.Close()
	return serve(ctx, p, webFlags, logger, ready)
}

// checkFlags rejects flag values the probe cannot run with (a usage error).
func checkFlags(interval time.Duration, metricsPath, webConfig string, mockGPUs int) error {
	if interval < 100*time.Millisecond {
		return fmt.Errorf("--collect.interval %s is too short (minimum 100ms)", interval)
	}
	if !strings.HasPrefix(metricsPath, "/") {
		return errors.New("--web.telemetry-path must start with /")
	}
	if webConfig != "" {
		if err := web.Validate(webConfig); err != nil {
			return fmt.Errorf("--web.config.file: %w", err)
		}
	}
	if mockGPUs < 1 || mockGPUs > 1024 {
		return errors.New("--mock.gpus must be between 1 and 1024")
	}
	return nil
}

// gpuFlags are the flags that choose where GPU readings come from.
type gpuFlags struct {
	mock, mockInstance, mockClock string
	mockGPUs                      int
	nvmlLibrary, procfs, logsPath string
}

// configureGPUs sets cfg's library and process owners: simulated GPUs following the scenario
// clock (--mock), or NVML. It names the mock's scenario node as host when none is set, and
// returns a non-zero exit code on failure.
func configureGPUs(ctx context.Context, cfg *probe.Config, host *string, f gpuFlags, logger *slog.Logger, stderr io.Writer) int {
	if f.mock != "" {
		sys, instance, code := mockSystem(ctx, f.mock, f.mockInstance, f.mockClock, f.mockGPUs, logger, stderr)
		if code != 0 {
			return code
		}
		if *host == "" {
			*host = node(instance) // the scenario's node, as its recorded history names it
		}
		cfg.Mock = f.mock
		cfg.Open = func() (gpu.Library, error) { return nvmlgpu.Open(sys) }
		cfg.Owners = mockgpu.Owners{Instance: instance}
		logger.Info("simulating GPUs; no NVML is read", "system", f.mock, "instance", instance, "gpus", f.mockGPUs, "clock", f.mockClock)
	} else {
		var opts []nvml.LibraryOption
		if f.nvmlLibrary != "" {
			opts = append(opts, nvml.WithLibraryPath(f.nvmlLibrary))
		}
		lib := nvml.New(opts...)
		cfg.Open = func() (gpu.Library, error) {
			l, err := nvmlgpu.Open(lib)
			if err != nil {
				return nil, err
			}
			if missing := l.Missing(); len(missing) > 0 {
				logger.Info("the installed NVML lacks some functions; their series are omitted", "missing", strings.Join(missing, ","))
			}
			return l, nil
		}
		cfg.Owners = procinfo.New(f.procfs, f.logsPath)
	}
	return 0
}

// mockSystem builds the simulated GPUs, following the scenario clock served at clockURL. An
// unknown instance is a usage error; a clock that does not answer yet is not, when the
// instance is named: the GPUs show lost until it answers (the loadgen may start later).
func mockSystem(ctx context.Context, system, instance, clockURL string, gpus int, logger *slog.Logger, stderr io.Writer) (*mockgpu.System, string, int) {
	clock, err := mockclock.NewRemote(clockURL, system, gpus, nil, 2*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "inferscope-probe: --mock.clock: %v\n", err)
		return nil, "", 2
	}
	clock.OnError = func(err error) {
		if err != nil {
			logger.Warn("the mock clock does not answer; the simulated GPUs show lost until it does", "err", err)
		} else {
			logger.Info("the mock clock answers again")
		}
	}
	fetch, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a, err := clock.Fetch(fetch, instance, time.Now())
	switch {
	case errors.Is(err, mockclock.ErrUnknownInstance):
		fmt.Fprintf(stderr, "inferscope-probe: --mock.instance: %v\n", err)
		return nil, "", 2
	case err != nil && instance == "":
		fmt.Fprintf(stderr, "inferscope-probe: %v; name the instance with --mock.instance to start before the clock answers\n", err)
		return nil, "", 1
	case err != nil:
		logger.Warn("the mock clock does not answer yet; the simulated GPUs show lost until it does", "err", err)
	default:
		instance = a.Instance
	}
	sys, err := mockgpu.New(mockgpu.Options{System: system, Clock: clock, Instance: instance, GPUs: gpus})
	if err != nil {
		fmt.Fprintf(stderr, "inferscope-probe: %v\n", err)
		return nil, "", 2
	}
	return sys, instance, 0
}

// node is the host part of a scenario instance (node-a:8000 → node-a).
func node(instance string) string {
	if h, _, err := net.SplitHostPort(instance); err == nil {
		return h
	}
	return instance
}

func serve(ctx context.Context, p *probe.Probe, flags *web.FlagConfig, logger *slog.Logger, ready func([]net.Addr)) int {
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	if needsToolkitListen(flags) {
		go func() { errc <- web.ListenAndServe(srv, flags, logger) }()
	} else {
		var listeners []net.Listener
		var addrs []net.Addr
		for _, a := range *flags.WebListenAddresses {
			l, err := net.Listen("tcp", a)
			if err != nil {
				for _, o := range listeners {
					o.Close()
				}
				logger.Error("cannot listen", "address", a, "err", err)
				return 1
			}
			listeners = append(listeners, l)
			addrs = append(addrs, l.Addr())
		}
		logger.Info("serving", "addresses", fmt.Sprint(addrs), "interval", p.Collector.Interval())
		if ready != nil {
			ready(addrs)
		}
		go func() { errc <- web.ServeMultiple(listeners, srv, flags, logger) }()
	}
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("server stopped", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		return 0
	}
}

// needsToolkitListen is true for listeners only exporter-toolkit can open (systemd sockets, vsock).
func needsToolkitListen(flags *web.FlagConfig) bool {
	if flags.WebSystemdSocket != nil && *flags.WebSystemdSocket {
		return true
	}
	for _, a := range *flags.WebListenAddresses {
		if strings.HasPrefix(a, "vsock://") {
			return true
		}
	}
	return false
}

var _ collector.Owners = (*procinfo.Resolver)(nil)
