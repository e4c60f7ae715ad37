package datasource

import (
	"context"
	"math"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/engine"
)

// gpuEngine is an engine without a metric profile: enough for GPU series, the probes and
// PromQL passthrough (the types whose spec does not need the profile).
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
