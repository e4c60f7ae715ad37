// Package alerting is Inferscope's alert-rule catalog and its three renderings.
//
// The catalog (catalog.go) is the brief's P0/P1/P2 set: latency against its same-time-of-day
// baseline (P0 at 3× at once, P1 at 1.5× for 3 min), GPU memory (P0 92 %, P1 85 %), GPU idle
// under traffic, error rate, jitter (P99/P50 > 5), queue time dominating, and the recorded-only
// P2s (memory forecast, cache hit-rate drop, long warm-up). Every threshold, hold time, folder,
// group, interval and routing choice is a parameter (params.go, one table that the command line
// turns into flags and the app page into a form), with the brief's numbers as defaults.
//
// Renderings, from the same catalog and parameters:
//
//   - PrometheusRules / RenderPrometheus: one rule group of recording rules and alerts, PromQL
//     built from a metric profile's names (pkg/profile) with pkg/prom's quoting (promql.go); over
//     a mixed fleet (Params.Profile naming several servers, or SetServers / FollowEngine) one group
//     per server, its recorded series labelled ServerLabel, and one group of GPU rules;
//   - AlertmanagerConfig / RenderAlertmanager: routes per severity, a receiver that sends nothing
//     for P2 and observation mode, inhibit_rules P0 ⇒ P1/P2 on the same model and instance or
//     node and GPU;
//   - GrafanaRules / RenderGrafanaProvisioning: a Grafana-managed rule group whose queries use
//     the Inferscope data source's query types and server-side expressions, for the
//     provisioning API or file provisioning (over a fleet: engine rules once, PromQL rules once
//     per server); Diff compares it with what Grafana holds.
//
// Every alert carries severity, model/version/instance or node/gpu, the ownership mark
// (ManagedLabel) and, in observation mode, ObservationLabel; annotations give the current value,
// the QPS, the GPUs or models involved and a link to the overview's latency panel
// (context.go). docs/alerting.md is the user-facing description.
package alerting
