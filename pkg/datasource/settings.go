package datasource

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Profiles a user may choose; "auto" detects one from the metric names Prometheus has.
var profileNames = append([]string{"auto"}, profile.Names()...)

// DefaultWarmupWindow is how long after an instance (re)starts its samples count as warm-up.
const DefaultWarmupWindow = 2 * time.Minute

// maxWarmupWindow bounds the setting: a longer "warm-up" would hide real incidents.
const maxWarmupWindow = time.Hour

// Settings is the validated configuration of one data-source instance. It holds no secrets:
// those stay in the SDK's HTTP options.
type Settings struct {
	PrometheusURL string // as configured (may hold a path prefix); never logged with user info
	ProbeURLs     []string
	WarmupWindow  time.Duration
	Profile       string
	ModelLabel    string
	VersionLabel  string
	InstanceLabel string
	// ProfileLabels renames the labels of one profile (keyed by profile name), over the flat
	// modelLabel / versionLabel / instanceLabel, which apply to every profile.
	ProfileLabels map[string]profile.Labels
	// MaxAnswerBytes bounds one Prometheus answer (0 = prom.DefaultMaxAnswerBytes).
	MaxAnswerBytes int64
	// Gateway is the gateway in front of the servers (jsonData.gateway; the zero value: none).
	Gateway gateway.Config
	// Thanos are the dedup / partial_response parameters sent when the server is a Thanos
	// querier (jsonData.thanosDedup, thanosPartialResponse; unset: the querier's defaults).
	Thanos prom.ThanosOptions
}

// Labels is the flat label renames, applied to every profile.
func (s Settings) Labels() profile.Labels {
	return profile.Labels{Model: s.ModelLabel, Version: s.VersionLabel, Instance: s.InstanceLabel}
}

// profileLabelsJSON is one entry of jsonData.profileLabels.
type profileLabelsJSON struct {
	ModelLabel    string `json:"modelLabel"`
	VersionLabel  string `json:"versionLabel"`
	InstanceLabel string `json:"instanceLabel"`
}

// jsonOptions is our part of jsonData.
type jsonOptions struct {
	ProbeURLs     []string `json:"probeUrls"`
	WarmupWindow  string   `json:"warmupWindow"`
	Profile       string   `json:"profile"`
	ModelLabel    string   `json:"modelLabel"`
	VersionLabel  string   `json:"versionLabel"`
	InstanceLabel string   `json:"instanceLabel"`
	// ProfileLabels: {"tgi": {"modelLabel": "model_name"}, ...}
	ProfileLabels map[string]profileLabelsJSON `json:"profileLabels"`
	// MaxAnswerSize: "64MiB", "256MiB", …
	MaxAnswerSize string `json:"maxAnswerSize"`
	// Gateway: {"preset": "ingress-nginx", "modelRegex": "(.+)-svc", ...}
	Gateway *gatewayJSON `json:"gateway"`
	// Thanos' query parameters (docs/stores.md); unset = the querier's own defaults.
	ThanosDedup           *bool `json:"thanosDedup"`
	ThanosPartialResponse *bool `json:"thanosPartialResponse"`
}

// gatewayJSON is jsonData.gateway: the gateway whose upstream time gives the network segment.
type gatewayJSON struct {
	Preset           string            `json:"preset"`
	Metric           string            `json:"metric"`
	Unit             string            `json:"unit"`
	Matchers         map[string]string `json:"matchers"`
	ModelLabel       string            `json:"modelLabel"`
	ModelRegex       string            `json:"modelRegex"`
	ModelReplacement string            `json:"modelReplacement"`
	ModelMap         map[string]string `json:"modelMap"`
	VersionLabel     string            `json:"versionLabel"`
	VersionRegex     string            `json:"versionRegex"`
	InstanceLabel    string            `json:"instanceLabel"`
	InstanceRegex    string            `json:"instanceRegex"`
}

