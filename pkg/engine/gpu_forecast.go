package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/gpufields"
)

var (
	fieldForecastThreshold = FieldSpec{Name: "threshold", Label: "Threshold", Kind: KindNumber, Default: GPUMemoryCrit, Min: 0.01, Max: 1,
		Doc: "Memory-used ratio to predict."}
	fieldForecastWindow = FieldSpec{Name: "window", Label: "Window", Kind: KindDuration, Default: 30 * time.Minute, Min: 60, Max: 86400,
		Doc: "Trend window."}
	gpuMemForecastSpec = TypeSpec{Name: "gpumem_forecast", Title: "GPU memory forecast", Filters: gpuSelection, Profile: ProfileOptional,
		parse: parseGPUMemForecast, Doc: "Seconds until each GPU’s memory reaches the threshold, from its recent trend.",
		Fields: []FieldSpec{fieldForecastThreshold, fieldForecastWindow}}
)

// Forecast states, the values of the `state` series.
const (
	ForecastStateRising    = 0
	ForecastStateAbove     = 1
	ForecastStateNotRising = 2
	ForecastStateNoData    = 3
)

var forecastMappings = []ValueMapping{
	{Value: ForecastStateRising, Text: "rising", Color: "orange"},
	{Value: ForecastStateAbove, Text: "above threshold", Color: "red"},
	{Value: ForecastStateNotRising, Text: "not rising", Color: "green"},
	{Value: ForecastStateNoData, Text: "no data", Color: "text"},
}

// flatTrend is the smallest change of the memory ratio over the trend window that counts as
// rising: a flat series' least-squares slope is rounding noise (~1e-14 over a window), which
// would otherwise predict a crossing millions of years away.
const flatTrend = 1e-9

// forecastPointsPerWindow is how many points the trend fit aims at per window.
const forecastPointsPerWindow = 10

// gpuMemForecastQuery is the `gpumem_forecast` type: per GPU, the seconds until memory used
// crosses the threshold, from the least-squares trend of memory used / total over the window
// (derive.MemoryForecast); plus the memory ratio and a state series (rising, above, not
// rising, no data).
type gpuMemForecastQuery struct {
	threshold float64
	window    time.Duration
}

func parseGPUMemForecast(_ Common, f Fields) (Runner, error) {
	th, err := fieldForecastThreshold.number(f)
	if err != nil {
		return nil, err
	}
	w, err := fieldForecastWindow.duration(f)
	if err != nil {
		return nil, err
	}
	return gpuMemForecastQuery{threshold: th, window: w}, nil
}

