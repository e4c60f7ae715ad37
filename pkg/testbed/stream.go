package testbed

import (
	"math"
	"sort"
	"sync"
	"time"
)

// A stream is one (instance, model, version) series set. Its life is cut into pieces at every
// instant where something changes (incident edges, restarts and warm-up steps, canary deploy,
// UTC midnight for the day-to-day latency scale); inside a piece the regime and the traffic
// multiplier are constant, so cumulative counters have a closed form: the traffic integral of
// each piece times the regime's per-request expectation.
type stream struct {
	instance, model, version string
	m                        *modelSpec
	canary                   bool
	regs                     []*regime // local regime list; pieces index into it
	pieces                   []piece

	mu     sync.Mutex
	tables map[string]*linearTable
}

type piece struct {
	start    float64 // unix seconds
	reg      int     // index into stream.regs
	qpsScale float64 // requests/s before the diurnal shape; 0 when not serving
	// prefix holds, per local regime, the traffic integral (requests) from the start of the
	// current process to the start of this piece.
	prefix []float64
}

const (
	daySeconds   = 86400.0
	weekSeconds  = 7 * daySeconds
	diurnalAmp   = 0.5  // peak/trough = 1.5/0.5 = 3
	weeklyAmp    = 0.06 // day-to-day traffic ripple; averages to 0 over any 7 consecutive days
	dayLatAmp    = 0.03 // day-to-day latency scale; averages to 1 over any 7 consecutive days
	horizonAfter = 24 * time.Hour
)

var (
	omegaDay  = 2 * math.Pi / daySeconds
	omegaWeek = 2 * math.Pi / weekSeconds
)

// diurnal is the traffic shape (mean ≈ 1): daily cosine peaking at peakHour UTC times a weekly
// ripple.
func (m *modelSpec) diurnal(t float64) float64 {
	a := omegaDay * (t - m.peakHour*3600)
	b := omegaWeek*t + m.weekPhase
	return (1 + diurnalAmp*math.Cos(a)) * (1 + weeklyAmp*math.Sin(b))
}

// diurnalIntegral is ∫ diurnal over [t0, t1], in closed form.
func (m *modelSpec) diurnalIntegral(t0, t1 float64) float64 {
	p := m.peakHour * 3600
	A, B := diurnalAmp, weeklyAmp
	f := func(t float64) float64 { // antiderivative without the linear term
		a := omegaDay * (t - p)
		b := omegaWeek*t + m.weekPhase
		v := A*math.Sin(a)/omegaDay - B*math.Cos(b)/omegaWeek
		// cos a · sin b = ½[sin(b+a) + sin(b−a)]
		v += A * B / 2 * (-math.Cos(b+a)/(omegaWeek+omegaDay) - math.Cos(b-a)/(omegaWeek-omegaDay))
		return v
	}
	return (t1 - t0) + f(t1) - f(t0)
}

