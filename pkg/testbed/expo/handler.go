package expo

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// TextContentType is the content type of the Prometheus text format 0.0.4.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves live metrics for every instance of the fleet from one listener:
//
//	GET /metrics?instance=node-a:8000  that instance alone, without an instance label: a
//	                                   Prometheus target per instance (see PrometheusConfig)
//	GET /metrics                       every instance, each series labelled instance="…": one
//	                                   target scraped with honor_labels: true
//	GET /metrics/node?node=node-a      that host's node_exporter series (NodeTargets), when src
//	                                   is also a HostSource: a target per host, job NodeJob
//
// now gives the instant to evaluate (time.Now in production).
func Handler(src Source, p Profile, now func() time.Time) http.Handler {
	targets := p.Targets(src)
	byName := map[string]Target{}
	var names []string
	for _, tg := range targets {
		byName[tg.Instance] = tg
		names = append(names, tg.Instance)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		t := now()
		var body bytes.Buffer
		if inst := r.URL.Query().Get("instance"); inst != "" {
			tg, ok := byName[inst]
			if !ok {
				http.Error(w, fmt.Sprintf("unknown instance %q; known: %s", inst, strings.Join(names, ", ")), http.StatusNotFound)
				return
			}
			if err := WriteText(&body, tg.Families, t, nil); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		} else if err := writeAll(&body, targets, t); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", TextContentType)
		_, _ = w.Write(body.Bytes())
	})
	hosts, _ := src.(HostSource)
	var nodes []string
	if hosts != nil {
		nodes = hosts.Nodes()
		byNode := map[string]Target{}
		for i, tg := range NodeTargets(hosts) {
			byNode[nodes[i]] = tg
		}
		mux.HandleFunc("/metrics/node", func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				http.Error(w, "only GET", http.StatusMethodNotAllowed)
				return
			}
			n := r.URL.Query().Get("node")
			tg, ok := byNode[n]
			if !ok {
				http.Error(w, fmt.Sprintf("unknown node %q; known: %s", n, strings.Join(nodes, ", ")), http.StatusNotFound)
				return
			}
			var body bytes.Buffer
			if err := WriteText(&body, tg.Families, now(), nil); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", TextContentType)
			_, _ = w.Write(body.Bytes())
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "inferscope-loadgen: simulated inference fleet (profile %s)\n\n", p.Name())
		fmt.Fprintf(w, "/metrics?instance=NAME  one instance (instances: %s)\n", strings.Join(names, ", "))
		fmt.Fprintf(w, "/metrics                every instance, labelled instance=\"…\" (scrape with honor_labels: true)\n")
		if hosts != nil {
			fmt.Fprintf(w, "/metrics/node?node=NAME node_exporter series of one host (nodes: %s)\n", strings.Join(nodes, ", "))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "prometheus.yml scrape configuration:\n\n%s", PrometheusConfig(r.Host, names, 15*time.Second))
	})
	return mux
}

// writeAll writes every target's families, merged per family so each family appears once.
func writeAll(body *bytes.Buffer, targets []Target, t time.Time) error {
	groups, err := groupFamilies(targets)
	if err != nil {
		return err
	}
	for _, g := range groups {
		merged := *g.members[0].family
		merged.Series = nil
		for _, m := range g.members {
			extra := append([]Label{{"instance", m.target.Instance}}, m.target.Labels...)
			for _, s := range m.family.Series {
				s.Labels = append(append([]Label(nil), s.Labels...), extra...)
				merged.Series = append(merged.Series, s)
			}
		}
		if err := WriteText(body, []Family{merged}, t, nil); err != nil {
			return err
		}
	}
	return nil
}

// PrometheusConfig is a scrape configuration for a loadgen listening on addr: one target per
// instance, so Prometheus sets instance and job exactly as in the written history.
func PrometheusConfig(addr string, instances []string, interval time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scrape_configs:\n  - job_name: inference\n    scrape_interval: %s\n    static_configs:\n      - targets:\n", promDuration(interval))
	for _, in := range instances {
		fmt.Fprintf(&b, "          - %s\n", in)
	}
	fmt.Fprintf(&b, "    relabel_configs:\n"+
		"      - source_labels: [__address__]\n        target_label: __param_instance\n"+
		"      - source_labels: [__address__]\n        target_label: instance\n"+
		"      - target_label: __address__\n        replacement: %s\n", addr)
	return b.String()
}

// promDuration writes a duration the way Prometheus configuration expects ("15s", "1m").
func promDuration(d time.Duration) string {
	switch {
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}
