// Package collector reads every GPU in the background on an interval and publishes an
// immutable snapshot. Readers (scrapes, the JSON API) only load the last snapshot, so they
// never wait on NVML, and a lost GPU or an unsupported call only affects its own fields.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/procinfo"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

// Owners attributes processes to containers and pods (procinfo.Resolver, or a mock's).
type Owners interface {
	Lookup(pid uint32, cycle procinfo.Cycle) procinfo.Owner
	Forget(cycle procinfo.Cycle)
	Comm(pid uint32) string
}

// Config configures a Collector.
type Config struct {
	// Open initialises NVML; it is retried every RetryInit while it fails.
	Open      func() (gpu.Library, error)
	Interval  time.Duration // default 5s
	RetryInit time.Duration // default 1m
	Hostname  string
	Mock      string // name of the simulated system, "" on real hardware
	Owners    Owners // nil: processes stay unattributed
	Now       func() time.Time
	Logger    *slog.Logger
}

// Stats are the collector's own counters.
type Stats struct {
	Cycles        uint64
	XIDEvents     uint64
	InitAttempts  uint64
	EventsWatched bool
}

// Collector owns NVML and the latest snapshot.
type Collector struct {
	cfg Config
	log *slog.Logger

	last atomic.Pointer[snapshot.Snapshot]

	cycles       atomic.Uint64
	xidEvents    atomic.Uint64
	initAttempts atomic.Uint64
	watching     atomic.Bool

	mu        sync.Mutex // guards everything below; held for a whole cycle
	lib       gpu.Library
	initErr   error
	lastTry   time.Time
	driver    string
	cuda      string
	names     map[uint32]nameEntry
	watchStop context.CancelFunc
	devs      []*devState

	wg   sync.WaitGroup
	stop context.CancelFunc
}

type nameEntry struct {
	name  string
	cycle uint64
}

// devState is what the collector remembers about a GPU across cycles: its identity survives
// the GPU getting lost, and its XID counters are cumulative.
type devState struct {
	h     gpu.Device
	uuid  string
	name  string
	minor *int
	bus   string
	xids  map[uint64]uint64
	last  *uint64
	// recent are the XID events of the last snapshot.XIDWindow, oldest first.
	recent []xidEvent
}

type xidEvent struct {
	code uint64
	at   time.Time
}

// New makes a collector; call Start to begin.
func New(cfg Config) *Collector {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.RetryInit <= 0 {
		cfg.RetryInit = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg, log: cfg.Logger, names: map[uint32]nameEntry{}}
}

// Start opens NVML, collects once so a snapshot exists, and keeps collecting in the
// background until Close. The returned error is NVML's initialisation error, if any: the
// collector runs regardless (serving the reason and retrying), and the caller decides
// whether that is fatal.
func (c *Collector) Start(ctx context.Context) error {
	ctx, c.stop = context.WithCancel(ctx)
	c.mu.Lock()
	c.openLocked()
	c.mu.Unlock()
	c.publish(c.collect())
	c.wg.Add(1)
	go c.loop(ctx)
	return c.initErr
}

// Close stops collection and the event watcher and shuts NVML down.
func (c *Collector) Close() {
	if c.stop != nil {
		c.stop()
	}
	c.wg.Wait()
	if c.lib != nil {
		_ = c.lib.Shutdown()
		c.lib = nil
	}
}

// Snapshot returns the latest snapshot. It is shared: callers must not modify it.
func (c *Collector) Snapshot() *snapshot.Snapshot { return c.last.Load() }

// Interval is the collection interval.
func (c *Collector) Interval() time.Duration { return c.cfg.Interval }

// Stats returns the collector's counters.
func (c *Collector) Stats() Stats {
	return Stats{
		Cycles:        c.cycles.Load(),
		XIDEvents:     c.xidEvents.Load(),
		InitAttempts:  c.initAttempts.Load(),
		EventsWatched: c.watching.Load(),
	}
}

// CollectNow runs and publishes one cycle synchronously (for tests and benchmarks; the
// background loop keeps running).
func (c *Collector) CollectNow() *snapshot.Snapshot {
	s := c.collect()
	c.publish(s)
	return s
}