// ParseSettings validates the instance settings and returns every problem it finds in one
// error, each naming the setting and how to fix it.
func ParseSettings(s backend.DataSourceInstanceSettings) (Settings, error) {
	out := Settings{WarmupWindow: DefaultWarmupWindow, Profile: "auto"}
	problems := out.readURL(s.URL)

	var dat map[string]json.RawMessage
	if len(s.JSONData) > 0 && string(s.JSONData) != "null" {
		if err := json.Unmarshal(s.JSONData, &dat); err != nil {
			problems = append(problems, "the data source's JSON settings are not a JSON object: "+err.Error())
			return out, settingsError(problems)
		}
	}
	problems = append(problems, checkSDKFieldTypes(dat)...)
	opts, bad := decodeOptions(dat)
	problems = append(problems, bad...)
	problems = append(problems, out.readProbeURLs(opts.ProbeURLs)...)
	problems = append(problems, out.readWarmupWindow(opts.WarmupWindow)...)
	problems = append(problems, out.readProfile(opts.Profile)...)
	problems = append(problems, out.readLabels(opts)...)
	problems = append(problems, out.readProfileLabels(opts.ProfileLabels)...)
	problems = append(problems, out.readMaxAnswer(opts.MaxAnswerSize)...)
	problems = append(problems, out.readGateway(opts.Gateway)...)
	out.Thanos = prom.ThanosOptions{Dedup: opts.ThanosDedup, PartialResponse: opts.ThanosPartialResponse}
	if len(problems) > 0 {
		return out, settingsError(problems)
	}
	return out, nil
}

// Each step below reads one group of settings into out and returns its problems.

// readURL reads the Prometheus URL.
func (out *Settings) readURL(url string) []string {
	var problems []string
	raw := strings.TrimSpace(url)
	switch {
	case raw == "":
		problems = append(problems, "Prometheus URL is empty: set it in the data source's HTTP section")
	default:
		if err := checkHTTPURL(raw); err != nil {
			problems = append(problems, fmt.Sprintf("Prometheus URL %q is malformed: %s", prom.RedactURL(raw), err))
		} else if err := prom.CheckStoreURL(raw); err != nil {
			problems = append(problems, err.Error())
		} else {
			out.PrometheusURL = raw
		}
	}
	return problems
}

// decodeOptions decodes the JSON settings this data source reads; a value of the wrong JSON
// type is a problem naming what the setting takes.
func decodeOptions(dat map[string]json.RawMessage) (jsonOptions, []string) {
	var problems []string
	var opts jsonOptions
	for key, dst := range map[string]any{
		"probeUrls": &opts.ProbeURLs, "warmupWindow": &opts.WarmupWindow, "profile": &opts.Profile,
		"modelLabel": &opts.ModelLabel, "versionLabel": &opts.VersionLabel, "instanceLabel": &opts.InstanceLabel,
		"profileLabels": &opts.ProfileLabels, "maxAnswerSize": &opts.MaxAnswerSize, "gateway": &opts.Gateway,
		"thanosDedup": &opts.ThanosDedup, "thanosPartialResponse": &opts.ThanosPartialResponse,
	} {
		v, ok := dat[key]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			want := "a string"
			switch key {
			case "probeUrls":
				want = "a list of URLs"
			case "profileLabels":
				want = `an object of label renames per profile, e.g. {"tgi": {"modelLabel": "model_name"}}`
			case "gateway":
				want = `an object, e.g. {"preset": "ingress-nginx", "modelRegex": "(.+)-svc"}`
			case "thanosDedup", "thanosPartialResponse":
				want = "true or false"
			}
			problems = append(problems, fmt.Sprintf("setting %s must be %s, got %s", key, want, clip.Text(string(v), 60)))
		}
	}
	return opts, problems
}

