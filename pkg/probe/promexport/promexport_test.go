package promexport

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

type fixed struct{ s *snapshot.Snapshot }

func (f fixed) Snapshot() *snapshot.Snapshot { return f.s }
func (f fixed) Stats() collector.Stats {
	return collector.Stats{Cycles: 42, XIDEvents: 3, EventsWatched: true}
}

func p[T any](v T) *T { return &v }

var collectedAt = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func sample() *snapshot.Snapshot {
	return &snapshot.Snapshot{
		Hostname: "gpu-node-1", DriverVersion: "550.54.15", CUDAVersion: "12.4", CollectedAt: collectedAt,
		CollectSeconds: 0.25, NVML: snapshot.NVMLStatus{OK: true},
		GPUs: []snapshot.GPU{
			{
				Index: 0, UUID: "GPU-0000", Name: "NVIDIA A100-SXM4-40GB", Minor: p(0), State: snapshot.StateUp,
				UtilRatio: p(0.5), MemBandwidthRatio: p(0.25),
				MemUsedBytes: p(uint64(10 << 30)), MemTotalBytes: p(uint64(40 << 30)), MemReservedBytes: p(uint64(1 << 30)),
				TemperatureCelsius: p(61.0), PowerWatts: p(250.5), PowerLimitWatts: p(400.0),
				SMClockMHz: p(uint32(1410)), MemClockMHz: p(uint32(1215)),
				ThrottleReasonsMask: p(uint64(0x4)), ThrottleReasons: []string{"sw_power_cap"},
				PCIeRxBytesPerSecond: p(2048.0 * 1024), PCIeTxBytesPerSecond: p(512.0 * 1024), PCIeReplays: p(uint64(7)),
				ECCCorrected: p(uint64(5)), ECCUncorrected: p(uint64(1)),
				RemappedRowsCorrectable: p(uint64(0)), RemappedRowsUncorrectable: p(uint64(1)), RowRemapPending: p(true), RowRemapFailure: p(false),
				XIDErrors: map[string]uint64{"31": 2, "79": 1}, LastXID: p(uint64(31)),
				MIGEnabled: p(false),
				Processes: []snapshot.Process{
					{PID: 1, Name: "python3", UsedMemoryBytes: 3 << 30, Container: "server", Pod: "infer-0", Namespace: "ml"},
					{PID: 2, Name: "python3", UsedMemoryBytes: 1 << 30, Container: "server", Pod: "infer-0", Namespace: "ml"},
				},
			},
			{Index: 1, UUID: "GPU-1111", Name: "NVIDIA A100-SXM4-40GB", State: snapshot.StateLost, Error: "GPU is lost",
				XIDErrors: map[string]uint64{"79": 1}, LastXID: p(uint64(79))},
			{
				Index: 2, UUID: "GPU-2222", Name: "NVIDIA A100-SXM4-40GB", Minor: p(2), State: snapshot.StateUp,
				MemUsedBytes: p(uint64(1 << 30)), MemTotalBytes: p(uint64(40 << 30)), MIGEnabled: p(true),
				MIGDevices: []snapshot.MIGDevice{{
					Index: 0, UUID: "MIG-x", Profile: "3g.20gb", GPUInstanceID: p(1), ComputeInstanceID: p(0),
					MemUsedBytes: p(uint64(2 << 30)), MemTotalBytes: p(uint64(20 << 30)),
					Processes: []snapshot.Process{{PID: 9, Name: "trainer", UsedMemoryBytes: 2 << 30}},
				}},
			},
		},
	}
}

func exporter(n Naming) *Exporter {
	return New(fixed{sample()}, Options{Naming: n, Version: "1.2.3"})
}

