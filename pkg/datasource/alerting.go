package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/gateway"
)

// The `rules` resource serves the alert-rule catalog to the app's Alert rules page:
//
//	POST rules {"action":"catalog", "params":{…}}
//	    → {"catalog":[…], "params":[…], "profile":{…}, "folder":{…}, "group":"…", "ruleUids":{…}}
//	POST rules {"action":"render", "params":{…}}
//	    → the same plus "ruleGroup" (the provisioning API's body), "muteTiming" and "files"
//	      (the Prometheus, Alertmanager and Grafana file-provisioning renderings)
//	POST rules {"action":"diff", "params":{…}, "existing": <GET …/rule-groups/{group} or null>}
//	    → the same as render plus "diff": missing | unchanged | changed | foreign
//
// Parameters are the catalog's (alerting.ParamDefs); the rules always query this data source,
// with its metric profile and label names.

// maxRulesBody bounds a request: the existing group Grafana returned is the biggest part.
const maxRulesBody = 4 << 20

type rulesRequest struct {
	Action   string                     `json:"action"`
	Params   map[string]json.RawMessage `json:"params"`
	Existing json.RawMessage            `json:"existing"`
}

// RulesProfile is the metric profile the Prometheus rendering uses and how it was chosen. On a
// mixed fleet Name lists every server's profile ("vllm,triton") and Servers names them.
type RulesProfile struct {
	Name     string   `json:"name"`
	Detected bool     `json:"detected"`
	Servers  []string `json:"servers,omitempty"`
	Notice   string   `json:"notice,omitempty"`
}

// RulesFolder is the Grafana folder the group goes into.
type RulesFolder struct {
	UID   string `json:"uid"`
	Title string `json:"title"`
}

// RulesAnswer is the resource's answer; fields beyond the catalog come with render and diff.
type RulesAnswer struct {
	Catalog    []alerting.Rule        `json:"catalog"`
	Params     []RulesParam           `json:"params"`
	Profile    RulesProfile           `json:"profile"`
	Folder     RulesFolder            `json:"folder"`
	Group      string                 `json:"group"`
	RuleUIDs   map[string]string      `json:"ruleUids"`
	RuleGroup  *alerting.GrafanaGroup `json:"ruleGroup,omitempty"`
	MuteTiming *alerting.MuteTiming   `json:"muteTiming,omitempty"`
	Files      map[string]string      `json:"files,omitempty"`
	Diff       *alerting.GroupDiff    `json:"diff,omitempty"`
}

// RulesParam is a parameter's definition with its value in this request.
type RulesParam struct {
	alerting.ParamDef
	Value string `json:"value"`
	// Fixed parameters come from the data source's settings and cannot be set here.
	Fixed bool `json:"fixed,omitempty"`
}

// fixedParams are set by the data source itself.
var fixedParams = map[string]bool{"datasourceUid": true, "profile": true, "modelLabel": true, "versionLabel": true, "instanceLabel": true, "warmupWindow": true}

