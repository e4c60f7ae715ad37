package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/probeclient"
	"github.com/inferscope/inferscope/pkg/prom"
)

var gpuLiveSpec = TypeSpec{Name: "gpu_live", Title: "GPU live", Filters: gpuSelection, Profile: ProfileUnused, parse: parseGPULive,
	Doc: "A table of every GPU as the probes see it now: state, memory, temperature, power, processes."}

// DefaultProbeTimeout bounds each probe's answer to a gpu_live query: a live view that waits
// longer is no longer live, and the other probes' answers are not held up.
const DefaultProbeTimeout = 3 * time.Second

// gpuLiveQuery is the `gpu_live` type: the configured probes' live snapshots (GET
// /api/v1/gpus), read concurrently, as one table with a row per GPU. A probe that fails adds a
// notice naming it and the reason; the others still answer.
type gpuLiveQuery struct{}

func parseGPULive(Common, Fields) (Runner, error) { return gpuLiveQuery{}, nil }

// GPULiveRow is one GPU of a live snapshot. Readings the GPU does not report are NaN.
type GPULiveRow struct {
	Probe, Node                                                       string
	GPU                                                               int
	UUID, Name, State, Err                                            string
	Util, MemUsed, MemTotal, MemRatio, Temperature, Power, PowerLimit float64
	Throttle                                                          []string // nil: not reported
	Processes                                                         int
	Age                                                               float64 // seconds since the probe collected the snapshot
	CollectedAt                                                       time.Time
}

// ProbeFailure is a probe that did not answer.
type ProbeFailure struct {
	URL    string // without credentials
	Reason string
}

func (f ProbeFailure) String() string { return "probe " + f.URL + ": " + f.Reason }

// ReadGPULive reads every probe's snapshot concurrently, each within timeout, and returns the
// rows of the GPUs the filter selects (a probe's node is its snapshot's hostname; the filter
// also matches the host of the probe's URL) in node and GPU order.
func ReadGPULive(ctx context.Context, hc *http.Client, urls []string, timeout time.Duration, f GPUFilter) ([]GPULiveRow, []ProbeFailure) {
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	client := &probeclient.Client{HTTP: hc}
	rows := make([][]GPULiveRow, len(urls))
	fails := make([]*ProbeFailure, len(urls))
	var wg sync.WaitGroup
	for i, raw := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			snap, err := client.Get(pctx, raw)
			where := prom.RedactURL(raw)
			if err != nil {
				fails[i] = &ProbeFailure{URL: where, Reason: probeReason(err, pctx, timeout)}
				return
			}
			rows[i] = liveRows(where, raw, snap, f)
		}()
	}
	wg.Wait()
	var out []GPULiveRow
	for _, r := range rows {
		out = append(out, r...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].GPU < out[j].GPU
	})
	var failed []ProbeFailure
	for _, f := range fails {
		if f != nil {
			failed = append(failed, *f)
		}
	}
	return out, failed
}

// probeReason is the short cause of a failed snapshot read.
func probeReason(err error, ctx context.Context, timeout time.Duration) string {
	var ue *url.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "the request was cancelled"
	case errors.As(err, &ue):
		return prom.TransportReason(err)
	}
	// probeclient's messages start with "probe <url>: "; the notice names the probe itself.
	msg := err.Error()
	if strings.HasPrefix(msg, "probe ") {
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	}
	return msg
}

func liveRows(where, raw string, s probeclient.Snapshot, f GPUFilter) []GPULiveRow {
	node := s.Hostname
	host := ""
	if u, err := url.Parse(raw); err == nil {
		host = u.Hostname()
	}
	if node == "" {
		node = host
	}
	if !f.matchNode(node) && !f.matchNode(host) {
		return nil
	}
	out := make([]GPULiveRow, 0, len(s.GPUs))
	for _, g := range s.GPUs {
		if len(f.GPUs) > 0 && !slices.Contains(f.GPUs, strconv.Itoa(g.Index)) {
			continue
		}
		r := GPULiveRow{
			Probe: where, Node: node, GPU: g.Index, UUID: g.UUID, Name: g.Name, State: g.State, Err: g.Error,
			Util: f64(g.UtilRatio), MemUsed: u64(g.MemUsedBytes), MemTotal: u64(g.MemTotalBytes), MemRatio: f64(g.MemUsedRatio),
			Temperature: f64(g.TemperatureCelsius), Power: f64(g.PowerWatts), PowerLimit: f64(g.PowerLimitWatts),
			Throttle: g.ThrottleReasons, Processes: len(g.Processes), Age: s.AgeSeconds, CollectedAt: s.CollectedAt,
		}
		if math.IsNaN(r.MemRatio) && r.MemTotal > 0 {
			r.MemRatio = r.MemUsed / r.MemTotal
		}
		out = append(out, r)
	}
	return out
}