func (c *Collector) loop(ctx context.Context) {
	defer c.wg.Done()
	defer func() {
		if c.watchStop != nil {
			c.watchStop()
		}
	}()
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.publish(c.collect())
		}
	}
}

func (c *Collector) publish(s *snapshot.Snapshot) {
	c.last.Store(s)
	c.cycles.Add(1)
}

// openLocked initialises NVML; c.mu is held, so no cycle runs meanwhile.
func (c *Collector) openLocked() {
	c.lastTry = c.cfg.Now()
	c.initAttempts.Add(1)
	lib, err := c.cfg.Open()
	if err != nil {
		// The first failure is Start's result, for the caller to report; retries log changes.
		if c.initErr != nil && c.initErr.Error() != err.Error() {
			c.log.Warn("NVML unavailable; serving without GPU data and retrying", "err", err, "retry", c.cfg.RetryInit)
		}
		c.initErr = err
		return
	}
	c.lib, c.initErr = lib, nil
	if v, err := lib.DriverVersion(); err == nil {
		c.driver = v
	}
	if v, err := lib.CUDADriverVersion(); err == nil && v > 0 {
		c.cuda = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
	}
	n, err := lib.DeviceCount()
	if err != nil {
		c.log.Warn("cannot count GPUs", "err", err)
	}
	c.devs = make([]*devState, n)
	for i := range c.devs {
		c.devs[i] = &devState{xids: map[uint64]uint64{}}
		if h, err := lib.DeviceByIndex(i); err == nil {
			c.devs[i].h = h
		}
	}
	handles := make([]gpu.Device, n)
	for i, d := range c.devs {
		handles[i] = d.h
	}
	c.log.Info("NVML initialised", "driver", c.driver, "cuda", c.cuda, "gpus", n)
	c.startWatch(lib, handles)
}

// startWatch runs the XID event watcher in its own goroutine.
func (c *Collector) startWatch(lib gpu.Library, handles []gpu.Device) {
	ctx, cancel := context.WithCancel(context.Background())
	c.watchStop = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.watching.Store(true)
		defer c.watching.Store(false)
		err := lib.WatchEvents(ctx, handles, c.onEvent)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("XID events unavailable", "err", err)
		}
	}()
}

func (c *Collector) onEvent(ev gpu.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Counted once recorded: whoever sees the count sees the event, with its time.
	defer c.xidEvents.Add(1)
	if ev.Device < 0 || ev.Device >= len(c.devs) {
		c.log.Warn("XID event on an unknown device", "xid", ev.XID)
		return
	}
	d := c.devs[ev.Device]
	d.xids[ev.XID]++
	code := ev.XID
	d.last = &code
	d.recent = append(d.recent, xidEvent{code: code, at: c.cfg.Now()})
	c.log.Warn("XID error", "gpu", ev.Device, "uuid", d.uuid, "xid", ev.XID)
}

func (c *Collector) collect() *snapshot.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.collectLocked()
}

// collectLocked runs one cycle. c.mu is held for the whole cycle: cycles never overlap, and
// the event goroutine only needs it briefly to count an XID (NVML queues events meanwhile).
func (c *Collector) collectLocked() *snapshot.Snapshot {
	start := c.cfg.Now()
	if c.lib == nil && c.initErr != nil && start.Sub(c.lastTry) >= c.cfg.RetryInit {
		c.openLocked()
	}
	s := &snapshot.Snapshot{
		Hostname:      c.cfg.Hostname,
		DriverVersion: c.driver,
		CUDAVersion:   c.cuda,
		CollectedAt:   start,
		Mock:          c.cfg.Mock,
		NVML:          snapshot.NVMLStatus{OK: c.lib != nil},
		GPUs:          []snapshot.GPU{},
	}
	if c.initErr != nil {
		s.NVML.Error = c.initErr.Error()
	}
	if c.lib != nil {
		cycle := c.cycles.Load() + 1
		s.GPUs = make([]snapshot.GPU, len(c.devs))
		for i, d := range c.devs {
			s.GPUs[i] = c.readGPU(i, d, cycle)
		}
		if c.cfg.Owners != nil {
			c.cfg.Owners.Forget(cycle)
		}
		for pid, e := range c.names {
			if e.cycle != cycle {
				delete(c.names, pid)
			}
		}
	}
	s.CollectSeconds = c.cfg.Now().Sub(start).Seconds()
	return s
}

