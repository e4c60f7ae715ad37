package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/pkg/gateway"
)

// gatewayFlags configure the gateway in front of the servers, whose upstream time gives the
// network segment of split and triage's network cause.
type gatewayFlags struct {
	preset, metric, unit, match string
	model, version, instance    ruleFlags
	modelMap                    mapFlag
}

type ruleFlags struct{ label, regex, replacement string }

// mapFlag collects --gateway-map FROM=TO (repeatable, or comma-separated).
type mapFlag map[string]string

func (f mapFlag) String() string {
	var parts []string
	for k, v := range f {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (f mapFlag) Set(s string) error {
	m, err := gateway.ParseMap(s)
	if err != nil {
		return err
	}
	for k, v := range m {
		f[k] = v
	}
	return nil
}

func (g *gatewayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.preset, "gateway", "", "gateway in front of the servers, for the network segment: "+strings.Join(gateway.Names(), ", ")+" (empty: none)")
	fs.StringVar(&g.metric, "gateway-metric", "", "the gateway's upstream-time histogram (base name; required for custom)")
	fs.StringVar(&g.unit, "gateway-unit", "", "its unit: "+strings.Join(gateway.UnitNames(), ", ")+" (default: the preset's)")
	fs.StringVar(&g.match, "gateway-match", "", "fixed label matchers LABEL=VALUE,… on the gateway's series (istio's default: reporter=source)")
	fs.StringVar(&g.model.label, "gateway-model-label", "", "the gateway label naming the model (default: ingress-nginx service, envoy envoy_cluster_name, istio destination_workload)")
	fs.StringVar(&g.model.regex, "gateway-model-regex", "", "regex the model label's value must match, anchored (default (.*))")
	fs.StringVar(&g.model.replacement, "gateway-model-replacement", "", "the model from the regex's groups (default $1)")
	g.modelMap = mapFlag{}
	fs.Var(g.modelMap, "gateway-map", "static map of the model label's values, VALUE=MODEL (repeatable; tried before the regex)")
	fs.StringVar(&g.version.label, "gateway-version-label", "", "the gateway label naming the version (default: none, the segment is the model's)")
	fs.StringVar(&g.version.regex, "gateway-version-regex", "", "regex for the version label's value (default (.*), the version is $1)")
	fs.StringVar(&g.instance.label, "gateway-instance-label", "", "the gateway label naming the server instance (default: none, the segment is over all instances)")
	fs.StringVar(&g.instance.regex, "gateway-instance-regex", "", "regex for the instance label's value (default (.*), the instance is $1)")
}

// config is the gateway.Config the flags give; the engine validates it.
func (g *gatewayFlags) config() (gateway.Config, error) {
	if g.preset == "" {
		for name, v := range map[string]string{"--gateway-metric": g.metric, "--gateway-model-label": g.model.label, "--gateway-map": g.modelMap.String()} {
			if v != "" {
				return gateway.Config{}, fmt.Errorf("%s needs --gateway", name)
			}
		}
		return gateway.Config{}, nil
	}
	match, err := gateway.ParseMatchers(g.match)
	if err != nil {
		return gateway.Config{}, fmt.Errorf("--gateway-match: %w", err)
	}
	c := gateway.Config{Preset: g.preset, Metric: g.metric, Unit: g.unit, Matchers: match,
		Model: gateway.Rule{Label: g.model.label, Regex: g.model.regex, Replacement: g.model.replacement}}
	if len(g.modelMap) > 0 {
		c.Model.Map = g.modelMap
	}
	if g.version.label != "" || g.version.regex != "" {
		c.Version = gateway.Rule{Label: g.version.label, Regex: g.version.regex}
	}
	if g.instance.label != "" || g.instance.regex != "" {
		c.Instance = gateway.Rule{Label: g.instance.label, Regex: g.instance.regex}
	}
	return c, nil
}

// gatewayFlagsHelp lists the gateway flags for a command's help.
func gatewayFlagsHelp() string {
	return fmt.Sprintf(`  --gateway NAME               gateway in front of the servers, for the network segment: %s
  --gateway-metric NAME        its upstream-time histogram (required for custom)
  --gateway-unit UNIT          seconds, milliseconds or microseconds (default: the preset's)
  --gateway-match L=V,…        fixed matchers on the gateway's series (istio: reporter=source)
  --gateway-model-label LABEL  the label naming the model (ingress-nginx service, envoy
                               envoy_cluster_name, istio destination_workload)
  --gateway-model-regex RE     anchored regex on that label's value (default (.*))
  --gateway-model-replacement T  the model from the groups (default $1)
  --gateway-map VALUE=MODEL    static map of the label's values (repeatable; before the regex)
  --gateway-version-label, --gateway-instance-label LABEL (and -regex RE)
                               where the gateway tells versions or instances apart`, strings.Join(gateway.Names(), ", "))
}
