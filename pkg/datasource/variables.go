package datasource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
)

// VariableKinds are the values of the variables resource's `kind` parameter, in the order a
// dashboard chains them.
var VariableKinds = []string{"model", "version", "instance", "gpu"}

// maxVariableValues bounds one answer; a template variable with more values is unusable anyway.
const maxVariableValues = 5000

// variableRequest is a parsed `GET variables?kind=…&model=…&instance=…&from=…&to=…`.
type variableRequest struct {
	kind      string
	models    []string // narrows versions (and models, instances) to these models
	instances []string // narrows GPUs to these instances' nodes
	start     time.Time
	end       time.Time
}

// variablesAnswer is the resource's JSON: the values, sorted, and why a list is empty when the
// profile cannot have values of that kind (vLLM has no version label).
type variablesAnswer struct {
	Kind   string   `json:"kind"`
	Values []string `json:"values"`
	// Options pair each model with a text naming its server, when Prometheus holds several
	// servers (the value stays the bare model name).
	Options []variableOption `json:"options,omitempty"`
	Note    string           `json:"note,omitempty"`
}

// variableOption is one value of a template variable and its text.
type variableOption struct {
	Text  string `json:"text"`
	Value string `json:"value"`
}

// serveVariables answers the values of a dashboard template variable.
func serveVariables(ctx context.Context, d *Datasource, req *backend.CallResourceRequest) (int, any) {
	if d.settingsErr != nil {
		return http.StatusBadRequest, errorBody{d.settingsErr.Error()}
	}
	vr, err := parseVariableRequest(req.URL)
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	ans, err := d.variableValues(ctx, vr)
	if err != nil {
		return failure(err)
	}
	return http.StatusOK, ans
}

// VariableKeys are the parameters the variables resource reads; any other is refused.
var VariableKeys = []string{"kind", "model", "instance", "from", "to"}

// parseVariableRequest reads the resource URL's query string. Filters take repeated parameters
// or one value holding "|" (a multi-value template variable), like the query fields do.
func parseVariableRequest(raw string) (variableRequest, error) {
	var vr variableRequest
	q, err := resourceQuery(raw, "variables", VariableKeys...)
	if err != nil {
		return vr, err
	}
	vr.kind = q.Get("kind")
	if !slices.Contains(VariableKinds, vr.kind) {
		return vr, fmt.Errorf("parameter kind must be one of %s, got %q", strings.Join(VariableKinds, ", "), clip.Text(vr.kind, 40))
	}
	vr.models = splitValues(q["model"])
	vr.instances = splitValues(q["instance"])
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &vr.start}, {"to", &vr.end}} {
		s := q.Get(p.name)
		if s == "" {
			continue
		}
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 {
			return vr, fmt.Errorf("parameter %s must be a time in Unix milliseconds, got %q", p.name, clip.Text(s, 40))
		}
		*p.dst = time.UnixMilli(ms).UTC()
	}
	if !vr.start.IsZero() && !vr.end.IsZero() && vr.end.Before(vr.start) {
		return vr, errors.New("parameter to is before from")
	}
	return vr, nil
}

