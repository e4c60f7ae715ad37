// Package specgen writes what is generated from the engine's query-type registry: the
// frontend's query-type list and editor defaults, the field tables of docs/queries*.md and the
// per-server tables of names read (from pkg/profile), between marker comments; the prose around
// them is kept. Run `go generate
// ./pkg/engine/specgen`; a test fails when a generated file is stale.
package specgen

//go:generate go run ../../cmd/inferscope-gen -root ../../..

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Generated files, relative to the repository root.
const (
	TSFile      = "src/datasource/queryTypes.gen.ts"
	DocsFile    = "docs/queries.md"
	GPUDocsFile = "docs/queries-gpu.md"
	Command     = "go generate ./pkg/engine/specgen"
	tableCommon = "common"
	// tableGPUNames is the table of GPU metric names read (pkg/gpufields).
	tableGPUNames = "gpu_names"
	// tableGatewayNames is the table of gateway histograms read (pkg/gateway's presets).
	tableGatewayNames = "gateway_names"
	markerPrefix      = "<!-- fields:"
	markerEnd         = "<!-- /fields -->"
)

// Files returns the content every generated file should have, given the repository root (the
// docs are read there: only their tables are rewritten).
func Files(root string) (map[string][]byte, error) {
	out := map[string][]byte{TSFile: TypeScript()}
	for _, name := range []string{DocsFile, GPUDocsFile} {
		doc, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return nil, err
		}
		if out[name], err = Docs(doc); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if out[name], err = profileDocs(out[name]); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return out, nil
}

// editorKind maps a field kind to the editor's input, "" for fields the editor does not show.
func editorKind(k engine.Kind) string {
	switch k {
	case engine.KindNumber, engine.KindInt:
		return "number"
	case engine.KindNumbers:
		return "numbers"
	case engine.KindDuration:
		return "duration"
	case engine.KindChoice:
		return "choice"
	case engine.KindChoices:
		return "multichoice"
	}
	return ""
}

// jsString writes s as a JavaScript string literal.
func jsString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// TypeScript writes the frontend's query-type list.
func TypeScript() []byte {
	var b strings.Builder
	b.WriteString("// Code generated from the engine's query-type registry (pkg/engine); DO NOT EDIT.\n")
	b.WriteString("// Regenerate with: " + Command + "\n\n")
	specs := engine.Specs()
	b.WriteString("/** Every query type the backend serves, in picker order (names are a public contract). */\n")
	b.WriteString("export const QUERY_TYPE_NAMES = [\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "  %s,\n", jsString(s.Name))
	}
	b.WriteString("] as const;\n\n")
	b.WriteString("export type QueryType = (typeof QUERY_TYPE_NAMES)[number];\n\n")
	fmt.Fprintf(&b, "/** The type of a query that names none. */\nexport const DEFAULT_QUERY_TYPE: QueryType = %s;\n\n", jsString(engine.DefaultType))
	b.WriteString(`/** One type-specific option of a query type, as the backend reads it (docs/queries*.md). */
export interface OptionSpec {
  key: string;
  label: string;
  kind: 'number' | 'numbers' | 'duration' | 'choice' | 'multichoice';
  /** The backend's default, shown as the placeholder. */
  placeholder: string;
  description: string;
  choices?: string[];
}

export interface QueryTypeSpec {
  value: QueryType;
  label: string;
  /** What the series mean, in one sentence. */
  description: string;
  /** Which selection fields apply. */
  filters: Array<'model' | 'version' | 'instance' | 'gpu'>;
  options: OptionSpec[];
}

`)
	b.WriteString("export const GENERATED_QUERY_TYPES: QueryTypeSpec[] = [\n")
	for _, s := range specs {
		b.WriteString("  {\n")
		fmt.Fprintf(&b, "    value: %s,\n    label: %s,\n    description: %s,\n", jsString(s.Name), jsString(s.Title), jsString(s.Doc))
		filters := make([]string, len(s.Filters))
		for i, f := range s.Filters {
			filters[i] = jsString(f)
		}
		fmt.Fprintf(&b, "    filters: [%s],\n", strings.Join(filters, ", "))
		b.WriteString("    options: [")
		n := 0
		for _, f := range s.Fields {
			kind := editorKind(f.Kind)
			if kind == "" || f.Label == "" {
				continue
			}
			if n == 0 {
				b.WriteString("\n")
			}
			n++
			b.WriteString("      {\n")
			fmt.Fprintf(&b, "        key: %s,\n        label: %s,\n        kind: %s,\n        placeholder: %s,\n        description: %s,\n",
				jsString(f.Name), jsString(f.Label), jsString(kind), jsString(f.DefaultString()), jsString(f.Doc))
			if len(f.Allowed) > 0 {
				choices := make([]string, len(f.Allowed))
				for i, c := range f.Allowed {
					choices[i] = jsString(c)
				}
				fmt.Fprintf(&b, "        choices: [%s],\n", strings.Join(choices, ", "))
			}
			b.WriteString("      },\n")
		}
		if n > 0 {
			b.WriteString("    ")
		}
		b.WriteString("],\n  },\n")
	}
	b.WriteString("];\n")
	return []byte(b.String())
}