// Run fits the trend on a grid at least as fine as window/10 (the answer does not depend on
// the panel's step) that starts one window before the range. With the warm-up filter, memory
// samples of nodes whose inference servers are loading or warming up are left out of the fit:
// weights being loaded are not a trend.
func (fq gpuMemForecastQuery) Run(ctx context.Context, x *Exec) error {
	x.gpuModelNotice()
	out := x.outGrid()
	fit, err := x.finerGrid(fq.window, fq.window/forecastPointsPerWindow)
	if err != nil {
		return err
	}
	minPoints := derive.DefaultForecastOptions().MinPoints
	if fit.step > fq.window/time.Duration(minPoints) {
		return &LimitError{Msg: fmt.Sprintf("the time range is too long for a %s trend window: the fit would have fewer than %d points per window; shorten the range or widen the window",
			formatDuration(fq.window), minPoints)}
	}
	f := x.gpuFilter()
	var raws []gpuRaw
	var sig nodeSignals
	fns := []func(context.Context) error{func(ctx context.Context) (err error) { raws, err = x.fetchGPU(ctx, GPUMemory, f, fit); return }}
	warm := x.q.WarmupFilter && x.prof.Name != ""
	if x.q.WarmupFilter && !warm {
		x.Notice(Info, "no inference server's metrics were found: the warm-up filter has nothing to go by")
	}
	if warm {
		fns = append(fns, func(ctx context.Context) (err error) {
			sig, err = x.fetchNodeSignals(ctx, f.Nodes(), fit, x.rateWindow(), false, fit.step)
			return
		})
	}
	if err := all(ctx, fns...); err != nil {
		return err
	}
	mem := mergeGPU(GPUMemory, raws)
	if 3*len(mem.keys) > x.limits.MaxSeries {
		return &LimitError{Msg: fmt.Sprintf("the query would return %d series, more than the limit of %d: select fewer nodes (instance) or GPUs (gpu)", 3*len(mem.keys), x.limits.MaxSeries)}
	}
	if len(mem.keys) == 0 {
		x.Notice(Info, gpufields.Of(gpufields.MemUsed).NotMeasured()+f.String())
		return nil
	}
	idx := lastIndex(fit.t, out.t)
	var notRising, noData []GPUKey
	for _, k := range mem.keys {
		ratio := mem.values[k]
		samples := derive.Series{T: fit.t, V: ratio}
		if mask, ok := sig.warming[k.Node]; ok {
			if samples, err = mask.Apply(samples); err != nil {
				return err
			}
		}
		fc, err := derive.MemoryForecast(samples, derive.ForecastOptions{Window: fq.window, Threshold: fq.threshold})
		if err != nil {
			return err
		}
		etaAt, stateAt := fq.judgeAt(fc, idx)
		eta := newSeries("eta", fmt.Sprintf("%s time to %s", k, percentText(fq.threshold)), UnitSeconds, k.Labels(), out.t, etaAt)
		eta.Min = ptr(0)
		memory := gpuSeries(GPUMemory, k, out.t, sampleAt(ratio, idx))
		st := newSeries("state", k.String()+" memory trend", UnitNone, k.Labels(), out.t, stateAt)
		st.Mappings = forecastMappings
		x.Add(eta, memory, st)

		if last := idx[len(idx)-1]; last >= 0 {
			switch fc.Reason[last] {
			case derive.ForecastNotRising:
				notRising = append(notRising, k)
			case derive.ForecastNoData:
				noData = append(noData, k)
			}
		}
	}
	if len(notRising) > 0 {
		x.Notice(Info, fmt.Sprintf("memory is flat or falling at the end of the range, no crossing of %s predicted: %s", percentText(fq.threshold), listKeys(notRising)))
	}
	if len(noData) > 0 {
		x.Notice(Info, fmt.Sprintf("too few memory samples in the last %s to fit a trend: %s", formatDuration(fq.window), listKeys(noData)))
	}
	return nil
}

// judgeAt reads the forecast at the output's points (idx: the fit's point at or before each,
// −1 for none; the fit's grid may be finer): the time to the threshold and the trend's state,
// a crossing too slow to matter (under flatTrend a window) read as not rising. It marks that
// reading in fc too, where the caller looks at the last point.
func (fq gpuMemForecastQuery) judgeAt(fc derive.Forecast, idx []int) (eta, state []float64) {
	eta, state = make([]float64, len(idx)), make([]float64, len(idx))
	for j, i := range idx {
		if i < 0 {
			eta[j], state[j] = math.NaN(), math.NaN()
			continue
		}
		r := fc.Reason[i]
		if r == derive.ForecastCrossing && fc.Slope[i]*fq.window.Seconds() < flatTrend {
			fc.Reason[i], fc.ETA[i] = derive.ForecastNotRising, math.NaN()
			r = derive.ForecastNotRising
		}
		eta[j], state[j] = fc.ETA[i], float64(forecastState(r))
	}
	return eta, state
}

func forecastState(r derive.ForecastReason) int {
	switch r {
	case derive.ForecastCrossing:
		return ForecastStateRising
	case derive.ForecastAbove:
		return ForecastStateAbove
	case derive.ForecastNotRising:
		return ForecastStateNotRising
	}
	return ForecastStateNoData
}

func percentText(ratio float64) string {
	return formatFloat(math.Round(ratio*1000)/10) + " %"
}