// reading runs one device's calls, stopping at the first sign that the GPU is lost.
type reading struct {
	lost    bool
	lostIn  string
	errs    []string
	skipped int
}

func (r *reading) do(what string, f func() error) {
	if r.lost {
		r.skipped++
		return
	}
	err := f()
	switch {
	case err == nil, gpu.Absent(err):
	case errors.Is(err, gpu.ErrGPULost):
		r.lost, r.lostIn = true, what
	default:
		r.errs = append(r.errs, what+": "+err.Error())
	}
}

// A gpuReading is one query of a device and where its answer goes in the snapshot.
type gpuReading struct {
	what string
	read func(h gpu.Device, g *snapshot.GPU) error
}

// resourceReadings answer "is the hardware enough?": utilisation, memory, temperature,
// power, clocks and their event reasons, PCIe throughput.
var resourceReadings = []gpuReading{
	{"utilization", func(h gpu.Device, g *snapshot.GPU) error {
		u, err := h.Utilization()
		if err == nil {
			g.UtilRatio = ptr(float64(u.GPU) / 100)
			g.MemBandwidthRatio = ptr(float64(u.Memory) / 100)
		}
		return err
	}},
	{"memory", func(h gpu.Device, g *snapshot.GPU) error {
		m, err := h.Memory()
		if err == nil {
			g.MemUsedBytes, g.MemTotalBytes = ptr(m.Used), ptr(m.Total)
			if m.HasReserved {
				g.MemReservedBytes = ptr(m.Reserved)
			}
			if m.Total > 0 {
				g.MemUsedRatio = ptr(float64(m.Used) / float64(m.Total))
			}
		}
		return err
	}},
	{"temperature", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.TemperatureCelsius()
		if err == nil {
			g.TemperatureCelsius = ptr(float64(v))
		}
		return err
	}},
	{"power", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.PowerMilliwatts()
		if err == nil {
			g.PowerWatts = ptr(float64(v) / 1000)
		}
		return err
	}},
	{"power limit", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.PowerLimitMilliwatts()
		if err == nil {
			g.PowerLimitWatts = ptr(float64(v) / 1000)
		}
		return err
	}},
	{"sm clock", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.ClockMHz(gpu.ClockSM)
		if err == nil {
			g.SMClockMHz = ptr(v)
		}
		return err
	}},
	{"memory clock", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.ClockMHz(gpu.ClockMemory)
		if err == nil {
			g.MemClockMHz = ptr(v)
		}
		return err
	}},
	{"clock events", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.ClockEventReasons()
		if err == nil {
			g.ThrottleReasonsMask = ptr(v)
			g.ThrottleReasons = snapshot.ThrottleReasonList(v)
		}
		return err
	}},
	{"pcie rx", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.PCIeThroughputKBps(gpu.PCIeRX)
		if err == nil {
			g.PCIeRxBytesPerSecond = ptr(float64(v) * 1024)
		}
		return err
	}},
	{"pcie tx", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.PCIeThroughputKBps(gpu.PCIeTX)
		if err == nil {
			g.PCIeTxBytesPerSecond = ptr(float64(v) * 1024)
		}
		return err
	}},
}

