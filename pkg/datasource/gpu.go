package datasource

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/engine"
)

// runGPU answers the GPU query types (gpu, gpumem_forecast, gpu_idle_under_traffic, gpu_live).
// Unlike the model types, gpu and gpumem_forecast answer from a Prometheus that holds GPU
// series alone (dcgm-exporter without an inference server's metrics), and gpu_live reads the
// probes without Prometheus at all.
func runGPU(ctx context.Context, d *Datasource, q backend.DataQuery) backend.DataResponse {
	qt := q.QueryType
	var (
		query engine.Query
		err   error
	)
	if qt != "" {
		query, err = engine.ParseAs(qt, q.JSON)
	} else {
		query, err = engine.Parse(q.JSON)
		qt = query.Type
	}
	if err != nil {
		return badRequest(err.Error())
	}
	var e *engine.Engine
	switch qt {
	case "gpu_live":
		e = d.gpuEngine(ctx)
	case "gpu", "gpumem_forecast":
		e, err = d.engineFor(ctx)
		var pe *profileError
		if errors.As(err, &pe) {
			e, err = d.gpuEngine(ctx), nil // no inference server: the GPU series still answer
		}
	default:
		e, err = d.engineFor(ctx)
	}
	if err != nil {
		return engineErrorResponse(err)
	}
	interval := q.Interval
	if interval <= 0 {
		if f, err := engine.ParseFields(q.JSON); err == nil {
			if v, err := f.Number("intervalMs", 0); err == nil && v > 0 {
				interval = time.Duration(v) * time.Millisecond
			}
		}
	}
	res, err := e.Run(ctx, query, engine.Range{Start: q.TimeRange.From, End: q.TimeRange.To, MinStep: interval, MaxPoints: int(q.MaxDataPoints)})
	if err != nil {
		return engineErrorResponse(err)
	}
	if len(res.Tables) > 0 && len(res.Series) == 0 {
		return backend.DataResponse{Frames: gpuTableFrames(q.RefID, res)}
	}
	return backend.DataResponse{Frames: engineFrames(q.RefID, query.LegendFormat, res)}
}

// gpuEngine is an engine without a metric profile: enough for GPU series and probes.
func (d *Datasource) gpuEngine(ctx context.Context) *engine.Engine {
	c := d.engineConfig()
	c.NoProfile, c.History = true, nil
	e, _ := engine.New(ctx, c) // without a profile nothing is read, nothing fails
	return e
}

// gpuTableFrames makes one table frame per engine table, notices on the first. NaN readings
// (not reported by the GPU) become nulls.
func gpuTableFrames(refID string, res *engine.Result) data.Frames {
	frames := make(data.Frames, 0, len(res.Tables))
	for _, t := range res.Tables {
		f := data.NewFrame(t.Name)
		f.RefID = refID
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTable}
		for _, c := range t.Columns {
			var field *data.Field
			switch v := c.Values.(type) {
			case []string:
				field = data.NewField(c.Name, nil, v)
			case []float64:
				vals := make([]*float64, len(v))
				for i, x := range v {
					if !math.IsNaN(x) && !math.IsInf(x, 0) {
						vals[i] = &x
					}
				}
				field = data.NewField(c.Name, nil, vals)
			case []time.Time:
				field = data.NewField(c.Name, nil, v)
			case []bool:
				field = data.NewField(c.Name, nil, v)
			default:
				continue
			}
			if c.Unit != "" {
				field.Config = &data.FieldConfig{Unit: c.Unit}
			}
			f.Fields = append(f.Fields, field)
		}
		frames = append(frames, f)
	}
	for _, n := range res.Notices {
		frames[0].Meta.Notices = append(frames[0].Meta.Notices, data.Notice{Severity: noticeSeverity(n.Severity), Text: n.Text})
	}
	return frames
}