// splitValues reads repeated parameters, each as engine.SplitValues reads one ("a|b" is {a, b},
// each a literal name; "$__all" and empties dropped).
func splitValues(items []string) []string {
	var out []string
	for _, it := range items {
		for _, v := range engine.SplitValues(it) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

func (d *Datasource) variableValues(ctx context.Context, vr variableRequest) (variablesAnswer, error) {
	ans := variablesAnswer{Kind: vr.kind, Values: []string{}}
	if vr.kind == "gpu" {
		selectors, err := engine.GPUSeriesSelectors(nil, vr.instances)
		if err != nil {
			return ans, err
		}
		vals, err := d.labelValues(ctx, "gpu", selectors, vr)
		if err != nil {
			return ans, err
		}
		ans.Values = vals
		return ans, nil
	}
	e, err := d.engineFor(ctx)
	if err != nil {
		return ans, err
	}
	if e.Fleet == nil || len(e.Fleet.Servers) < 2 {
		vals, note, err := d.serverValues(ctx, e, e.Profile, vr, vr.models)
		ans.Values, ans.Note = vals, note
		if ans.Values == nil {
			ans.Values = []string{}
		}
		return ans, err
	}
	// A fleet: every server's values, each server asked with its own labels and only for the
	// chosen models it serves; a model's text names its server.
	var notes []string
	for _, srv := range e.Fleet.Servers {
		models := vr.models
		if len(vr.models) > 0 {
			models = nil
			for _, m := range vr.models {
				if s, ok := e.Fleet.ServerOf(m); ok && s.Profile.Name == srv.Profile.Name {
					models = append(models, m)
				}
			}
			if len(models) == 0 {
				continue
			}
		}
		if vr.kind == "model" && srv.Unlabelled {
			notes = append(notes, fmt.Sprintf("%s: no series carries its model label %q; set the model label of the %s profile", srv.Profile.Title, srv.Profile.ModelLabel, srv.Profile.Name))
			continue
		}
		vals, note, err := d.serverValues(ctx, e, srv.Profile, vr, models)
		if err != nil {
			return ans, fmt.Errorf("%s: %w", srv.Profile.Title, err)
		}
		if note != "" {
			notes = append(notes, srv.Profile.Title+": "+note)
		}
		for _, v := range vals {
			if vr.kind == "model" {
				if s, ok := e.Fleet.ServerOf(v); ok && s.Profile.Name != srv.Profile.Name {
					continue // another server serves it
				}
				ans.Options = append(ans.Options, variableOption{Text: v + " (" + srv.Profile.Name + ")", Value: v})
			}
			ans.Values = append(ans.Values, v)
		}
	}
	slices.SortFunc(ans.Values, naturalCompare)
	ans.Values = slices.Compact(ans.Values)
	slices.SortFunc(ans.Options, func(a, b variableOption) int { return naturalCompare(a.Value, b.Value) })
	ans.Options = slices.CompactFunc(ans.Options, func(a, b variableOption) bool { return a.Value == b.Value })
	ans.Note = strings.Join(notes, "; ")
	return ans, nil
}

// serverValues lists the values of one server's label of the requested kind.
func (d *Datasource) serverValues(ctx context.Context, e *engine.Engine, p profile.Profile, vr variableRequest, models []string) ([]string, string, error) {
	var label string
	switch vr.kind {
	case "model":
		label = p.ModelLabel
	case "version":
		label = p.VersionLabel
	case "instance":
		label = p.InstanceLabel
	}
	if label == "" {
		note := fmt.Sprintf("the %s profile has no %s label", p.Name, vr.kind)
		if p.LabelNote != "" {
			note += ": " + p.LabelNote
		}
		return nil, note, nil
	}
	vr.models = models
	selectors, err := requestSelectors(p, e.Present, vr)
	if err != nil {
		return nil, "", err
	}
	vals, err := d.labelValues(ctx, label, selectors, vr)
	return vals, "", err
}

// labelValues asks Prometheus for a label's values, sorted and bounded.
func (d *Datasource) labelValues(ctx context.Context, label string, selectors []string, vr variableRequest) ([]string, error) {
	vals, err := d.prom.LabelValues(ctx, label, selectors, vr.start, vr.end)
	if err != nil {
		return nil, err
	}
	if len(vals) > maxVariableValues {
		return nil, fmt.Errorf("label %s has %d values, more than the limit of %d: narrow the time range or the filters", label, len(vals), maxVariableValues)
	}
	slices.SortFunc(vals, naturalCompare)
	return slices.Compact(vals), nil
}

// requestSelectors select the series of the profile's request counter, narrowed to the chosen
// models (engine.RequestSelectors; models list every model).
func requestSelectors(p profile.Profile, present map[string]bool, vr variableRequest) ([]string, error) {
	models := vr.models
	if vr.kind == "model" {
		models = nil
	}
	sels, err := engine.RequestSelectors(p, present, models)
	var ce *engine.ConfigError
	if errors.As(err, &ce) {
		return nil, &profileError{ce.Msg}
	}
	return sels, err
}

// naturalCompare orders "2" before "10" and otherwise compares as strings.
func naturalCompare(a, b string) int {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	if aerr == nil && berr == nil {
		return ai - bi
	}
	return strings.Compare(a, b)
}
