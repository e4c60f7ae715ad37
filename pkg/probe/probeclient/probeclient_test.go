package probeclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/probe"
	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/gpu/nvmlgpu"
	"github.com/inferscope/inferscope/pkg/probe/mockgpu"
	"github.com/inferscope/inferscope/pkg/probe/probeclient"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
)

// realProbe serves a probe over a simulated DGX A100 following the standard scenario.
func realProbe(t *testing.T) string {
	t.Helper()
	at := testbed.DefaultEnd.Add(-2 * time.Hour)
	sys, err := mockgpu.New(mockgpu.Options{
		Clock: gpuclock.FromScenario(testbed.Default(testbed.DefaultEnd), mockgpu.DGXA100), Instance: "node-a:8000",
		Now: func() time.Time { return at },
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := probe.New(probe.Config{
		Open:     func() (gpu.Library, error) { return nvmlgpu.Open(sys, nvmlgpu.WithEventWait(5*time.Millisecond)) },
		Interval: time.Hour, Hostname: "gpu-node-1", Mock: mockgpu.DGXA100, NoRuntimeMetrics: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() {
		srv.Close()
		p.Close()
	})
	return srv.URL
}

func TestGet(t *testing.T) {
	base := realProbe(t)
	for _, u := range []string{base, base + "/", base + "/api/v1/gpus", " " + base + " "} {
		s, err := probeclient.Get(context.Background(), u)
		if err != nil {
			t.Fatalf("%q: %v", u, err)
		}
		if len(s.GPUs) != 8 || s.Hostname != "gpu-node-1" || s.Mock != "dgxa100" || s.CollectedAt.IsZero() {
			t.Errorf("%q: %+v", u, s)
		}
		if g := s.GPUs[0]; g.UtilRatio == nil || g.MemTotalBytes == nil || *g.MemTotalBytes != 40<<30 || g.RetiredPagesSingleBit != nil {
			t.Errorf("%q: gpu 0 %+v", u, g)
		}
	}
}

func TestGetWithHeaders(t *testing.T) {
	base := realProbe(t)
	var seen string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("Authorization")
		resp, err := http.Get(base + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 1<<20)
		for {
			n, err := resp.Body.Read(buf)
			w.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}))
	defer proxy.Close()
	c := &probeclient.Client{Header: http.Header{"Authorization": {"Basic cHJvbTpzM2NyZXQ="}}}
	if _, err := c.Get(context.Background(), proxy.URL); err != nil {
		t.Fatal(err)
	}
	if seen != "Basic cHJvbTpzM2NyZXQ=" {
		t.Errorf("Authorization = %q", seen)
	}
}

func TestGetErrors(t *testing.T) {
	notProbe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "json":
			w.Write([]byte(`{"status":"success"}`))
		case "garbage":
			w.Write([]byte(`<html>`))
		default:
			http.Error(w, "no such page", http.StatusNotFound)
		}
	}))
	defer notProbe.Close()
	cases := map[string]string{
		notProbe.URL:                               "HTTP 404",
		notProbe.URL + "/api/v1/gpus?case=json":    `no "gpus" field`,
		notProbe.URL + "/api/v1/gpus?case=garbage": "not a probe snapshot",
		"ftp://example.com":                        "scheme must be http or https",
		"http://":                                  "no host",
		"http://127.0.0.1:1":                       "127.0.0.1:1",
		"::":                                       "probe URL",
	}
	for u, want := range cases {
		_, err := probeclient.Get(context.Background(), u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v; want it to mention %q", u, err, want)
		}
	}
}

func TestGetHonoursContext(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer slow.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := probeclient.Get(ctx, slow.URL)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v; want deadline exceeded", err)
	}
}
