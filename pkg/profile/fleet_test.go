package profile

import (
	"reflect"
	"slices"
	"testing"
)

func TestDetectFleet(t *testing.T) {
	all := All()
	custom := []string{"inference_requests_total", "inference_latency_seconds_bucket", "model_loading_status"}
	vllm := []string{"vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_running", "vllm:request_success_total"}
	triton := []string{"nv_inference_request_success", "nv_inference_request_duration_us"}
	tgi := []string{"tgi_request_count", "tgi_request_duration_bucket", "tgi_queue_size"}
	cases := []struct {
		name      string
		seen      map[string]Seen
		servers   []Server
		ambiguous []Ambiguity
	}{
		{name: "nothing", seen: map[string]Seen{}},
		{
			name:    "one server",
			seen:    map[string]Seen{"custom": {Names: custom, Models: map[string][]string{"a": custom, "b": custom}}},
			servers: []Server{{Profile: "custom", Models: []string{"a", "b"}, Matched: sorted(custom)}},
		},
		{
			name: "mixed fleet, each model to its server",
			seen: map[string]Seen{
				"custom": {Names: custom, Models: map[string][]string{"ranker": custom}},
				"vllm":   {Names: vllm, Models: map[string][]string{"llama": vllm, "qwen": vllm}},
				"triton": {Names: triton, Models: map[string][]string{"resnet": triton}},
			},
			servers: []Server{
				{Profile: "custom", Models: []string{"ranker"}, Matched: sorted(custom)},
				{Profile: "vllm", Models: []string{"llama", "qwen"}, Matched: sorted(vllm)},
				{Profile: "triton", Models: []string{"resnet"}, Matched: sorted(triton)},
			},
		},
		{
			// Triton's vLLM backend: vllm:* carry Triton's model label, none carries model_name.
			name: "a Triton model on the vLLM backend is Triton's, and makes no vLLM server",
			seen: map[string]Seen{
				"vllm":   {Names: vllm, Models: map[string][]string{}},
				"triton": {Names: triton, Models: map[string][]string{"llama": append(slices.Clone(triton), vllm[0])}}, // one name asked
			},
			servers: []Server{{Profile: "triton", Models: []string{"llama"}, Matched: sorted(triton)}},
		},
		{
			name: "one signature name is not enough",
			seen: map[string]Seen{
				"custom": {Names: custom, Models: map[string][]string{"a": custom, "lonely": custom[:1]}},
			},
			servers: []Server{{Profile: "custom", Models: []string{"a"}, Matched: sorted(custom)}},
		},
		{
			name: "the larger share of the signature wins",
			seen: map[string]Seen{
				// custom: 3 of 6 names; torchserve: 2 of 3.
				"custom":     {Names: custom, Models: map[string][]string{"m": custom}},
				"torchserve": {Names: []string{"ts_inference_requests_total", "ts_queue_latency_microseconds"}, Models: map[string][]string{"m": {"ts_inference_requests_total", "ts_queue_latency_microseconds"}}},
			},
			servers: []Server{{Profile: "torchserve", Models: []string{"m"}, Matched: []string{"ts_inference_requests_total", "ts_queue_latency_microseconds"}}},
		},
		{
			name: "a tie is ambiguous and goes by priority",
			seen: map[string]Seen{
				// vllm: 2 of 8; triton: 2 of 8.
				"vllm":   {Names: vllm[:2], Models: map[string][]string{"m": vllm[:2]}},
				"triton": {Names: triton, Models: map[string][]string{"m": triton}},
			},
			servers:   []Server{{Profile: "vllm", Models: []string{"m"}, Matched: sorted(vllm[:2])}},
			ambiguous: []Ambiguity{{Model: "m", Profiles: []string{"vllm", "triton"}, Chosen: "vllm"}},
		},
		{
			name: "a signature without its model label is an unlabelled server",
			seen: map[string]Seen{
				"custom": {Names: custom, Models: map[string][]string{"a": custom}},
				"tgi":    {Names: tgi},
			},
			servers: []Server{
				{Profile: "custom", Models: []string{"a"}, Matched: sorted(custom)},
				{Profile: "tgi", Unlabelled: true, Matched: sorted(tgi)},
			},
		},
		{
			name: "empty model label values do not count as a model",
			seen: map[string]Seen{"custom": {Names: custom[:1], Models: map[string][]string{"": custom}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := DetectFleet(all, c.seen)
			if !reflect.DeepEqual(f.Servers, c.servers) {
				t.Errorf("servers\n got %+v\nwant %+v", f.Servers, c.servers)
			}
			if !reflect.DeepEqual(f.Ambiguous, c.ambiguous) {
				t.Errorf("ambiguous\n got %+v\nwant %+v", f.Ambiguous, c.ambiguous)
			}
			for _, s := range c.servers {
				for _, m := range s.Models {
					if got, ok := f.ServerOf(m); !ok || got != s.Profile {
						t.Errorf("ServerOf(%s) = %q, %v; want %s", m, got, ok, s.Profile)
					}
				}
			}
		})
	}
}

func TestFleetSummary(t *testing.T) {
	f := Fleet{
		Servers:   []Server{{Profile: "custom", Models: []string{"a", "b"}}, {Profile: "vllm", Models: []string{"c"}}, {Profile: "tgi", Unlabelled: true}},
		Ambiguous: []Ambiguity{{Model: "c", Profiles: []string{"vllm", "triton"}, Chosen: "vllm"}},
	}
	want := "servers found: Custom (prometheus_client) (2 models), vLLM (1 model), Text Generation Inference (models not labelled: set its model label); model c matches vllm and triton equally well, read as vllm (force a profile to choose)"
	if got := f.Summary(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if (Fleet{}).Summary() != "no inference server found" {
		t.Error((Fleet{}).Summary())
	}
	if f.Models() != 3 {
		t.Errorf("models %d", f.Models())
	}
}

func TestLabelsOver(t *testing.T) {
	got := Labels{Model: "svc"}.Over(Labels{Model: "m", Instance: "pod"})
	if want := (Labels{Model: "svc", Instance: "pod"}); got != want {
		t.Errorf("got %+v want %+v", got, want)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
