// Package procinfo finds which container, pod and namespace a GPU process belongs to.
//
// Everything here is best effort and read-only:
//   - the container id and pod UID come from /proc/<pid>/cgroup (cgroup v1 and v2, the
//     systemd and cgroupfs drivers, containerd, CRI-O and Docker);
//   - on Kubernetes the pod name, namespace and container name come from the kubelet's log
//     links /var/log/containers/<pod>_<namespace>_<container>-<id>.log, falling back to the
//     pod log directories /var/log/pods/<namespace>_<pod>_<uid> for pod and namespace.
//
// Without access to the host's /proc (a container without hostPID or a /proc mount) the
// process simply stays unattributed.
package procinfo

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Owner is what a process could be attributed to; empty fields are unknown.
type Owner struct {
	ContainerID string // full id as found in the cgroup path
	Container   string // container name on Kubernetes, else the short container id
	Pod         string
	Namespace   string
	PodUID      string
}

// Resolver looks up owners. It is safe for concurrent use.
type Resolver struct {
	procRoot string // host /proc
	logRoot  string // host /var/log

	mu         sync.Mutex
	byPID      map[uint32]cacheEntry
	containers map[string]Owner // container id → owner, from /var/log/containers
	pods       map[string]Owner // pod uid → owner, from /var/log/pods
	indexed    bool
	indexedAt  Cycle
}

type cacheEntry struct {
	owner Owner
	seen  uint64
}

// New makes a resolver reading procRoot (e.g. "/proc" or "/host/proc") and logRoot
// (e.g. "/var/log"); an empty logRoot skips Kubernetes enrichment.
func New(procRoot, logRoot string) *Resolver {
	return &Resolver{procRoot: procRoot, logRoot: logRoot, byPID: map[uint32]cacheEntry{}}
}

// Cycle is a collection cycle number; entries not looked up during a cycle are dropped by
// Forget, so the cache is bounded by the live GPU processes.
type Cycle = uint64

// Lookup attributes pid. Results are cached per PID for as long as the PID keeps being
// looked up; a new container id (PID reuse) is resolved afresh.
func (r *Resolver) Lookup(pid uint32, cycle Cycle) Owner {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.byPID[pid]; ok && (e.owner.Pod != "" || e.owner.ContainerID == "") {
		e.seen = cycle
		r.byPID[pid] = e
		return e.owner
	}
	id, podUID := r.readCgroup(pid)
	owner := r.attribute(id, podUID, cycle)
	r.byPID[pid] = cacheEntry{owner: owner, seen: cycle}
	return owner
}

// Forget drops cache entries not looked up in cycle.
func (r *Resolver) Forget(cycle Cycle) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid, e := range r.byPID {
		if e.seen != cycle {
			delete(r.byPID, pid)
		}
	}
}

// Comm reads a process's short name from procfs (used when NVML cannot name it).
func (r *Resolver) Comm(pid uint32) string {
	b, err := os.ReadFile(filepath.Join(r.procRoot, strconv.FormatUint(uint64(pid), 10), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (r *Resolver) attribute(containerID, podUID string, cycle Cycle) Owner {
	owner := Owner{ContainerID: containerID, PodUID: podUID}
	if containerID == "" && podUID == "" {
		return owner
	}
	if r.logRoot != "" {
		if k, ok := r.k8sOwner(containerID, podUID, cycle); ok {
			k.ContainerID, k.PodUID = containerID, firstNonEmpty(k.PodUID, podUID)
			if k.Container == "" {
				k.Container = shortID(containerID)
			}
			return k
		}
	}
	owner.Container = shortID(containerID)
	return owner
}

// k8sOwner consults the kubelet log index, rebuilding it (at most once per cycle) when an
// id is not in it.
func (r *Resolver) k8sOwner(containerID, podUID string, cycle Cycle) (Owner, bool) {
	find := func() (Owner, bool) {
		if o, ok := r.containers[containerID]; ok && containerID != "" {
			return o, true
		}
		if o, ok := r.pods[podUID]; ok && podUID != "" {
			return o, true
		}
		return Owner{}, false
	}
	if r.indexed {
		if o, ok := find(); ok || r.indexedAt == cycle {
			return o, ok
		}
	}
	r.index()
	r.indexedAt = cycle
	return find()
}

// index reads the kubelet's log link names (readdir only; the files are never opened).
func (r *Resolver) index() {
	r.indexed = true
	r.containers = map[string]Owner{}
	r.pods = map[string]Owner{}
	if entries, err := os.ReadDir(filepath.Join(r.logRoot, "containers")); err == nil {
		for _, e := range entries {
			if o, id, ok := ParseContainerLogName(e.Name()); ok {
				r.containers[id] = o
			}
		}
	}
	if entries, err := os.ReadDir(filepath.Join(r.logRoot, "pods")); err == nil {
		for _, e := range entries {
			if o, ok := ParsePodLogDir(e.Name()); ok {
				r.pods[o.PodUID] = o
			}
		}
	}
}

func (r *Resolver) readCgroup(pid uint32) (containerID, podUID string) {
	f, err := os.Open(filepath.Join(r.procRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"))
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, uid := ParseCgroupLine(sc.Text())
		containerID = firstNonEmpty(containerID, id)
		podUID = firstNonEmpty(podUID, uid)
		if containerID != "" && podUID != "" {
			break
		}
	}
	return containerID, podUID
}

var (
	containerIDRe = regexp.MustCompile(`(?:^|[/\-:])([0-9a-f]{64})(?:\.scope)?(?:/|$)`)
	podUIDRe      = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
)

// ParseCgroupLine extracts a container id and a pod UID from one /proc/<pid>/cgroup line,
// e.g. "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice/
// cri-containerd-<id>.scope" or "12:memory:/docker/<id>".
func ParseCgroupLine(line string) (containerID, podUID string) {
	// hierarchy-ID:controllers:path (the path itself may hold colons: "...slice:cri-containerd:<id>")
	if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
		line = parts[2]
	}
	if m := containerIDRe.FindAllStringSubmatch(line, -1); len(m) > 0 {
		containerID = m[len(m)-1][1]
	}
	if m := podUIDRe.FindStringSubmatch(line); m != nil {
		podUID = strings.ReplaceAll(m[1], "_", "-")
	}
	return containerID, podUID
}

// ParseContainerLogName parses "<pod>_<namespace>_<container>-<64 hex id>.log".
func ParseContainerLogName(name string) (Owner, string, bool) {
	base, ok := strings.CutSuffix(name, ".log")
	if !ok || len(base) < 66 || base[len(base)-65] != '-' {
		return Owner{}, "", false
	}
	id := base[len(base)-64:]
	if !isHex(id) {
		return Owner{}, "", false
	}
	parts := strings.SplitN(base[:len(base)-65], "_", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Owner{}, "", false
	}
	return Owner{Pod: parts[0], Namespace: parts[1], Container: parts[2]}, id, true
}

// ParsePodLogDir parses "<namespace>_<pod>_<uid>".
func ParsePodLogDir(name string) (Owner, bool) {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || len(parts[2]) != 36 {
		return Owner{}, false
	}
	return Owner{Namespace: parts[0], Pod: parts[1], PodUID: parts[2]}, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
