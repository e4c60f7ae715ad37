package gpuclock_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/mockclock"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
)

func TestFromScenario(t *testing.T) {
	s := testbed.Default(testbed.DefaultEnd)
	at := testbed.DefaultEnd.Add(-3 * time.Hour)
	truth := s.GPU("node-a:8000", 1, at)
	a100 := gpuclock.FromScenario(s, mockclock.DGXA100).GPU("node-a:8000", 1, at)
	if a100.MemTotalBytes != truth.MemTotalBytes || a100.PowerWatts != truth.PowerWatts || a100.UtilRatio != truth.UtilRatio {
		t.Errorf("a100 %+v; scenario %+v", a100, truth)
	}
	h100 := gpuclock.FromScenario(s, mockclock.DGXH100).GPU("node-a:8000", 1, at)
	if h100.MemTotalBytes != 0 || h100.PowerLimitWatts != 700 || h100.UtilRatio != truth.UtilRatio || h100.MemUsedRatio != truth.MemUsedRatio {
		t.Errorf("h100 %+v", h100)
	}
	// GPUs beyond the scenario's repeat its GPUs.
	if g := gpuclock.FromScenario(s, mockclock.DGXA100).GPU("node-a:8000", 9, at); g.Lost || g.UtilRatio != truth.UtilRatio {
		t.Errorf("gpu 9: %+v", g)
	}
	if _, err := gpuclock.ScenarioInstance(s, "node-q:1"); err == nil {
		t.Error("unknown instance accepted")
	}
	if in, err := gpuclock.ScenarioInstance(s, ""); err != nil || in != s.Instances()[0] {
		t.Errorf("default instance %q, %v", in, err)
	}
}

// A probe reading the clock over HTTP sees exactly the scenario's truth, XIDs included, and
// every GPU lost while the server is gone.
func TestRemoteFollowsTheScenario(t *testing.T) {
	s := testbed.Default(testbed.DefaultEnd)
	srv := httptest.NewServer(gpuclock.Handler(s))
	defer srv.Close()
	// Inside the GPU-idle incident the idle GPUs carry an XID 43.
	var xidAt time.Time
	for _, inc := range s.Incidents() {
		if inc.Kind == testbed.GPUIdle {
			xidAt = inc.Start.Add(time.Minute)
		}
	}
	if xidAt.IsZero() {
		t.Fatal("the scenario has no GPU-idle incident")
	}
	local := gpuclock.FromScenario(s, mockclock.DGXH100)
	remote, err := mockclock.NewRemote(srv.URL, mockclock.DGXH100, 8, srv.Client(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var failures []error
	remote.OnError = func(err error) { failures = append(failures, err) }
	withXIDs := 0
	for _, inst := range s.Instances() {
		for g := range 8 {
			want, got := local.GPU(inst, g, xidAt), remote.GPU(inst, g, xidAt)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%s gpu %d: remote %+v, scenario %+v", inst, g, got, want)
			}
			if len(got.XIDs) > 0 {
				withXIDs++
			}
		}
	}
	if withXIDs == 0 {
		t.Error("no GPU with an XID came through the clock")
	}
	a, err := remote.Fetch(context.Background(), "", xidAt)
	if err != nil || a.Instance != s.Instances()[0] {
		t.Errorf("default instance: %q, %v", a.Instance, err)
	}
	if _, err := remote.Fetch(context.Background(), "node-q:1", xidAt); !errors.Is(err, mockclock.ErrUnknownInstance) {
		t.Errorf("unknown instance: %v", err)
	}
	srv.Close()
	if g := remote.GPU("node-a:8000", 0, xidAt.Add(time.Second)); !g.Lost {
		t.Errorf("server gone, GPU not lost: %+v", g)
	}
	if g := remote.GPU("node-a:8000", 1, xidAt.Add(time.Second)); !g.Lost {
		t.Errorf("server gone, GPU 1 not lost: %+v", g)
	}
	if len(failures) != 1 || failures[0] == nil {
		t.Errorf("OnError calls: %v (want one failure)", failures)
	}
}
