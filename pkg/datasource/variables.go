package datasource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// VariableKinds are the values of the variables resource's `kind` parameter, in the order a
// dashboard chains them.
var VariableKinds = []string{"model", "version", "instance", "gpu"}

// gpuValueMetrics are the GPU series whose `gpu` label lists a node's GPUs, in the probe's and
// in dcgm-exporter's naming.
var gpuValueMetrics = []string{"inferscope_gpu_utilization_ratio", "inferscope_gpu_memory_used_bytes", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"}

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
	Note   string   `json:"note,omitempty"`
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

// parseVariableRequest reads the resource URL's query string. Filters take repeated parameters
// or one value holding "|" (a multi-value template variable), like the query fields do.
func parseVariableRequest(raw string) (variableRequest, error) {
	var vr variableRequest
	q := url.Values{}
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		var err error
		if q, err = url.ParseQuery(raw[i+1:]); err != nil {
			return vr, fmt.Errorf("the variables request's query string is malformed: %v", err)
		}
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
		if err != nil || ms <= 0 {
			return vr, fmt.Errorf("parameter %s must be a time in Unix milliseconds, got %q", p.name, clip.Text(s, 40))
		}
		*p.dst = time.UnixMilli(ms).UTC()
	}
	if !vr.start.IsZero() && !vr.end.IsZero() && vr.end.Before(vr.start) {
		return vr, errors.New("parameter to is before from")
	}
	return vr, nil
}

// splitValues splits "a|b" items, drops empties, duplicates and Grafana's "All" markers.
func splitValues(items []string) []string {
	var out []string
	for _, it := range items {
		for _, v := range strings.Split(it, "|") {
			if v == "" || v == "$__all" || slices.Contains(out, v) {
				continue
			}
			out = append(out, v)
		}
	}
	return out
}

func (d *Datasource) variableValues(ctx context.Context, vr variableRequest) (variablesAnswer, error) {
	ans := variablesAnswer{Kind: vr.kind, Values: []string{}}
	var (
		label     string
		selectors []string
	)
	if vr.kind == "gpu" {
		label = "gpu"
		var err error
		if selectors, err = gpuValueSelectors(vr.instances); err != nil {
			return ans, err
		}
	} else {
		e, err := d.engineFor(ctx)
		if err != nil {
			return ans, err
		}
		p := e.Profile
		switch vr.kind {
		case "model":
			label = p.ModelLabel
		case "version":
			label = p.VersionLabel
		case "instance":
			label = p.InstanceLabel
		}
		if label == "" {
			ans.Note = fmt.Sprintf("the %s profile has no %s label", p.Name, vr.kind)
			if p.LabelNote != "" {
				ans.Note += ": " + p.LabelNote
			}
			return ans, nil
		}
		if selectors, err = requestSelectors(p, e.Present, vr); err != nil {
			return ans, err
		}
	}
	vals, err := d.prom.LabelValues(ctx, label, selectors, vr.start, vr.end)
	if err != nil {
		return ans, err
	}
	if len(vals) > maxVariableValues {
		return ans, fmt.Errorf("label %s has %d values, more than the limit of %d: narrow the time range or the filters", label, len(vals), maxVariableValues)
	}
	slices.SortFunc(vals, naturalCompare)
	ans.Values = slices.Compact(vals)
	return ans, nil
}

// requestSelectors select the series of the profile's request counter (every model, version and
// instance the server serves appears there), narrowed to the chosen models.
func requestSelectors(p profile.Profile, present map[string]bool, vr variableRequest) ([]string, error) {
	m, ok, why := p.Resolve(profile.Requests, present)
	if !ok {
		return nil, &profileError{"the " + p.Name + " profile cannot list requests: " + why}
	}
	var ms []prom.Matcher
	if len(vr.models) > 0 && vr.kind != "model" && p.ModelLabel != "" && !m.PerInstance {
		ms = append(ms, prom.In(p.ModelLabel, vr.models...))
	}
	for k, v := range m.Matchers {
		ms = append(ms, prom.Eq(k, v))
	}
	metrics := m.Metrics
	if m.Kind == profile.Histogram || m.Kind == profile.Summary {
		metrics = make([]string, len(m.Metrics))
		for i, name := range m.Metrics {
			metrics[i] = name + "_count"
		}
	}
	out := make([]string, 0, len(metrics))
	for _, name := range metrics {
		sel, err := prom.Selector(name, ms...)
		if err != nil {
			return nil, err
		}
		out = append(out, sel)
	}
	return out, nil
}

// gpuValueSelectors select the GPU series of the instances' nodes: one selector per label a
// node may come from (engine.GPUNode's rule); Prometheus answers their union.
func gpuValueSelectors(instances []string) ([]string, error) {
	base := []prom.Matcher{prom.In("__name__", gpuValueMetrics...)}
	nodes := engine.GPUFilter{Instances: instances}.Nodes()
	if len(nodes) == 0 {
		sel, err := prom.Selector("", base...)
		return []string{sel}, err
	}
	var out []string
	for _, l := range []string{"node", "Hostname", "hostname"} {
		sel, err := prom.Selector("", append(slices.Clone(base), prom.In(l, nodes...))...)
		if err != nil {
			return nil, err
		}
		out = append(out, sel)
	}
	alts := make([]string, len(nodes))
	for i, n := range nodes {
		alts[i] = prom.RegexEscape(n)
	}
	sel, err := prom.Selector("", append(slices.Clone(base), prom.Regex("instance", "(?:"+strings.Join(alts, "|")+")(?::[0-9]+)?"))...)
	if err != nil {
		return nil, err
	}
	return append(out, sel), nil
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