// readGateway reads the gateway and checks its mapping.
func (out *Settings) readGateway(g *gatewayJSON) []string {
	if g == nil || strings.TrimSpace(g.Preset) == "" || g.Preset == "none" {
		return nil
	}
	c := gateway.Config{Preset: strings.TrimSpace(g.Preset), Metric: strings.TrimSpace(g.Metric), Unit: strings.TrimSpace(g.Unit),
		Matchers: g.Matchers,
		Model:    gateway.Rule{Label: g.ModelLabel, Regex: g.ModelRegex, Replacement: g.ModelReplacement, Map: g.ModelMap}}
	if g.VersionLabel != "" || g.VersionRegex != "" {
		c.Version = gateway.Rule{Label: g.VersionLabel, Regex: g.VersionRegex}
	}
	if g.InstanceLabel != "" || g.InstanceRegex != "" {
		c.Instance = gateway.Rule{Label: g.InstanceLabel, Regex: g.InstanceRegex}
	}
	if _, err := gateway.New(c); err != nil {
		return []string{"gateway: " + err.Error()}
	}
	out.Gateway = c
	return nil
}

// readMaxAnswer reads the bound on one Prometheus answer.
func (out *Settings) readMaxAnswer(size string) []string {
	if strings.TrimSpace(size) == "" {
		return nil
	}
	n, err := prom.ParseBytes(size)
	if err != nil {
		return []string{"maxAnswerSize " + err.Error()}
	}
	out.MaxAnswerBytes = n
	return nil
}

// readProbeURLs keeps the well-formed probe URLs, each once.
func (out *Settings) readProbeURLs(urls []string) []string {
	var problems []string
	seen := map[string]bool{}
	for _, p := range urls {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if err := checkHTTPURL(p); err != nil {
			problems = append(problems, fmt.Sprintf("probe URL %q is malformed: %s", prom.RedactURL(p), err))
			continue
		}
		if !seen[p] {
			seen[p] = true
			out.ProbeURLs = append(out.ProbeURLs, p)
		}
	}
	return problems
}

// readWarmupWindow reads the warm-up window (bounded by maxWarmupWindow).
func (out *Settings) readWarmupWindow(window string) []string {
	var problems []string
	if w := strings.TrimSpace(window); w != "" {
		d, err := model.ParseDuration(w)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("warmupWindow %q is not a duration: use a value like \"2m\" or \"90s\"", clip.Text(w, 40)))
		case time.Duration(d) > maxWarmupWindow:
			problems = append(problems, fmt.Sprintf("warmupWindow %q is longer than %s", w, model.Duration(maxWarmupWindow)))
		default:
			out.WarmupWindow = time.Duration(d)
		}
	}
	return problems
}

// readProfile reads the forced metric profile ("auto" when unset).
func (out *Settings) readProfile(name string) []string {
	var problems []string
	if p := strings.TrimSpace(name); p != "" {
		if !slices.Contains(profileNames, p) {
			problems = append(problems, fmt.Sprintf("profile %q is unknown: use one of %s", clip.Text(p, 40), strings.Join(profileNames, ", ")))
		} else {
			out.Profile = p
		}
	}
	return problems
}

// readLabels reads the data source's label renames.
func (out *Settings) readLabels(opts jsonOptions) []string {
	var problems []string
	for _, l := range []struct {
		key string
		val string
		dst *string
	}{
		{"modelLabel", opts.ModelLabel, &out.ModelLabel},
		{"versionLabel", opts.VersionLabel, &out.VersionLabel},
		{"instanceLabel", opts.InstanceLabel, &out.InstanceLabel},
	} {
		v := strings.TrimSpace(l.val)
		if v == "" {
			continue
		}
		if !prom.ValidLabelName(v) {
			problems = append(problems, fmt.Sprintf("%s %q is not a Prometheus label name (letters, digits and _, not starting with a digit)", l.key, clip.Text(v, 40)))
			continue
		}
		*l.dst = v
	}
	return problems
}