// Table writes the field table of a query type ("common" for the shared fields).
func Table(name string) (string, error) {
	var fields []engine.FieldSpec
	if name == tableGPUNames {
		return gpuNamesTable()
	}
	if name == tableGatewayNames {
		return gatewayNamesTable(), nil
	}
	if name == tableCommon {
		fields = engine.CommonFields()
	} else {
		s, ok := engine.Spec(name)
		if !ok {
			return "", fmt.Errorf("no query type %q", name)
		}
		fields = s.Fields
	}
	var b strings.Builder
	b.WriteString("| field | type | default | meaning |\n|---|---|---|---|\n")
	for _, f := range fields {
		def := f.DefaultString()
		if def != "" && (f.Default != nil || f.Kind == engine.KindDuration) {
			def = "`" + def + "`"
		}
		if f.Kind == engine.KindNumbers && f.Default != nil {
			def = "`[" + strings.ReplaceAll(f.DefaultString(), " ", "") + "]`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Name, cell(f.TypeString()), cell(def), cell(f.Doc))
	}
	return b.String(), nil
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

var markerRE = regexp.MustCompile(`(?s)<!-- fields:([a-z_]+) -->\n.*?<!-- /fields -->`)

// Docs rewrites every field table of a document between its markers:
//
//	<!-- fields:latency -->
//	…generated…
//	<!-- /fields -->
func Docs(doc []byte) ([]byte, error) {
	var err error
	out := markerRE.ReplaceAllFunc(doc, func(m []byte) []byte {
		name := string(markerRE.FindSubmatch(m)[1])
		t, terr := Table(name)
		if terr != nil && err == nil {
			err = terr
		}
		return []byte(markerPrefix + name + " -->\n" + t + markerEnd)
	})
	if err != nil {
		return nil, err
	}
	if n := bytes.Count(doc, []byte(markerPrefix)); n != len(markerRE.FindAll(doc, -1)) {
		return nil, fmt.Errorf("a %sNAME --> marker has no %s after it", markerPrefix, markerEnd)
	}
	return out, nil
}

// gpuNamesTable lists every GPU metric name the engine and the alert renderings read, per
// signal, exporter and release, with the factor to the signal's unit.
func gpuNamesTable() (string, error) {
	var b strings.Builder
	b.WriteString("| signal | name | exporter | releases | × to the unit |\n|---|---|---|---|---|\n")
	for _, f := range gpufields.Fields {
		title := f.Title + " (" + f.Unit + ")"
		if f.Enable != "" {
			title += "; off in dcgm-exporter's default counters file: enable `" + f.Enable + "`"
		}
		for i, n := range f.Names {
			if i > 0 {
				title = "″"
			}
			// The fixed matchers tell names of one metric apart (the probe's ECC counter's type).
			name, err := prom.Selector(n.Metric, prom.EqAll(n.Matchers)...)
			if err != nil {
				return "", fmt.Errorf("GPU name %s: %w", n.Metric, err)
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", title, name, n.Exporter, n.Versions, strconv.FormatFloat(n.Scale, 'g', -1, 64))
		}
	}
	return b.String(), nil
}

// gatewayNamesTable lists the gateway presets: the histogram each reads, its unit, fixed
// matchers, default model label and the labels it carries.
func gatewayNamesTable() string {
	var b strings.Builder
	b.WriteString("| preset | histogram (base name) | unit | fixed matchers | model from (default) | labels | notes |\n|---|---|---|---|---|---|---|\n")
	code := func(s string) string {
		if s == "" {
			return "—"
		}
		return "`" + s + "`"
	}
	for _, p := range gateway.Presets {
		var ms []string
		for _, k := range slices.Sorted(maps.Keys(p.Matchers)) {
			ms = append(ms, fmt.Sprintf("`%s=%q`", k, p.Matchers[k]))
		}
		var ls []string
		for _, l := range p.Labels {
			ls = append(ls, "`"+l+"`")
		}
		metric, model := code(p.Metric), code(p.Model.Label)
		if p.Name == gateway.Custom {
			metric, model = "`metric` (required)", "`modelLabel` (required)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", p.Name, metric, p.Unit, orDash(strings.Join(ms, ", ")),
			model, orDash(strings.Join(ls, ", ")), cell(p.Note))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// Tables lists the tables a document holds, in order.
func Tables(doc []byte) []string {
	var out []string
	for _, m := range markerRE.FindAllSubmatch(doc, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// Documented reports whether every query type with fields has its table in one of the docs.
func Documented(docs ...[]byte) error {
	var have []string
	for _, d := range docs {
		have = append(have, Tables(d)...)
	}
	for _, s := range engine.Specs() {
		if len(s.Fields) > 0 && !slices.Contains(have, s.Name) {
			return fmt.Errorf("query type %s has fields but no <!-- fields:%s --> table in the docs", s.Name, s.Name)
		}
	}
	if !slices.Contains(have, tableCommon) {
		return fmt.Errorf("the docs have no <!-- fields:%s --> table", tableCommon)
	}
	return nil
}