func serveAlertRules(ctx context.Context, d *Datasource, req *backend.CallResourceRequest) (int, any) {
	if len(req.Body) > maxRulesBody {
		return http.StatusRequestEntityTooLarge, errorBody{fmt.Sprintf("the request is larger than %d bytes", maxRulesBody)}
	}
	var r rulesRequest
	if err := decodeBody(req.Body, &r, "rules", `{"action": "catalog" | "render" | "diff", "params": {…}, "existing": …}`); err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	p, prof, err := d.rulesParams(ctx, req, r.Params)
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	catalog, err := alerting.Catalog(p)
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	ans := RulesAnswer{Catalog: catalog, Profile: prof, Folder: RulesFolder{UID: p.FolderUID, Title: p.Folder}, Group: p.Group, RuleUIDs: map[string]string{}}
	values := p.Values()
	for _, def := range alerting.ParamDefs() {
		ans.Params = append(ans.Params, RulesParam{ParamDef: def, Value: values[def.Name], Fixed: fixedParams[def.Name]})
	}
	for id, uid := range alerting.RuleUIDs(p) {
		ans.RuleUIDs[id] = uid
	}
	switch r.Action {
	case "catalog":
		return http.StatusOK, ans
	case "render", "diff":
	default:
		return http.StatusBadRequest, errorBody{fmt.Sprintf("unknown action %q: use catalog, render or diff", clip.Text(r.Action, 40))}
	}
	if p.DatasourceUID == "" {
		return http.StatusBadRequest, errorBody{alerting.ErrNoDatasource.Error()}
	}
	group, err := alerting.GrafanaRules(p, req.PluginContext.OrgID)
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	mt := alerting.RecordOnlyMuteTiming()
	ans.RuleGroup, ans.MuteTiming = &group, &mt
	ans.Files = map[string]string{}
	for name, render := range map[string]func(alerting.Params) ([]byte, error){
		"prometheus": alerting.RenderPrometheus, "alertmanager": alerting.RenderAlertmanager, "grafana-provisioning": alerting.RenderGrafanaProvisioning,
	} {
		body, err := render(p)
		if err != nil {
			return http.StatusBadRequest, errorBody{name + ": " + err.Error()}
		}
		ans.Files[name] = string(body)
	}
	if r.Action == "diff" {
		diff, err := alerting.Diff(group, r.Existing)
		if err != nil {
			return http.StatusBadRequest, errorBody{err.Error()}
		}
		ans.Diff = &diff
	}
	return http.StatusOK, ans
}

// rulesParams reads a request's catalog parameters: the defaults with the given values, except
// the fixed ones, which the data source's settings decide (its uid, metric profile, label names
// and warm-up window). Shared by the rules and backtest resources.
func (d *Datasource) rulesParams(ctx context.Context, req *backend.CallResourceRequest, values map[string]json.RawMessage) (alerting.Params, RulesProfile, error) {
	for name := range values {
		if fixedParams[name] {
			delete(values, name) // the data source's own settings decide these
		}
	}
	p, err := alerting.ParseParams(values)
	if err != nil {
		return p, RulesProfile{}, errors.New("invalid parameters: " + err.Error())
	}
	if req.PluginContext.DataSourceInstanceSettings != nil {
		p.DatasourceUID = req.PluginContext.DataSourceInstanceSettings.UID
	}
	// The gateway in the settings was checked when they were read; the network rule reads it.
	if gw, err := gateway.New(d.settings.Gateway); err == nil {
		p.SetGateway(gw)
	}
	prof := d.rulesProfile(ctx, &p)
	if d.settings.WarmupWindow > 0 {
		p.WarmupWindow = d.settings.WarmupWindow
	}
	return p, prof, nil
}

// rulesProfile sets the parameters' metric profile and label names from the data source's
// settings, detecting the profile when the settings say auto.
func (d *Datasource) rulesProfile(ctx context.Context, p *alerting.Params) RulesProfile {
	p.ModelLabel, p.VersionLabel, p.InstanceLabel = d.settings.ModelLabel, d.settings.VersionLabel, d.settings.InstanceLabel
	if d.settings.Profile != "auto" && d.settings.Profile != "" {
		p.Profile = d.settings.Profile
		if e, err := d.engineFor(ctx); err == nil {
			p.SetPresent(e.Present) // rules whose GPU signal is not exported say "not measured"
		}
		return RulesProfile{Name: p.Profile}
	}
	e, err := d.engineFor(ctx)
	if err != nil {
		var pe *profileError
		why := err.Error()
		if !errors.As(err, &pe) {
			why = "Prometheus could not be asked for its metric names: " + why
		}
		return RulesProfile{Name: p.Profile, Notice: "the metric profile could not be detected (" + why + "); the Prometheus rendering uses the " + p.Profile + " profile"}
	}
	if e.Fleet != nil && len(e.Fleet.Servers) > 1 {
		// Every server of the fleet, each with its own profile and label renames.
		p.FollowEngine(e)
		return RulesProfile{Name: p.Profile, Detected: true, Servers: p.ProfileNames()}
	}
	p.Profile = e.Profile.Name
	p.SetPresent(e.Present)
	return RulesProfile{Name: p.Profile, Detected: true}
}