// healthReadings are the hardware's error counters: PCIe replays, ECC, retired pages and
// remapped rows (triage's last step).
var healthReadings = []gpuReading{
	{"pcie replays", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.PCIeReplayCounter()
		if err == nil {
			g.PCIeReplays = ptr(v)
		}
		return err
	}},
	{"ecc corrected", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.ECCErrors(gpu.ECCCorrected)
		if err == nil {
			g.ECCCorrected = ptr(v)
		}
		return err
	}},
	{"ecc uncorrected", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.ECCErrors(gpu.ECCUncorrected)
		if err == nil {
			g.ECCUncorrected = ptr(v)
		}
		return err
	}},
	{"retired pages sbe", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.RetiredPages(gpu.RetiredSingleBit)
		if err == nil {
			g.RetiredPagesSingleBit = ptr(v)
		}
		return err
	}},
	{"retired pages dbe", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.RetiredPages(gpu.RetiredDoubleBit)
		if err == nil {
			g.RetiredPagesDoubleBit = ptr(v)
		}
		return err
	}},
	{"retired pages pending", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.RetiredPagesPending()
		if err == nil {
			g.RetiredPagesPending = ptr(v)
		}
		return err
	}},
	{"remapped rows", func(h gpu.Device, g *snapshot.GPU) error {
		v, err := h.RemappedRows()
		if err == nil {
			g.RemappedRowsCorrectable, g.RemappedRowsUncorrectable = ptr(v.Correctable), ptr(v.Uncorrectable)
			g.RowRemapPending, g.RowRemapFailure = ptr(v.Pending), ptr(v.Failure)
		}
		return err
	}},
}

func (c *Collector) readGPU(i int, d *devState, cycle uint64) snapshot.GPU {
	g := snapshot.GPU{Index: i, State: snapshot.StateUp}
	r := &reading{}
	if d.h == nil {
		r.do("handle", func() error {
			h, err := c.lib.DeviceByIndex(i)
			d.h = h
			return err
		})
		if d.h == nil && !r.lost {
			g.State, g.Error = snapshot.StateError, strings.Join(r.errs, "; ")
			c.fillIdentity(&g, d)
			return g
		}
	}
	h := d.h
	if d.uuid == "" {
		r.do("uuid", func() error {
			v, err := h.UUID()
			d.uuid = v
			return err
		})
		r.do("name", func() error {
			v, err := h.Name()
			d.name = v
			return err
		})
		r.do("minor", func() error {
			v, err := h.MinorNumber()
			if err == nil {
				d.minor = &v
			}
			return err
		})
		r.do("pci bus id", func() error {
			v, err := h.PCIBusID()
			d.bus = v
			return err
		})
	}
	c.fillIdentity(&g, d)

	for _, layer := range [][]gpuReading{resourceReadings, healthReadings} {
		for _, rd := range layer {
			r.do(rd.what, func() error { return rd.read(h, &g) })
		}
	}
	r.do("processes", func() error {
		ps, err := h.Processes()
		if err == nil {
			g.Processes = c.processes(ps, cycle)
		}
		return err
	})
	r.do("mig mode", func() error {
		on, err := h.MIGEnabled()
		if err == nil {
			g.MIGEnabled = ptr(on)
		}
		return err
	})
	if g.MIGEnabled == nil || !*g.MIGEnabled {
		r.do("activity", func() error {
			a, err := h.Activity()
			g.EngineActiveRatio, g.TensorActiveRatio, g.DRAMActiveRatio = a.GraphicsEngine, a.Tensor, a.DRAM
			return err
		})
	}
	if g.MIGEnabled != nil && *g.MIGEnabled {
		r.do("mig devices", func() error {
			migs, err := h.MIGDevices()
			if err == nil {
				g.MIGDevices = c.readMIG(migs, r, cycle)
			}
			return err
		})
	}

	c.fillXIDs(&g, d)
	if r.lost {
		lostGPU := snapshot.GPU{Index: i, State: snapshot.StateLost, Error: "GPU is lost (while reading " + r.lostIn + ")"}
		c.fillIdentity(&lostGPU, d)
		c.fillXIDs(&lostGPU, d)
		return lostGPU
	}
	g.Error = strings.Join(r.errs, "; ")
	return g
}