// dayScale is the per-UTC-day latency scale of a model.
func (m *modelSpec) dayScale(t float64) float64 {
	// Only the day of the week matters, so regimes repeat every week.
	day := math.Mod(math.Floor(t/daySeconds), 7)
	return 1 + dayLatAmp*math.Sin(2*math.Pi*day/7+m.dayPhase)
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func (s *Scenario) buildStreams() {
	s.streams = nil
	for _, in := range s.instances {
		for _, m := range s.models {
			s.streams = append(s.streams, s.newStream(in, m, m.stable, false))
			if m.canaryInstance == in.name {
				s.streams = append(s.streams, s.newStream(in, m, m.canary, true))
			}
		}
	}
	if s.ext != nil {
		s.streams = append(s.streams, s.ext.versionStreams(s)...)
	}
}

func (s *Scenario) newStream(in instanceSpec, m *modelSpec, version string, canary bool) *stream {
	st := &stream{instance: in.name, model: m.name, version: version, m: m, canary: canary}
	first := in.starts[0]
	if canary && !m.canarySince.IsZero() && m.canarySince.After(first) {
		first = m.canarySince
	}
	if s.ext != nil {
		if since, ok := s.ext.since(in.name, m.name, version); ok {
			first = since
		}
	}
	horizon := s.end.Add(horizonAfter)

	cuts := map[float64]bool{unix(first): true}
	add := func(t time.Time) {
		if t.After(first) && t.Before(horizon) {
			cuts[unix(t)] = true
		}
	}
	for _, rs := range in.starts {
		add(rs)
		for d := LoadDuration; d <= LoadDuration+WarmupDuration; d += 30 * time.Second {
			add(rs.Add(d))
		}
	}
	for _, inc := range s.incidents {
		if inc.Instance == in.name {
			add(inc.Start)
			add(inc.End)
		}
	}
	if !m.canarySince.IsZero() {
		add(m.canarySince)
	}
	if s.ext != nil {
		for _, c := range s.ext.cuts(in.name) {
			add(c)
		}
	}
	for d := first.Truncate(24 * time.Hour).Add(24 * time.Hour); d.Before(horizon); d = d.Add(24 * time.Hour) {
		add(d)
	}
	starts := make([]float64, 0, len(cuts))
	for c := range cuts {
		starts = append(starts, c)
	}
	sort.Float64s(starts)

	local := map[*regime]int{}
	for _, u := range starts {
		t := time.Unix(0, int64(math.Round(u*1e9))).UTC()
		key, scale := s.conditions(in, m, version, canary, t)
		r := s.regimeFor(m, key)
		idx, ok := local[r]
		if !ok {
			idx = len(st.regs)
			local[r] = idx
			st.regs = append(st.regs, r)
		}
		st.pieces = append(st.pieces, piece{start: u, reg: idx, qpsScale: scale})
	}

	// Prefix integrals, reset at every process start.
	restarts := map[float64]bool{}
	for _, rs := range in.starts {
		restarts[unix(rs)] = true
	}
	acc := make([]float64, len(st.regs))
	for i := range st.pieces {
		p := &st.pieces[i]
		if restarts[p.start] {
			acc = make([]float64, len(st.regs))
		}
		p.prefix = append([]float64(nil), acc...)
		if i+1 < len(st.pieces) {
			acc[p.reg] += p.qpsScale * m.diurnalIntegral(p.start, st.pieces[i+1].start)
		}
	}
	return st
}

// conditions decides the regime and the traffic scale that hold from t on.
func (s *Scenario) conditions(in instanceSpec, m *modelSpec, version string, canary bool, t time.Time) (regimeKey, float64) {
	u := unix(t)
	k := regimeKey{model: m.name, canary: canary, dayScale: m.dayScale(u), warm: 1}
	warm := s.WarmupFactor(in.name, t)
	if warm == 0 {
		k.restarting = true
	} else {
		k.warm = warm
	}
	_, k.surge = s.incidentAt(QueueSurge, in.name, m.name, version, t)
	_, k.slowdown = s.incidentAt(ComputeSlowdown, in.name, m.name, version, t)
	_, k.gpuIdle = s.incidentAt(GPUIdle, in.name, m.name, version, t)
	_, k.netJitter = s.incidentAt(NetworkJitter, in.name, m.name, version, t)

	scale := m.baseQPS
	canaryOn := in.name == m.canaryInstance && (m.canarySince.IsZero() || !t.Before(m.canarySince))
	switch {
	case canary && !canaryOn:
		scale = 0
	case canary:
		scale *= m.canaryShare
	case canaryOn:
		scale *= 1 - m.canaryShare
	}
	if k.surge {
		scale *= surgeTraffic
	}
	if s.ext != nil {
		s.ext.conditions(&k, &scale, in.name, m, version, t)
	}
	if k.restarting {
		scale = 0
		k.warm = 1
	}
	return k, scale
}

// pieceAt returns the index of the piece holding t, or -1 before the stream exists.
func (st *stream) pieceAt(u float64) int {
	return sort.Search(len(st.pieces), func(i int) bool { return st.pieces[i].start > u }) - 1
}

// qps is the instantaneous expected request rate.
func (st *stream) qps(t time.Time) float64 {
	u := unix(t)
	k := st.pieceAt(u)
	if k < 0 {
		return 0
	}
	return st.pieces[k].qpsScale * st.m.diurnal(u)
}

// regimeAt is the regime in force at t (nil before the stream exists).
func (st *stream) regimeAt(t time.Time) *regime {
	k := st.pieceAt(unix(t))
	if k < 0 {
		return nil
	}
	return st.regs[st.pieces[k].reg]
}

// A linearTable makes a cumulative value cheap to evaluate: every exposed counter is linear in
// the per-regime exposures, so its value at the start of each piece is precomputed and only the
// current piece's partial integral is added at evaluation time.
type linearTable struct {
	perRegime [][]float64 // per local regime: contribution per request
	prefix    [][]float64 // per piece: value accumulated since the process start
}

// table returns (building once) the linear table named key with per-request vectors per(r).
func (st *stream) table(key string, per func(*regime) []float64) *linearTable {
	st.mu.Lock()
	defer st.mu.Unlock()
	if tb, ok := st.tables[key]; ok {
		return tb
	}
	tb := &linearTable{}
	for _, r := range st.regs {
		tb.perRegime = append(tb.perRegime, per(r))
	}
	dim := len(tb.perRegime[0])
	for _, p := range st.pieces {
		v := make([]float64, dim)
		for r, e := range p.prefix {
			if e != 0 {
				for j, c := range tb.perRegime[r] {
					v[j] += e * c
				}
			}
		}
		tb.prefix = append(tb.prefix, v)
	}
	if st.tables == nil {
		st.tables = map[string]*linearTable{}
	}
	st.tables[key] = tb
	return tb
}

// eval returns the table's cumulative value at t (zeros before the stream exists).
func (st *stream) eval(tb *linearTable, t time.Time) []float64 {
	out := make([]float64, len(tb.perRegime[0]))
	u := unix(t)
	k := st.pieceAt(u)
	if k < 0 {
		return out
	}
	p := &st.pieces[k]
	e := p.qpsScale * st.m.diurnalIntegral(p.start, u)
	for j, c := range tb.perRegime[p.reg] {
		out[j] = tb.prefix[k][j] + e*c
	}
	return out
}

// cumulative is the exposed cumulative value of a per-request expectation f, named key.
func (st *stream) cumulative(t time.Time, key string, f func(*regime) float64) float64 {
	tb := st.table(key, func(r *regime) []float64 { return []float64{f(r)} })
	return st.eval(tb, t)[0]
}

// histogram returns cumulative bucket counts for bounds, the observation count and the sum;
// key is boundsKey(g, bounds).
func (st *stream) histogram(g Segment, key string, bounds []float64, t time.Time) (cum []float64, count, sum float64) {
	tb := st.table(key, func(r *regime) []float64 {
		obs := r.perRequest(g)
		v := make([]float64, 0, len(bounds)+2)
		for _, p := range r.bucketProbs(g, key, bounds) {
			v = append(v, obs*p)
		}
		return append(v, obs, obs*r.mean(g))
	})
	v := st.eval(tb, t)
	n := len(bounds)
	return v[:n:n], v[n], v[n+1]
}

func (s *Scenario) streamsFor(instance, model, version string) []*stream {
	var out []*stream
	for _, st := range s.streams {
		if (instance == "" || st.instance == instance) && (model == "" || st.model == model) && (version == "" || st.version == version) {
			out = append(out, st)
		}
	}
	return out
}
