package mockclock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Path is where a Server answers: GET Path?system=dgxa100&instance=node-a:8000&gpus=8&t=<RFC 3339>.
const Path = "/mock/v1/gpus"

// maxAnswer bounds what a Remote reads: 1024 GPUs with a few XIDs each fit well below it.
const maxAnswer = 8 << 20

// ErrUnknownInstance is the server's answer for an instance its scenario does not play.
var ErrUnknownInstance = errors.New("unknown scenario instance")

// Answer is what a Server sends: every GPU of one instance at one instant.
type Answer struct {
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
	GPUs     []State   `json:"gpus"`
}

// Server serves a scenario's clock over HTTP.
type Server struct {
	// Clock is the scenario's clock as seen by one system (DGXA100 or DGXH100).
	Clock func(system string) Clock
	// Instance resolves a requested instance: "" names the default one; an unknown one is an
	// error (answered 404).
	Instance func(string) (string, error)
}

func (s Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	system := q.Get("system")
	if system != DGXA100 && system != DGXH100 {
		http.Error(w, fmt.Sprintf("system must be %s or %s, not %q", DGXA100, DGXH100, system), http.StatusBadRequest)
		return
	}
	gpus, err := strconv.Atoi(q.Get("gpus"))
	if err != nil || gpus < 1 || gpus > 1024 {
		http.Error(w, "gpus must be a number between 1 and 1024", http.StatusBadRequest)
		return
	}
	at, err := time.Parse(time.RFC3339Nano, q.Get("t"))
	if err != nil {
		http.Error(w, "t must be an RFC 3339 time: "+err.Error(), http.StatusBadRequest)
		return
	}
	instance, err := s.Instance(q.Get("instance"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	clock := s.Clock(system)
	a := Answer{Instance: instance, At: at, GPUs: make([]State, gpus)}
	for i := range a.GPUs {
		a.GPUs[i] = clock.GPU(instance, i, at)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}

// Remote is a Clock read from a Server. It fetches every GPU of an instance at once, once per
// instant asked, and shows every GPU lost while the server does not answer.
type Remote struct {
	base    string
	system  string
	gpus    int
	client  *http.Client
	timeout time.Duration

	// OnError, when set, is called when fetching starts failing (with the error) and when it
	// recovers (with nil), not on every failed fetch.
	OnError func(error)

	mu       sync.Mutex
	asked    bool // instance and at hold the last instant fetched
	instance string
	at       time.Time
	states   []State
	failing  bool
}

// NewRemote reads the clock served under base (a Server's origin, e.g. http://127.0.0.1:9400)
// for gpus GPUs of system. A nil client is http.DefaultClient; each fetch is bounded by timeout.
func NewRemote(base, system string, gpus int, client *http.Client, timeout time.Duration) (*Remote, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mock clock URL %q: want http(s)://host:port", base)
	}
	if client == nil {
		client = http.DefaultClient
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Remote{base: strings.TrimRight(u.String(), "/"), system: system, gpus: gpus, client: client, timeout: timeout}, nil
}

// Fetch asks the server for every GPU of instance ("" names the server's default) at t.
func (r *Remote) Fetch(ctx context.Context, instance string, t time.Time) (Answer, error) {
	q := url.Values{
		"system": {r.system}, "instance": {instance},
		"gpus": {strconv.Itoa(r.gpus)}, "t": {t.UTC().Format(time.RFC3339Nano)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+Path+"?"+q.Encode(), nil)
	if err != nil {
		return Answer{}, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("mock clock %s: %w", r.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return Answer{}, fmt.Errorf("mock clock %s: %w", r.base, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return Answer{}, fmt.Errorf("%w %q at %s: %s", ErrUnknownInstance, instance, r.base, strings.TrimSpace(string(body)))
	case resp.StatusCode != http.StatusOK:
		return Answer{}, fmt.Errorf("mock clock %s: HTTP %d: %s", r.base, resp.StatusCode, strings.TrimSpace(string(body)))
	case len(body) > maxAnswer:
		return Answer{}, fmt.Errorf("mock clock %s: answer over %d bytes", r.base, maxAnswer)
	}
	var a Answer
	if err := json.Unmarshal(body, &a); err != nil {
		return Answer{}, fmt.Errorf("mock clock %s: %w", r.base, err)
	}
	if len(a.GPUs) != r.gpus {
		return Answer{}, fmt.Errorf("mock clock %s: %d GPUs in the answer, asked for %d", r.base, len(a.GPUs), r.gpus)
	}
	return a, nil
}

// GPU implements Clock: the server's truth, or a lost GPU while the server does not answer.
func (r *Remote) GPU(instance string, gpu int, t time.Time) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.asked || r.instance != instance || !r.at.Equal(t) {
		r.refresh(instance, t)
	}
	if gpu < 0 || gpu >= len(r.states) {
		return State{Lost: true}
	}
	return r.states[gpu]
}

// refresh fetches instance at t; on a failure every GPU is lost until a later instant answers.
func (r *Remote) refresh(instance string, t time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	a, err := r.Fetch(ctx, instance, t)
	r.asked, r.instance, r.at = true, instance, t
	if err != nil {
		r.states = nil
		if !r.failing && r.OnError != nil {
			r.OnError(err)
		}
		r.failing = true
		return
	}
	r.states = a.GPUs
	if r.failing && r.OnError != nil {
		r.OnError(nil)
	}
	r.failing = false
}