func gatherer(t *testing.T, n Naming) *Gatherer {
	t.Helper()
	g, err := NewGatherer(fixed{sample()}, Options{Naming: n, Version: "1.2.3", Now: func() time.Time { return collectedAt.Add(1500 * time.Millisecond) }}, prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func check(t *testing.T, g *Gatherer, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(g, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestInferscopeNaming(t *testing.T) {
	e := exporter(NamingInferscope)
	check(t, gatherer(t, NamingInferscope), `
# HELP inferscope_gpu_memory_used_bytes Device memory used.
# TYPE inferscope_gpu_memory_used_bytes gauge
inferscope_gpu_memory_used_bytes{gpu="0",uuid="GPU-0000"} 1.073741824e+10
inferscope_gpu_memory_used_bytes{gpu="2",uuid="GPU-2222"} 1.073741824e+09
inferscope_gpu_memory_used_bytes{compute_instance="0",gpu="2",gpu_instance="1",mig_profile="3g.20gb",uuid="GPU-2222"} 2.147483648e+09
# HELP inferscope_gpu_sm_clock_hertz SM clock frequency.
# TYPE inferscope_gpu_sm_clock_hertz gauge
inferscope_gpu_sm_clock_hertz{gpu="0",uuid="GPU-0000"} 1.41e+09
# HELP inferscope_gpu_utilization_ratio Fraction of time a kernel was running on the GPU.
# TYPE inferscope_gpu_utilization_ratio gauge
inferscope_gpu_utilization_ratio{gpu="0",uuid="GPU-0000"} 0.5
# HELP inferscope_gpu_pcie_rx_bytes_per_second PCIe receive throughput (NVML ~20 ms sample).
# TYPE inferscope_gpu_pcie_rx_bytes_per_second gauge
inferscope_gpu_pcie_rx_bytes_per_second{gpu="0",uuid="GPU-0000"} 2.097152e+06
# HELP inferscope_gpu_ecc_errors_total Volatile ECC errors since the driver loaded.
# TYPE inferscope_gpu_ecc_errors_total counter
inferscope_gpu_ecc_errors_total{gpu="0",type="corrected",uuid="GPU-0000"} 5
inferscope_gpu_ecc_errors_total{gpu="0",type="uncorrected",uuid="GPU-0000"} 1
# HELP inferscope_gpu_xid_errors_total XID errors since the probe started, by XID code.
# TYPE inferscope_gpu_xid_errors_total counter
inferscope_gpu_xid_errors_total{gpu="0",uuid="GPU-0000",xid="31"} 2
inferscope_gpu_xid_errors_total{gpu="0",uuid="GPU-0000",xid="79"} 1
inferscope_gpu_xid_errors_total{gpu="1",uuid="GPU-1111",xid="79"} 1
# HELP inferscope_gpu_up 1 when the GPU answers NVML, 0 when it is lost or failing.
# TYPE inferscope_gpu_up gauge
inferscope_gpu_up{gpu="0",uuid="GPU-0000"} 1
inferscope_gpu_up{gpu="1",uuid="GPU-1111"} 0
inferscope_gpu_up{gpu="2",uuid="GPU-2222"} 1
# HELP inferscope_gpu_process_memory_used_bytes Device memory used by processes, by process name and owner.
# TYPE inferscope_gpu_process_memory_used_bytes gauge
inferscope_gpu_process_memory_used_bytes{container="server",gpu="0",namespace="ml",pod="infer-0",process="python3",uuid="GPU-0000"} 4.294967296e+09
inferscope_gpu_process_memory_used_bytes{compute_instance="0",container="",gpu="2",gpu_instance="1",mig_profile="3g.20gb",namespace="",pod="",process="trainer",uuid="GPU-2222"} 2.147483648e+09
# HELP inferscope_probe_snapshot_age_seconds Seconds since the snapshot being served was collected.
# TYPE inferscope_probe_snapshot_age_seconds gauge
inferscope_probe_snapshot_age_seconds 1.5
# HELP inferscope_probe_driver_info NVIDIA driver and CUDA driver versions.
# TYPE inferscope_probe_driver_info gauge
inferscope_probe_driver_info{cuda_version="12.4",driver_version="550.54.15"} 1
# HELP inferscope_probe_collections_total Collection cycles run since the probe started.
# TYPE inferscope_probe_collections_total counter
inferscope_probe_collections_total 42
# HELP inferscope_probe_info Probe build and mode.
# TYPE inferscope_probe_info gauge
inferscope_probe_info{mock="",naming="inferscope",version="1.2.3"} 1
`, "inferscope_gpu_memory_used_bytes", "inferscope_gpu_sm_clock_hertz", "inferscope_gpu_utilization_ratio",
		"inferscope_gpu_pcie_rx_bytes_per_second", "inferscope_gpu_ecc_errors_total", "inferscope_gpu_xid_errors_total",
		"inferscope_gpu_up", "inferscope_gpu_process_memory_used_bytes", "inferscope_probe_snapshot_age_seconds",
		"inferscope_probe_driver_info", "inferscope_probe_collections_total", "inferscope_probe_info")

	// One series per throttle reason, 1 for the active one.
	if n := testutil.CollectAndCount(e, "inferscope_gpu_clock_event_reason_active"); n != len(snapshot.ThrottleReasonNames) {
		t.Errorf("%d clock-event series; want %d (GPU 0 only)", n, len(snapshot.ThrottleReasonNames))
	}
	// The lost GPU has identity, state and XID series only.
	if n := testutil.CollectAndCount(e, "inferscope_gpu_temperature_celsius"); n != 1 {
		t.Errorf("%d temperature series; want 1", n)
	}
	if n := testutil.CollectAndCount(e, "inferscope_gpu_state"); n != 9 {
		t.Errorf("%d state series; want 3 per GPU", n)
	}
}

func TestDCGMNaming(t *testing.T) {
	e := exporter(NamingDCGM)
	g := gatherer(t, NamingDCGM)
	const labels0 = `Hostname="gpu-node-1",UUID="GPU-0000",container="server",device="nvidia0",gpu="0",modelName="NVIDIA A100-SXM4-40GB",namespace="ml",pod="infer-0"`
	const labels2 = `Hostname="gpu-node-1",UUID="GPU-2222",container="",device="nvidia2",gpu="2",modelName="NVIDIA A100-SXM4-40GB",namespace="",pod=""`
	check(t, g, `
# HELP DCGM_FI_DEV_GPU_UTIL Fraction of time a kernel was running on the GPU.
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{`+labels0+`} 50
# HELP DCGM_FI_DEV_MEM_COPY_UTIL Fraction of time device memory was being read or written.
# TYPE DCGM_FI_DEV_MEM_COPY_UTIL gauge
DCGM_FI_DEV_MEM_COPY_UTIL{`+labels0+`} 25
# HELP DCGM_FI_DEV_FB_USED Device memory used.
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{`+labels0+`} 10240
DCGM_FI_DEV_FB_USED{`+labels2+`} 1024
DCGM_FI_DEV_FB_USED{GPU_I_ID="1",GPU_I_PROFILE="3g.20gb",`+labels2+`} 2048
# HELP DCGM_FI_DEV_FB_FREE Device memory free.
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{`+labels0+`} 29696
DCGM_FI_DEV_FB_FREE{`+labels2+`} 39936
DCGM_FI_DEV_FB_FREE{GPU_I_ID="1",GPU_I_PROFILE="3g.20gb",`+labels2+`} 18432
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency.
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{`+labels0+`} 1410
# HELP DCGM_FI_DEV_POWER_USAGE Power draw.
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{`+labels0+`} 250.5
# HELP DCGM_FI_DEV_PCIE_RX_THROUGHPUT PCIe receive throughput (NVML ~20 ms sample).
# TYPE DCGM_FI_DEV_PCIE_RX_THROUGHPUT gauge
DCGM_FI_DEV_PCIE_RX_THROUGHPUT{`+labels0+`} 2048
# HELP DCGM_FI_DEV_CLOCK_THROTTLE_REASONS Clock-event (throttle) reasons bitmask.
# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{`+labels0+`} 4
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Double-bit (uncorrected) volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL gauge
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{`+labels0+`} 1
# HELP DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS Rows remapped for uncorrectable errors.
# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS gauge
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{`+labels0+`} 1
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered (0: none since the probe started).
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{`+labels0+`} 31
DCGM_FI_DEV_XID_ERRORS{Hostname="gpu-node-1",UUID="GPU-1111",container="",device="",gpu="1",modelName="NVIDIA A100-SXM4-40GB",namespace="",pod=""} 79
DCGM_FI_DEV_XID_ERRORS{`+labels2+`} 0
`, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
		"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
		"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
		"DCGM_FI_DEV_XID_ERRORS")

	// No Inferscope names where a DCGM field exists.
	for _, name := range []string{"inferscope_gpu_utilization_ratio", "inferscope_gpu_memory_used_bytes", "inferscope_gpu_ecc_errors_total"} {
		if n := testutil.CollectAndCount(e, name); n != 0 {
			t.Errorf("dcgm mode exports %s", name)
		}
	}
}

// Metrics are gathered once per snapshot; a new snapshot is rendered afresh.
func TestGatheredOncePerSnapshot(t *testing.T) {
	src := &swappable{s: sample()}
	g, err := NewGatherer(src, Options{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	first, _ := g.Gather()
	again, _ := g.Gather()
	if len(first) == 0 || len(first) != len(again) {
		t.Fatalf("gathered %d then %d families", len(first), len(again))
	}
	shared := 0
	for i := range first {
		if first[i] == again[i] {
			shared++
		}
	}
	const liveFamilies = 5 // age, collections, XID events, watcher, info: gathered per scrape
	if shared != len(first)-liveFamilies {
		t.Errorf("%d of %d families reused for the same snapshot; want all but %d", shared, len(first), liveFamilies)
	}
	next := sample()
	*next.GPUs[0].TemperatureCelsius = 70
	src.s = next
	if err := testutil.GatherAndCompare(g, strings.NewReader(`
# HELP inferscope_gpu_temperature_celsius GPU temperature.
# TYPE inferscope_gpu_temperature_celsius gauge
inferscope_gpu_temperature_celsius{gpu="0",uuid="GPU-0000"} 70
`), "inferscope_gpu_temperature_celsius"); err != nil {
		t.Error(err)
	}
}

type swappable struct{ s *snapshot.Snapshot }

func (w *swappable) Snapshot() *snapshot.Snapshot { return w.s }
func (w *swappable) Stats() collector.Stats       { return collector.Stats{} }

func TestParseNaming(t *testing.T) {
	for _, ok := range []string{"inferscope", "dcgm"} {
		if _, err := ParseNaming(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := ParseNaming("DCGM"); err == nil {
		t.Error("DCGM accepted")
	}
}