func (c *Collector) readMIG(migs []gpu.MIGDevice, r *reading, cycle uint64) []snapshot.MIGDevice {
	out := make([]snapshot.MIGDevice, 0, len(migs))
	for _, m := range migs {
		md := snapshot.MIGDevice{Index: m.Index}
		if m.IDsErr == nil {
			md.GPUInstanceID, md.ComputeInstanceID = ptr(m.GPUInstanceID), ptr(m.ComputeInstanceID)
		}
		var errs []string
		note := func(what string, err error) bool {
			switch {
			case err == nil:
				return true
			case errors.Is(err, gpu.ErrGPULost):
				r.lost, r.lostIn = true, "mig "+what
			case !gpu.Absent(err):
				errs = append(errs, what+": "+err.Error())
			}
			return false
		}
		if v, err := m.UUID(); note("uuid", err) {
			md.UUID = v
		}
		if v, err := m.Name(); note("name", err) {
			md.Name = v
			md.Profile = migProfile(v)
		}
		if u, err := m.Utilization(); note("utilization", err) {
			md.UtilRatio = ptr(float64(u.GPU) / 100)
		}
		if mem, err := m.Memory(); note("memory", err) {
			md.MemUsedBytes, md.MemTotalBytes = ptr(mem.Used), ptr(mem.Total)
			if mem.HasReserved {
				md.MemReservedBytes = ptr(mem.Reserved)
			}
			if mem.Total > 0 {
				md.MemUsedRatio = ptr(float64(mem.Used) / float64(mem.Total))
			}
		}
		if ps, err := m.Processes(); note("processes", err) {
			md.Processes = c.processes(ps, cycle)
		}
		md.Error = strings.Join(errs, "; ")
		out = append(out, md)
		if r.lost {
			break
		}
	}
	return out
}

// migProfile takes "1g.5gb" from a MIG device name such as "NVIDIA A100-SXM4-40GB MIG 1g.5gb".
func migProfile(name string) string {
	if i := strings.LastIndex(name, "MIG "); i >= 0 {
		return strings.TrimSpace(name[i+4:])
	}
	return ""
}

func (c *Collector) processes(ps []gpu.Process, cycle uint64) []snapshot.Process {
	out := make([]snapshot.Process, 0, len(ps))
	for _, p := range ps {
		sp := snapshot.Process{PID: p.PID, UsedMemoryBytes: p.UsedBytes, Name: c.processName(p.PID, cycle)}
		if c.cfg.Owners != nil {
			o := c.cfg.Owners.Lookup(p.PID, cycle)
			sp.Container, sp.Pod, sp.Namespace = o.Container, o.Pod, o.Namespace
		}
		out = append(out, sp)
	}
	return out
}

func (c *Collector) processName(pid uint32, cycle uint64) string {
	if e, ok := c.names[pid]; ok {
		e.cycle = cycle
		c.names[pid] = e
		return e.name
	}
	name, err := c.lib.ProcessName(pid)
	if err != nil || name == "" {
		if c.cfg.Owners != nil {
			name = c.cfg.Owners.Comm(pid)
		}
	}
	// NVML gives the full path of the executable; keep its base name.
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	c.names[pid] = nameEntry{name: name, cycle: cycle}
	return name
}

func (c *Collector) fillIdentity(g *snapshot.GPU, d *devState) {
	g.UUID, g.Name, g.Minor, g.PCIBusID = d.uuid, d.name, d.minor, d.bus
}

func (c *Collector) fillXIDs(g *snapshot.GPU, d *devState) {
	if len(d.xids) == 0 {
		// Watched and quiet is zero events; unwatched stays nil: not measured.
		if c.watching.Load() {
			g.XIDErrors = map[string]uint64{}
		}
		return
	}
	g.XIDErrors = make(map[string]uint64, len(d.xids))
	for code, n := range d.xids {
		g.XIDErrors[strconv.FormatUint(code, 10)] = n
	}
	if d.last != nil {
		g.LastXID = ptr(*d.last)
	}
	// Forget events older than the window, then count the rest per code.
	since := c.cfg.Now().Add(-snapshot.XIDWindow)
	keep := d.recent[:0]
	for _, e := range d.recent {
		if e.at.After(since) {
			keep = append(keep, e)
		}
	}
	d.recent = keep
	for _, e := range d.recent {
		if g.RecentXIDs == nil {
			g.RecentXIDs = map[string]uint64{}
		}
		g.RecentXIDs[strconv.FormatUint(e.code, 10)]++
	}
}

func ptr[T any](v T) *T { return &v }
