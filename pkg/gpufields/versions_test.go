package gpufields

import (
	"fmt"
	"slices"
	"testing"
)

func TestDCGMNamePerVersion(t *testing.T) {
	for _, c := range []struct {
		s     Signal
		v     Version
		want  string
		scale float64
	}{
		{Util, DCGM3, "DCGM_FI_DEV_GPU_UTIL", 0.01},
		{Util, DCGM48, "DCGM_FI_DEV_GPU_UTIL", 0.01},
		{Util, DCGM49, "DCGM_FI_DEV_GPU_UTIL_RATIO", 1},
		{MemUsed, DCGM45, "DCGM_FI_DEV_FB_USED", 1 << 20},
		{MemUsed, DCGM49, "DCGM_FI_DEV_FB_USED_BYTES", 1},
		{MemTotal, DCGM48, "DCGM_FI_DEV_FB_TOTAL", 1 << 20},
		{MemTotal, DCGM49, "DCGM_FI_DEV_FB_CAPACITY_BYTES", 1},
		{SMClock, DCGM49, "DCGM_FI_DEV_SM_CLOCK_HERTZ", 1},
		{MemClock, DCGM45, "DCGM_FI_DEV_MEM_CLOCK", 1e6},
		{MemClock, DCGM49, "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", 1},
		{MemCopyUtil, DCGM49, "DCGM_FI_DEV_MEMORY_UTIL_RATIO", 1},
		{ClockEvents, DCGM3, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 1},
		{ClockEvents, DCGM45, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 1},
		{ClockEvents, DCGM48, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 1},
		{XID, DCGM48, "DCGM_FI_DEV_XID_ERRORS", 1},
		{XID, DCGM49, "DCGM_FI_DEV_XID_ERROR", 1},
		{PCIeTX, DCGM3, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", 1024},
		{PCIeTX, DCGM45, "DCGM_FI_PROF_PCIE_TX_BYTES", 1},
		{Energy, DCGM48, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1e-3},
		{Power, DCGM49, "DCGM_FI_DEV_BOARD_POWER_WATTS", 1},
		{Temperature, DCGM49, "DCGM_FI_DEV_GPU_TEMP_CELSIUS", 1},
		{RowRemapFailure, DCGM49, "DCGM_FI_DEV_ROW_REMAP_FAILED", 1},
	} {
		n, ok := DCGMName(c.s, c.v)
		if !ok || n.Metric != c.want || n.Scale != c.scale {
			t.Errorf("DCGMName(%s, %s) = %s ×%v (%v), want %s ×%v", c.s, c.v, n.Metric, n.Scale, ok, c.want, c.scale)
		}
	}
	if n, ok := Of(XID).DCGMShape(DCGM49, WindowCount); !ok || n.Metric != "DCGM_EXP_XID_ERRORS_COUNT" {
		t.Errorf("XID window count in 4.9: %s", n.Metric)
	}
	if n, ok := DCGMName(Util, "2.x"); ok {
		t.Errorf("an unknown version has a name: %s", n.Metric)
	}
}

// Each version has at most one name per signal, every name the version maps is in the table,
// and every dcgm-exporter name of the table is placed or knowingly an alias.
func TestVersionMapIsConsistent(t *testing.T) {
	inTable := map[string]bool{}
	for _, f := range All() {
		for _, v := range DCGMVersions {
			names := map[Shape][]string{}
			for _, n := range f.Names {
				if n.In(v) {
					names[n.Shape] = append(names[n.Shape], n.Metric)
				}
			}
			for _, ns := range names {
				if len(ns) > 1 {
					t.Errorf("%s in %s has names %v", f.Signal, v, ns)
				}
			}
		}
		for _, n := range f.Names {
			if n.Exporter == DCGM {
				inTable[n.Metric] = true
			}
		}
	}
	aliases := []string{"DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND"}
	for m := range inTable {
		if _, ok := dcgmIn[m]; !ok && !slices.Contains(aliases, m) {
			t.Errorf("%s is in no version", m)
		}
	}
	for m := range dcgmIn {
		if !inTable[m] {
			t.Errorf("dcgmIn names %s, which the table lacks", m)
		}
	}
	for m := range dcgmOff {
		if !inTable[m] {
			t.Errorf("dcgmOff names %s, which the table lacks", m)
		}
	}
}

// The 4.9 release notes: 23 default fields renamed (22 metrics and the driver label), and
// FB_CAPACITY_BYTES added on by default.
func TestDCGM49RenamesTheDeprecatedDefaultFields(t *testing.T) {
	var renamed []string
	for _, s := range DefaultSignals(DCGM49) {
		n, _ := DCGMName(s, DCGM49)
		old, had := DCGMName(s, DCGM48)
		switch {
		case !had:
			t.Errorf("%s is on in 4.9 but has no 4.8 name", n.Metric)
		case old.Metric == n.Metric:
		case !old.DefaultIn(DCGM48):
			if n.Metric != "DCGM_FI_DEV_FB_CAPACITY_BYTES" {
				t.Errorf("%s: on in 4.9, off in 4.8 as %s", n.Metric, old.Metric)
			}
		default:
			renamed = append(renamed, old.Metric+"→"+n.Metric)
			if _, ok := Confirmed[n.Metric]; !ok {
				t.Errorf("%s: no word on where the name was read", n.Metric)
			}
		}
	}
	if Labels(DCGM49).Driver != Labels(DCGM48).Driver {
		renamed = append(renamed, "driver label")
	}
	if len(renamed) != 23 {
		t.Errorf("%d renames, want 23: %v", len(renamed), renamed)
	}
}

func TestDefaultSignals(t *testing.T) {
	has := func(v Version, s Signal) bool { return slices.Contains(DefaultSignals(v), s) }
	for _, v := range DCGMVersions {
		for _, s := range []Signal{Util, MemUsed, MemFree, Temperature, Power, SMClock, XID} {
			if !has(v, s) {
				t.Errorf("%s: %s not on by default", v, s)
			}
		}
		for _, s := range []Signal{ClockEvents, ECCErrors, ECCCorrected} {
			if has(v, s) {
				t.Errorf("%s: %s on by default", v, s)
			}
		}
	}
	if has(DCGM3, EngineActive) || !has(DCGM45, EngineActive) || !has(DCGM49, EngineActive) {
		t.Error("profiling fields: off in 3.x's defaults, on from 4.x")
	}
	if has(DCGM48, MemTotal) || !has(DCGM49, MemTotal) {
		t.Error("memory total: FB_TOTAL off to 4.8, FB_CAPACITY_BYTES on in 4.9")
	}
}

func TestLabelsPerVersion(t *testing.T) {
	for _, c := range []struct {
		v                 Version
		node, pci, driver string
	}{
		{DCGM3, "Hostname", "", "DCGM_FI_DRIVER_VERSION"},
		{DCGM45, "Hostname", "pci_bus_id", "DCGM_FI_DRIVER_VERSION"},
		{DCGM48, "hostname", "pci_bus_id", "DCGM_FI_DRIVER_VERSION"},
		{DCGM49, "hostname", "pci_bus_id", "DCGM_FI_SYSTEM_DRIVER_VERSION"},
	} {
		l := Labels(c.v)
		if l.Node != c.node || l.PCIBusID != c.pci || l.Driver != c.driver || l.UUID != "UUID" || l.XIDCode != "err_code" {
			t.Errorf("%s: %+v", c.v, l)
		}
		if !slices.Contains(NodeLabels, l.Node) || !slices.Contains(DriverLabels, l.Driver) || !slices.Contains(UUIDLabels, l.UUID) {
			t.Errorf("%s: labels %+v not all among NodeLabels/DriverLabels/UUIDLabels", c.v, l)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Version{"3": DCGM3, "3.x": DCGM3, "4.5": DCGM45, "4.8": DCGM48, "4.9": DCGM49} {
		if got, err := ParseVersion(in); err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseVersion("4.7"); err == nil {
		t.Error("4.7 accepted")
	}
}

func TestXIDMessage(t *testing.T) {
	for code, want := range map[uint64]string{0: "No Error", 43: "GPU stopped processing", 79: "GPU has fallen off the bus", 7: UnknownXID, 1000: UnknownXID} {
		if got := XIDMessage(code); got != want {
			t.Errorf("XIDMessage(%d) = %q, want %q", code, got, want)
		}
	}
	for _, code := range []uint64{13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120} {
		if XIDMessage(code) == UnknownXID {
			t.Errorf("XID %d has no meaning", code)
		}
	}
}

// ExtraFields are as well formed as Fields, never repeat a signal, and leave Fields alone.
func TestExtraFieldsAreWellFormed(t *testing.T) {
	seen := map[Signal]bool{}
	names := map[string]Signal{}
	for _, f := range All() {
		if seen[f.Signal] {
			t.Errorf("signal %s twice", f.Signal)
		}
		seen[f.Signal] = true
		if len(f.Names) == 0 || f.Title == "" || f.Unit == "" {
			t.Errorf("%s: incomplete field", f.Signal)
		}
		for _, n := range f.Names {
			key := n.Metric + fmt.Sprint(n.Matchers)
			if other, dup := names[key]; dup {
				t.Errorf("%s is a name of both %s and %s", key, other, f.Signal)
			}
			names[key] = f.Signal
			if n.Scale <= 0 {
				t.Errorf("%s: scale %v", n.Metric, n.Scale)
			}
		}
	}
	for _, f := range ExtraFields {
		if _, ok := Find(f.Signal); !ok {
			t.Errorf("Find(%s) fails", f.Signal)
		}
		for _, g := range Fields {
			if g.Signal == f.Signal {
				t.Errorf("%s is in Fields too", f.Signal)
			}
		}
	}
	if _, ok := Find("nothing"); ok {
		t.Error("Find found an unknown signal")
	}
}
