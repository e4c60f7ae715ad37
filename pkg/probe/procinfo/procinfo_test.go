package procinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	cid    = "4f1c2a7d9e0b3c5a6f8d1e2b4c7a9f0e3d5b8c1a2e4f6a8b0c3d5e7f9a1b2c3d"
	podUID = "8d3e2f1a-5b6c-4d7e-8f9a-0b1c2d3e4f5a"
)

func TestParseCgroupLine(t *testing.T) {
	under := strings.ReplaceAll(podUID, "-", "_")
	cases := []struct{ line, id, uid string }{
		// cgroup v2, systemd driver, containerd
		{"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + under + ".slice/cri-containerd-" + cid + ".scope", cid, podUID},
		// cgroup v2, systemd driver, CRI-O
		{"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + under + ".slice/crio-" + cid + ".scope", cid, podUID},
		// cgroup v1, cgroupfs driver
		{"11:memory:/kubepods/burstable/pod" + podUID + "/" + cid, cid, podUID},
		// cgroup v1, systemd driver with colon-separated runtime
		{"4:cpu,cpuacct:/kubepods.slice/kubepods-pod" + under + ".slice:cri-containerd:" + cid, cid, podUID},
		// Docker without Kubernetes
		{"0::/system.slice/docker-" + cid + ".scope", cid, ""},
		{"12:devices:/docker/" + cid, cid, ""},
		// host processes
		{"0::/user.slice/user-1000.slice/session-3.scope", "", ""},
		{"0::/init.scope", "", ""},
		{"", "", ""},
		{"garbage without colons", "", ""},
	}
	for _, c := range cases {
		id, uid := ParseCgroupLine(c.line)
		if id != c.id || uid != c.uid {
			t.Errorf("%q → %q, %q; want %q, %q", c.line, id, uid, c.id, c.uid)
		}
	}
}

func TestParseLogNames(t *testing.T) {
	o, id, ok := ParseContainerLogName("triton-7d9f_inference_model-server-" + cid + ".log")
	if !ok || id != cid || o.Pod != "triton-7d9f" || o.Namespace != "inference" || o.Container != "model-server" {
		t.Errorf("container log: %+v %q %v", o, id, ok)
	}
	for _, bad := range []string{"x.log", "pod_ns_c-" + cid, "pod_ns-" + cid + ".log", "pod_ns_c-" + strings.ToUpper(cid) + ".log"} {
		if _, _, ok := ParseContainerLogName(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	o, ok = ParsePodLogDir("inference_triton-7d9f_" + podUID)
	if !ok || o.Namespace != "inference" || o.Pod != "triton-7d9f" || o.PodUID != podUID {
		t.Errorf("pod dir: %+v %v", o, ok)
	}
	if _, ok := ParsePodLogDir("a_b"); ok {
		t.Error("short pod dir accepted")
	}
}

// A fake host: /proc with three processes, /var/log with the kubelet's links.
func fakeHost(t *testing.T) (procRoot, logRoot string) {
	t.Helper()
	root := t.TempDir()
	procRoot, logRoot = filepath.Join(root, "proc"), filepath.Join(root, "log")
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	under := strings.ReplaceAll(podUID, "-", "_")
	write(filepath.Join(procRoot, "100", "cgroup"), "0::/kubepods.slice/kubepods-pod"+under+".slice/cri-containerd-"+cid+".scope\n")
	write(filepath.Join(procRoot, "100", "comm"), "tritonserver\n")
	write(filepath.Join(procRoot, "200", "cgroup"), "0::/system.slice/docker-"+strings.Repeat("ab", 32)+".scope\n")
	write(filepath.Join(procRoot, "300", "cgroup"), "0::/user.slice/session-1.scope\n")
	other := strings.Repeat("cd", 32)
	write(filepath.Join(procRoot, "400", "cgroup"), "0::/kubepods.slice/kubepods-pod"+strings.ReplaceAll("11111111-2222-3333-4444-555555555555", "-", "_")+".slice/cri-containerd-"+other+".scope\n")
	write(filepath.Join(logRoot, "containers", "triton-7d9f_inference_model-server-"+cid+".log"), "")
	if err := os.MkdirAll(filepath.Join(logRoot, "pods", "batch_trainer-x_11111111-2222-3333-4444-555555555555"), 0o755); err != nil {
		t.Fatal(err)
	}
	return procRoot, logRoot
}

func TestResolver(t *testing.T) {
	procRoot, logRoot := fakeHost(t)
	r := New(procRoot, logRoot)
	if o := r.Lookup(100, 1); o.Pod != "triton-7d9f" || o.Namespace != "inference" || o.Container != "model-server" || o.ContainerID != cid || o.PodUID != podUID {
		t.Errorf("k8s process: %+v", o)
	}
	if o := r.Lookup(200, 1); o.Pod != "" || o.Container != "abababababab" {
		t.Errorf("docker process: %+v", o)
	}
	if o := r.Lookup(300, 1); o != (Owner{}) {
		t.Errorf("host process: %+v", o)
	}
	// Only the pod log dir knows this one: pod and namespace, short id for the container.
	if o := r.Lookup(400, 1); o.Pod != "trainer-x" || o.Namespace != "batch" || o.Container != "cdcdcdcdcdcd" {
		t.Errorf("pod-dir process: %+v", o)
	}
	if o := r.Lookup(999, 1); o != (Owner{}) {
		t.Errorf("vanished process: %+v", o)
	}
	if got := r.Comm(100); got != "tritonserver" {
		t.Errorf("comm = %q", got)
	}
	r.Forget(2)
	if len(r.byPID) != 0 {
		t.Errorf("cache not pruned: %d entries", len(r.byPID))
	}
	// Without a log root only the container id is known.
	if o := New(procRoot, "").Lookup(100, 1); o.Pod != "" || o.Container != cid[:12] || o.PodUID != podUID {
		t.Errorf("no log root: %+v", o)
	}
}