func f64(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func u64(p *uint64) float64 {
	if p == nil {
		return math.NaN()
	}
	return float64(*p)
}

func (gpuLiveQuery) Run(ctx context.Context, x *Exec) error {
	x.gpuModelNotice()
	urls := x.e.ProbeURLs
	if len(urls) == 0 {
		x.Notice(Warning, "no probe URLs are configured: add the inferscope-probe addresses in the data source settings (probeUrls)")
		x.AddTable(GPULiveTable(nil))
		return nil
	}
	hc := x.e.ProbeHTTP
	timeout := DefaultProbeTimeout
	if hc != nil && hc.Timeout > 0 {
		timeout = min(timeout, hc.Timeout)
	}
	rows, failed := ReadGPULive(ctx, hc, urls, timeout, x.gpuFilter())
	for _, f := range failed {
		x.Notice(Warning, f.String())
	}
	if len(rows) == 0 && len(failed) < len(urls) {
		x.Notice(Info, "the probes report no GPU"+x.gpuFilter().String())
	}
	x.AddTable(GPULiveTable(rows))
	return nil
}

// GPULiveTable lays the rows out as the gpu_live table.
func GPULiveTable(rows []GPULiveRow) Table {
	n := len(rows)
	str := func(get func(GPULiveRow) string) []string {
		v := make([]string, n)
		for i, r := range rows {
			v[i] = get(r)
		}
		return v
	}
	num := func(get func(GPULiveRow) float64) []float64 {
		v := make([]float64, n)
		for i, r := range rows {
			v[i] = get(r)
		}
		return v
	}
	at := make([]time.Time, n)
	for i, r := range rows {
		at[i] = r.CollectedAt
	}
	return Table{Name: "gpu_live", Columns: []Column{
		{Name: "node", Values: str(func(r GPULiveRow) string { return r.Node })},
		{Name: "gpu", Unit: UnitNone, Values: num(func(r GPULiveRow) float64 { return float64(r.GPU) })},
		{Name: "name", Values: str(func(r GPULiveRow) string { return r.Name })},
		{Name: "state", Values: str(func(r GPULiveRow) string { return r.State })},
		{Name: "util", Unit: UnitPercentUnit, Values: num(func(r GPULiveRow) float64 { return r.Util })},
		{Name: "memory used", Unit: UnitBytes, Values: num(func(r GPULiveRow) float64 { return r.MemUsed })},
		{Name: "memory total", Unit: UnitBytes, Values: num(func(r GPULiveRow) float64 { return r.MemTotal })},
		{Name: "memory used %", Unit: UnitPercentUnit, Values: num(func(r GPULiveRow) float64 { return r.MemRatio })},
		{Name: "temperature", Unit: UnitCelsius, Values: num(func(r GPULiveRow) float64 { return r.Temperature })},
		{Name: "power", Unit: UnitWatt, Values: num(func(r GPULiveRow) float64 { return r.Power })},
		{Name: "power limit", Unit: UnitWatt, Values: num(func(r GPULiveRow) float64 { return r.PowerLimit })},
		{Name: "throttle reasons", Values: str(func(r GPULiveRow) string { return strings.Join(r.Throttle, ", ") })},
		{Name: "processes", Unit: UnitNone, Values: num(func(r GPULiveRow) float64 { return float64(r.Processes) })},
		{Name: "snapshot age", Unit: UnitSeconds, Values: num(func(r GPULiveRow) float64 { return r.Age })},
		{Name: "collected at", Values: at},
		{Name: "uuid", Values: str(func(r GPULiveRow) string { return r.UUID })},
		{Name: "error", Values: str(func(r GPULiveRow) string { return r.Err })},
		{Name: "probe", Values: str(func(r GPULiveRow) string { return r.Probe })},
	}}
}
