package promexport

import (
	"fmt"
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
				Index: 0, UUID: "GPU-0000", Name: "NVIDIA A100-SXM4-40GB", Minor: p(0), PCIBusID: "00000000:07:00.0", State: snapshot.StateUp,
				UtilRatio: p(0.5), MemBandwidthRatio: p(0.25),
				MemUsedBytes: p(uint64(10 << 30)), MemTotalBytes: p(uint64(40 << 30)), MemReservedBytes: p(uint64(1 << 30)),
				TemperatureCelsius: p(61.0), PowerWatts: p(250.5), PowerLimitWatts: p(400.0),
				SMClockMHz: p(uint32(1410)), MemClockMHz: p(uint32(1215)),
				ThrottleReasonsMask: p(uint64(0x4)), ThrottleReasons: []string{"sw_power_cap"},
				PCIeRxBytesPerSecond: p(2048.0 * 1024), PCIeTxBytesPerSecond: p(512.0 * 1024), PCIeReplays: p(uint64(7)),
				ECCCorrected: p(uint64(5)), ECCUncorrected: p(uint64(1)),
				RemappedRowsCorrectable: p(uint64(0)), RemappedRowsUncorrectable: p(uint64(1)), RowRemapPending: p(true), RowRemapFailure: p(false),
				XIDErrors: map[string]uint64{"31": 2, "79": 1}, LastXID: p(uint64(31)), RecentXIDs: map[string]uint64{"31": 1},
				MIGEnabled: p(false),
				Processes: []snapshot.Process{
					{PID: 1, Name: "python3", UsedMemoryBytes: 3 << 30, Container: "server", Pod: "infer-0", Namespace: "ml"},
					{PID: 2, Name: "python3", UsedMemoryBytes: 1 << 30, Container: "server", Pod: "infer-0", Namespace: "ml"},
				},
			},
			{Index: 1, UUID: "GPU-1111", Name: "NVIDIA A100-SXM4-40GB", State: snapshot.StateLost, Error: "GPU is lost",
				XIDErrors: map[string]uint64{"79": 1}, LastXID: p(uint64(79))},
			{
				Index: 2, UUID: "GPU-2222", Name: "NVIDIA A100-SXM4-40GB", Minor: p(2), PCIBusID: "00000000:47:00.0", State: snapshot.StateUp,
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

// Today's dcgm-exporter (4.8.3 on): labels gpu, UUID, pci_bus_id, device, modelName,
// hostname (lower case since release 4.6.0-4.8.3; the old Hostname label is dcgm-3 and
// dcgm-4.5 now), the driver label, the owner's pod labels; the XID field labelled with
// err_code/err_msg; the throttle bitmask under its current name; PCIe in bytes/s.
func TestDCGMNaming(t *testing.T) {
	e := exporter(NamingDCGM)
	g := gatherer(t, NamingDCGM)
	const id0 = `DCGM_FI_DRIVER_VERSION="550.54.15",UUID="GPU-0000",container="server",device="nvidia0",gpu="0",hostname="gpu-node-1",modelName="NVIDIA A100-SXM4-40GB",namespace="ml",pci_bus_id="00000000:07:00.0",pod="infer-0"`
	const id2 = `DCGM_FI_DRIVER_VERSION="550.54.15",UUID="GPU-2222",container="",device="nvidia2",gpu="2",hostname="gpu-node-1",modelName="NVIDIA A100-SXM4-40GB",namespace="",pci_bus_id="00000000:47:00.0",pod=""`
	const id1 = `DCGM_FI_DRIVER_VERSION="550.54.15",UUID="GPU-1111",container="",device="",gpu="1",hostname="gpu-node-1",modelName="NVIDIA A100-SXM4-40GB",namespace="",pci_bus_id="",pod=""`
	mig2 := strings.Replace(id2, `",UUID=`, `",GPU_I_ID="1",GPU_I_PROFILE="3g.20gb",UUID=`, 1)
	check(t, g, `
# HELP DCGM_FI_DEV_GPU_UTIL Fraction of time a kernel was running on the GPU.
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{`+id0+`} 50
# HELP DCGM_FI_DEV_MEM_COPY_UTIL Fraction of time device memory was being read or written.
# TYPE DCGM_FI_DEV_MEM_COPY_UTIL gauge
DCGM_FI_DEV_MEM_COPY_UTIL{`+id0+`} 25
# HELP DCGM_FI_DEV_FB_USED Device memory used.
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{`+id0+`} 10240
DCGM_FI_DEV_FB_USED{`+id2+`} 1024
DCGM_FI_DEV_FB_USED{`+mig2+`} 2048
# HELP DCGM_FI_DEV_FB_FREE Device memory free.
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{`+id0+`} 29696
DCGM_FI_DEV_FB_FREE{`+id2+`} 39936
DCGM_FI_DEV_FB_FREE{`+mig2+`} 18432
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency.
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{`+id0+`} 1410
# HELP DCGM_FI_DEV_POWER_USAGE Power draw.
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{`+id0+`} 250.5
# HELP DCGM_FI_PROF_PCIE_RX_BYTES PCIe receive throughput (NVML ~20 ms sample).
# TYPE DCGM_FI_PROF_PCIE_RX_BYTES gauge
DCGM_FI_PROF_PCIE_RX_BYTES{`+id0+`} 2.097152e+06
# HELP DCGM_FI_DEV_CLOCKS_EVENT_REASONS Clock-event (throttle) reasons bitmask.
# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{`+id0+`} 4
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Double-bit (uncorrected) volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{`+id0+`} 1
# HELP DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS Rows remapped for uncorrectable errors.
# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{`+id0+`} 1
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{`+xid(id0, "31", "GPU memory page fault")+`} 31
DCGM_FI_DEV_XID_ERRORS{`+xid(id1, "79", "GPU has fallen off the bus")+`} 79
DCGM_FI_DEV_XID_ERRORS{`+xid(id2, "0", "No Error")+`} 0
`, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
		"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_PCIE_RX_BYTES",
		"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
		"DCGM_FI_DEV_XID_ERRORS")

	// No Inferscope names where a DCGM field exists; no old names; no window count by default.
	for _, name := range []string{"inferscope_gpu_utilization_ratio", "inferscope_gpu_memory_used_bytes", "inferscope_gpu_ecc_errors_total",
		"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "DCGM_EXP_XID_ERRORS_COUNT"} {
		if n := testutil.CollectAndCount(e, name); n != 0 {
			t.Errorf("dcgm mode exports %s", name)
		}
	}
}

// xid adds the XID field's labels to a GPU's, in sorted place.
func xid(labels, code, msg string) string {
	return strings.Replace(labels, `",gpu=`, `",err_code="`+code+`",err_msg="`+msg+`",gpu=`, 1)
}

// dcgm-3 is dcgm-exporter 3.4: Hostname, no pci_bus_id, the deprecated throttle name, PCIe
// in KB/s.
func TestDCGM3Naming(t *testing.T) {
	g := gatherer(t, NamingDCGM3)
	const id0 = `DCGM_FI_DRIVER_VERSION="550.54.15",Hostname="gpu-node-1",UUID="GPU-0000",container="server",device="nvidia0",gpu="0",modelName="NVIDIA A100-SXM4-40GB",namespace="ml",pod="infer-0"`
	check(t, g, `
# HELP DCGM_FI_DEV_PCIE_RX_THROUGHPUT PCIe receive throughput (NVML ~20 ms sample).
# TYPE DCGM_FI_DEV_PCIE_RX_THROUGHPUT gauge
DCGM_FI_DEV_PCIE_RX_THROUGHPUT{`+id0+`} 2048
# HELP DCGM_FI_DEV_CLOCK_THROTTLE_REASONS Clock-event (throttle) reasons bitmask.
# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{`+id0+`} 4
`, "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
	e := exporter(NamingDCGM45)
	if testutil.CollectAndCount(e, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS") != 1 || testutil.CollectAndCount(e, "DCGM_FI_PROF_PCIE_RX_BYTES") != 1 {
		t.Error("dcgm-4.5: want the deprecated throttle name and PCIe in bytes/s")
	}
}

// dcgm-4.9: the base-unit names and units from gpufields, the capacity field, the renamed
// driver label.
func TestDCGM49Naming(t *testing.T) {
	g := gatherer(t, NamingDCGM49)
	const id0 = `DCGM_FI_SYSTEM_DRIVER_VERSION="550.54.15",UUID="GPU-0000",container="server",device="nvidia0",gpu="0",hostname="gpu-node-1",modelName="NVIDIA A100-SXM4-40GB",namespace="ml",pci_bus_id="00000000:07:00.0",pod="infer-0"`
	const id2 = `DCGM_FI_SYSTEM_DRIVER_VERSION="550.54.15",UUID="GPU-2222",container="",device="nvidia2",gpu="2",hostname="gpu-node-1",modelName="NVIDIA A100-SXM4-40GB",namespace="",pci_bus_id="00000000:47:00.0",pod=""`
	mig2 := strings.Replace(id2, `",UUID=`, `",GPU_I_ID="1",GPU_I_PROFILE="3g.20gb",UUID=`, 1)
	check(t, g, `
# HELP DCGM_FI_DEV_GPU_UTIL_RATIO Fraction of time a kernel was running on the GPU.
# TYPE DCGM_FI_DEV_GPU_UTIL_RATIO gauge
DCGM_FI_DEV_GPU_UTIL_RATIO{`+id0+`} 0.5
# HELP DCGM_FI_DEV_MEMORY_UTIL_RATIO Fraction of time device memory was being read or written.
# TYPE DCGM_FI_DEV_MEMORY_UTIL_RATIO gauge
DCGM_FI_DEV_MEMORY_UTIL_RATIO{`+id0+`} 0.25
# HELP DCGM_FI_DEV_FB_USED_BYTES Device memory used.
# TYPE DCGM_FI_DEV_FB_USED_BYTES gauge
DCGM_FI_DEV_FB_USED_BYTES{`+id0+`} 1.073741824e+10
DCGM_FI_DEV_FB_USED_BYTES{`+id2+`} 1.073741824e+09
DCGM_FI_DEV_FB_USED_BYTES{`+mig2+`} 2.147483648e+09
# HELP DCGM_FI_DEV_FB_CAPACITY_BYTES Device memory total.
# TYPE DCGM_FI_DEV_FB_CAPACITY_BYTES gauge
DCGM_FI_DEV_FB_CAPACITY_BYTES{`+id0+`} 4.294967296e+10
DCGM_FI_DEV_FB_CAPACITY_BYTES{`+id2+`} 4.294967296e+10
DCGM_FI_DEV_FB_CAPACITY_BYTES{`+mig2+`} 2.147483648e+10
# HELP DCGM_FI_DEV_SM_CLOCK_HERTZ SM clock frequency.
# TYPE DCGM_FI_DEV_SM_CLOCK_HERTZ gauge
DCGM_FI_DEV_SM_CLOCK_HERTZ{`+id0+`} 1.41e+09
# HELP DCGM_FI_DEV_MEMORY_CLOCK_HERTZ Memory clock frequency.
# TYPE DCGM_FI_DEV_MEMORY_CLOCK_HERTZ gauge
DCGM_FI_DEV_MEMORY_CLOCK_HERTZ{`+id0+`} 1.215e+09
# HELP DCGM_FI_DEV_GPU_TEMP_CELSIUS GPU temperature.
# TYPE DCGM_FI_DEV_GPU_TEMP_CELSIUS gauge
DCGM_FI_DEV_GPU_TEMP_CELSIUS{`+id0+`} 61
# HELP DCGM_FI_DEV_BOARD_POWER_WATTS Power draw.
# TYPE DCGM_FI_DEV_BOARD_POWER_WATTS gauge
DCGM_FI_DEV_BOARD_POWER_WATTS{`+id0+`} 250.5
# HELP DCGM_FI_DEV_ROW_REMAP_FAILED 1 when row remapping has failed.
# TYPE DCGM_FI_DEV_ROW_REMAP_FAILED gauge
DCGM_FI_DEV_ROW_REMAP_FAILED{`+id0+`} 0
`, "DCGM_FI_DEV_GPU_UTIL_RATIO", "DCGM_FI_DEV_MEMORY_UTIL_RATIO", "DCGM_FI_DEV_FB_USED_BYTES", "DCGM_FI_DEV_FB_CAPACITY_BYTES",
		"DCGM_FI_DEV_SM_CLOCK_HERTZ", "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", "DCGM_FI_DEV_BOARD_POWER_WATTS",
		"DCGM_FI_DEV_ROW_REMAP_FAILED")
	e := exporter(NamingDCGM49)
	for _, old := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_SM_CLOCK"} {
		if testutil.CollectAndCount(e, old) != 0 {
			t.Errorf("dcgm-4.9 exports the old name %s", old)
		}
	}
	if testutil.CollectAndCount(e, "DCGM_FI_DEV_XID_ERROR") != 3 {
		t.Error("dcgm-4.9: want the XID field under its canonical name, one series per GPU")
	}
}

// With XIDCount, DCGM_EXP_XID_ERRORS_COUNT counts the last 5 minutes' events per code; a GPU
// with none has one unlabelled 0, as dcgm-exporter writes it.
func TestDCGMXIDCount(t *testing.T) {
	g, err := NewGatherer(fixed{sample()}, Options{Naming: NamingDCGM, XIDCount: true}, prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	const id = `DCGM_FI_DRIVER_VERSION="550.54.15",UUID="GPU-%s",container="%s",device="%s",gpu="%s",hostname="gpu-node-1",modelName="NVIDIA A100-SXM4-40GB",namespace="%s",pci_bus_id="%s",pod="%s"`
	want := "# HELP DCGM_EXP_XID_ERRORS_COUNT Count of XID errors within the user-specified time window (see xid-count-window-size flag).\n" +
		"# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge\n" +
		"DCGM_EXP_XID_ERRORS_COUNT{" + fmt.Sprintf(id, "0000", "server", "nvidia0", "0", "ml", "00000000:07:00.0", "infer-0") + `,window_size_in_ms="300000",xid="31"} 1` + "\n" +
		"DCGM_EXP_XID_ERRORS_COUNT{" + fmt.Sprintf(id, "1111", "", "", "1", "", "", "") + `,window_size_in_ms="300000"} 0` + "\n" +
		"DCGM_EXP_XID_ERRORS_COUNT{" + fmt.Sprintf(id, "2222", "", "nvidia2", "2", "", "00000000:47:00.0", "") + `,window_size_in_ms="300000"} 0` + "\n"
	check(t, g, want, "DCGM_EXP_XID_ERRORS_COUNT")
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
	for in, want := range map[string]Naming{"inferscope": NamingInferscope, "dcgm": NamingDCGM, "dcgm-4.8": NamingDCGM,
		"dcgm-3": NamingDCGM3, "dcgm-4.5": NamingDCGM45, "dcgm-4.9": NamingDCGM49} {
		if got, err := ParseNaming(in); err != nil || got != want {
			t.Errorf("%s: %s, %v", in, got, err)
		}
	}
	if _, err := ParseNaming("DCGM"); err == nil {
		t.Error("DCGM accepted")
	}
}