// readProfileLabels reads the label renames per profile, in the profiles' name order; a
// profile with any malformed rename keeps none of them.
func (out *Settings) readProfileLabels(perProfile map[string]profileLabelsJSON) []string {
	var problems []string
	names := make([]string, 0, len(perProfile))
	for name := range perProfile {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, err := profile.ByName(name); err != nil {
			problems = append(problems, fmt.Sprintf("profileLabels names profile %q, which is unknown: use one of %s", clip.Text(name, 40), strings.Join(profile.Names(), ", ")))
			continue
		}
		pl := perProfile[name]
		var l profile.Labels
		ok := true
		for _, f := range []struct {
			key, val string
			dst      *string
		}{{"modelLabel", pl.ModelLabel, &l.Model}, {"versionLabel", pl.VersionLabel, &l.Version}, {"instanceLabel", pl.InstanceLabel, &l.Instance}} {
			v := strings.TrimSpace(f.val)
			if v == "" {
				continue
			}
			if !prom.ValidLabelName(v) {
				problems = append(problems, fmt.Sprintf("profileLabels.%s.%s %q is not a Prometheus label name (letters, digits and _, not starting with a digit)", name, f.key, clip.Text(v, 40)))
				ok = false
				continue
			}
			*f.dst = v
		}
		if ok && l != (profile.Labels{}) {
			if out.ProfileLabels == nil {
				out.ProfileLabels = map[string]profile.Labels{}
			}
			out.ProfileLabels[name] = l
		}
	}
	return problems
}

// WarmupWindowText renders the warm-up window the way it is configured ("2m").
func (s Settings) WarmupWindowText() string { return model.Duration(s.WarmupWindow).String() }

// checkSDKFieldTypes guards the SDK's HTTP-settings parser, which type-asserts some jsonData
// fields and would panic on, say, a number where a string belongs.
func checkSDKFieldTypes(dat map[string]json.RawMessage) []string {
	var problems []string
	want := func(key string, kind string) {
		v, ok := dat[key]
		if !ok {
			return
		}
		var err error
		switch kind {
		case "string":
			var s string
			err = json.Unmarshal(v, &s)
		case "bool":
			var b bool
			err = json.Unmarshal(v, &b)
		case "number":
			var f float64
			err = json.Unmarshal(v, &f)
		}
		if err != nil || string(v) == "null" {
			problems = append(problems, fmt.Sprintf("setting %s must be a %s, got %s", key, kind, clip.Text(string(v), 60)))
		}
	}
	for _, k := range []string{"access", "url", "basicAuthUser", "serverName", "sigV4Region", "sigV4AssumeRoleArn", "sigV4AuthType", "sigV4ExternalId", "sigV4Profile"} {
		want(k, "string")
	}
	for _, k := range []string{"basicAuth", "tlsAuth", "tlsAuthWithCACert", "tlsSkipVerify", "sigV4Auth"} {
		want(k, "bool")
	}
	for _, k := range []string{"timeout", "dialTimeout", "httpKeepAlive", "httpTLSHandshakeTimeout", "httpExpectContinueTimeout", "httpMaxConnsPerHost", "httpMaxIdleConns", "httpMaxIdleConnsPerHost", "httpIdleConnTimeout"} {
		if v, ok := dat[k]; ok && isJSONString(v) {
			// Grafana's UI has stored timeouts as strings; the SDK then ignores them.
			continue
		}
		want(k, "number")
	}
	for i := 1; ; i++ {
		key := fmt.Sprintf("httpHeaderName%d", i)
		if _, ok := dat[key]; !ok {
			break
		}
		want(key, "string")
	}
	return problems
}

func isJSONString(v json.RawMessage) bool {
	var s string
	return json.Unmarshal(v, &s) == nil
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err // its text would repeat the URL, password included
		}
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("it must start with http:// or https://")
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("it has no host")
	}
	return nil
}

func settingsError(problems []string) error {
	return &SettingsError{Problems: problems}
}

// SettingsError lists what is wrong with the data source's configuration.
type SettingsError struct{ Problems []string }

func (e *SettingsError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0]
	}
	return "the data source settings have " + fmt.Sprint(len(e.Problems)) + " problems: " + strings.Join(e.Problems, "; ")
}
