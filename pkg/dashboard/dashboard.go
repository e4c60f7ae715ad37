// Package dashboard reads the dashboards in dashboards/ as data: their rows, panels, query
// targets, template variables and links, so tests can hold them to the data source's contract.
package dashboard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// UID is the overview dashboard's uid; alert rules link to it.
const UID = "inferscope-overview"

// LatencyPanelID is the id of the overview's P99 latency panel, the alert rules' panel link.
const LatencyPanelID = 13

// GPUMemoryPanelID is the GPU row's anchor panel, where the GPU drill-down links land.
const GPUMemoryPanelID = 41

// Dashboard is the part of a dashboard's JSON the checks read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Inputs     []Input `json:"__inputs"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []Annotation `json:"list"`
	} `json:"annotations"`
	Links []Link `json:"links"`
	raw   json.RawMessage
}

// Input is an import-time input (`__inputs`).
type Input struct {
	Name, Type, PluginID string
}

// Panel is a panel or a row.
type Panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  *DataSourceRef `json:"datasource"`
	Targets     []Target       `json:"targets"`
	Panels      []Panel        `json:"panels"` // a collapsed row's panels
	FieldConfig struct {
		Defaults struct {
			Links []Link `json:"links"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Links []Link `json:"links"`
}

// DataSourceRef names a data source by type and uid.
type DataSourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is a query as the dashboard stores it: every key, as JSON.
type Target map[string]json.RawMessage

// String returns a string field, "" when absent or not a string.
func (t Target) String(key string) string {
	var s string
	_ = json.Unmarshal(t[key], &s)
	return s
}

// Datasource returns the target's data-source reference, nil when absent.
func (t Target) Datasource() *DataSourceRef {
	var r *DataSourceRef
	if json.Unmarshal(t["datasource"], &r) != nil {
		return nil
	}
	return r
}

// Variable is a template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *DataSourceRef  `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
}

// Annotation is an annotation query.
type Annotation struct {
	Name       string         `json:"name"`
	BuiltIn    int            `json:"builtIn"`
	Datasource *DataSourceRef `json:"datasource"`
	Target     Target         `json:"target"`
}

// Link is a dashboard, panel or data link.
type Link struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Load reads one dashboard file.
func Load(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d.raw = b
	return &d, nil
}

// Dir is the repository's dashboards/ folder.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "dashboards")
}

// Raw is the file's JSON as read.
func (d *Dashboard) Raw() []byte { return d.raw }

// Rows are the row panels in order (top level).
func (d *Dashboard) Rows() []Panel {
	var out []Panel
	for _, p := range d.Panels {
		if p.Type == "row" {
			out = append(out, p)
		}
	}
	return out
}

// QueryPanels are every panel that is not a row, collapsed rows' panels included.
func (d *Dashboard) QueryPanels() []Panel {
	var out []Panel
	for _, p := range d.Panels {
		if p.Type == "row" {
			out = append(out, p.Panels...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// AllLinks are the dashboard's links, panel links and data links.
func (d *Dashboard) AllLinks() []Link {
	out := append([]Link(nil), d.Links...)
	for _, p := range d.QueryPanels() {
		out = append(out, p.Links...)
		out = append(out, p.FieldConfig.Defaults.Links...)
	}
	return out
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\$([A-Za-z0-9_]+)`)

// VariableRefs lists the template variables text refers to ($name, ${name}, ${name:format}),
// Grafana's built-ins ($__…) left out.
func VariableRefs(text string) []string {
	var out []string
	for _, m := range varRef.FindAllStringSubmatch(text, -1) {
		name := m[1] + m[2]
		if !strings.HasPrefix(name, "__") {
			out = append(out, name)
		}
	}
	return out
}
