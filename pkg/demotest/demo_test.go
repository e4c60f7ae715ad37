// Package demotest runs the README's demo command (scripts/demo.sh, without Docker) as a
// newcomer would, and checks what it promises: signals stop it at every stage, saying what it
// stopped and leaving nothing running, and the commands it prints run as printed.
package demotest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// hangGuard bounds each wait so a broken demo fails the test instead of hanging it; it is not
// a speed requirement.
const hangGuard = 8 * time.Minute

type demo struct {
	t      *testing.T
	cmd    *exec.Cmd
	work   string
	mu     sync.Mutex
	stdout strings.Builder
	stderr strings.Builder
	lines  chan string // stderr and stdout lines as they come
	done   chan error
}

// freeBase finds a port p with p, p+1 and p+2 free on 127.0.0.1 (the demo's three probes).
func freeBase(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := base+2 < 65536
		for p := base; ok && p <= base+2; p++ {
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err != nil {
				ok = false
			} else {
				l.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no three consecutive free ports")
	return 0
}

func port(t *testing.T) string {
	t.Helper()
	addr := promtest.FreeAddr(t)
	return addr[strings.LastIndex(addr, ":")+1:]
}

func startDemo(t *testing.T) *demo {
	t.Helper()
	promtest.RequireBinary(t, "prometheus")
	promtest.RequireBinary(t, "promtool")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	d := &demo{t: t, work: t.TempDir(), lines: make(chan string, 1024), done: make(chan error, 1)}
	d.cmd = exec.Command("bash", filepath.Join(root, "scripts", "demo.sh"))
	d.cmd.Dir = root
	d.cmd.Env = append(os.Environ(), "DEMO_NO_DOCKER=1", "DEMO_WORK="+d.work,
		"DEMO_PROMETHEUS_PORT="+port(t), "DEMO_LOADGEN_PORT="+port(t), fmt.Sprintf("DEMO_PROBE_PORT=%d", freeBase(t)))
	// Its own process group, as a terminal gives a foreground job: Ctrl-C is a SIGINT to the group.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	read := func(r io.Reader, into *strings.Builder) {
		defer readers.Done()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			d.mu.Lock()
			into.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			select {
			case d.lines <- sc.Text():
			default: // nobody is waiting for lines any more
			}
		}
	}
	readers.Add(2)
	go read(outR, &d.stdout)
	go read(errR, &d.stderr)
	go func() {
		readers.Wait()
		d.done <- d.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL) // whatever a failed test left
	})
	return d
}

// waitFor reads output lines until one contains want.
func (d *demo) waitFor(want string) {
	d.t.Helper()
	deadline := time.After(hangGuard)
	for {
		select {
		case line := <-d.lines:
			if strings.Contains(line, want) {
				return
			}
		case err := <-d.done:
			d.done <- err
			d.t.Fatalf("the demo ended (%v) before printing %q:\n%s", err, want, d.output())
		case <-deadline:
			d.t.Fatalf("no %q after %s:\n%s", want, hangGuard, d.output())
		}
	}
}

func (d *demo) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return "stdout:\n" + d.stdout.String() + "stderr:\n" + d.stderr.String()
}

// end waits for the demo to exit and returns its exit status.
func (d *demo) end() int {
	d.t.Helper()
	select {
	case err := <-d.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		if err != nil {
			d.t.Fatal(err)
		}
		return 0
	case <-time.After(hangGuard):
		d.t.Fatalf("the demo did not stop within %s of the signal:\n%s", hangGuard, d.output())
		return -1
	}
}

// nothingLeft checks that no process of the demo's group is still running (a zombie is dead
// already: only its exit status waits to be collected by whoever adopted it).
func (d *demo) nothingLeft() {
	d.t.Helper()
	out, err := exec.Command("ps", "-eo", "pid=,pgid=,stat=,args=").Output()
	if err != nil {
		d.t.Fatal(err)
	}
	var alive []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == fmt.Sprint(d.cmd.Process.Pid) && !strings.HasPrefix(f[2], "Z") {
			alive = append(alive, line)
		}
	}
	if len(alive) > 0 {
		d.t.Errorf("processes of the demo are still running after it stopped:\n%s", strings.Join(alive, "\n"))
	}
}

// SIGTERM from another shell while the history is imported: bash runs traps only between
// foreground commands, so the import used to run on for a minute.
func TestDemoStopsOnSIGTERMDuringTheImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and writes the history")
	}
	d := startDemo(t)
	d.waitFor("writing 8 days of history ending now and importing it")
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil { // the script alone, not its group
		t.Fatal(err)
	}
	if code := d.end(); code != 143 {
		t.Errorf("exit status %d after SIGTERM, want 143:\n%s", code, d.output())
	}
	out := d.output()
	if !strings.Contains(out, "==> terminated") || !strings.Contains(out, "==> stopped: the history import") {
		t.Errorf("the demo did not say what it stopped:\n%s", out)
	}
	d.nothingLeft()
}

var printedCLI = regexp.MustCompile(`(?m)^\s+(/\S+/inferscope (?:triage|report|gate)\s+--prometheus .*)$`)

// The whole demo as a newcomer meets it: it comes up, the commands it prints run when pasted,
// and Ctrl-C stops every process it started.
func TestDemoCommandsRunAsPrintedAndCtrlCStopsAll(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and writes the history")
	}
	d := startDemo(t)
	d.waitFor("Ctrl-C stops everything.")
	out := d.output()
	cmds := printedCLI.FindAllStringSubmatch(out, -1)
	if len(cmds) < 3 {
		t.Fatalf("found %d printed commands, want the report, the gate and the incidents' triage:\n%s", len(cmds), out)
	}
	ran := map[string]bool{}
	for _, m := range cmds {
		kind := strings.Fields(m[1])[1]
		if ran[kind] {
			continue
		}
		ran[kind] = true
		c := exec.Command("bash", "-c", m[1]) // pasted into a shell, as printed
		res, err := c.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		// 0, 1, 3 and 5 are verdicts (README: ok or pass; a reading past its line or a failed
		// gate; insufficient data; no direction). 2 is a wrong command line, 4 an unreachable
		// Prometheus, 126/127 a shell that cannot run the command: not runnable as printed.
		if code == 2 || code == 4 || code >= 126 {
			t.Errorf("%s\nexit %d:\n%s", m[1], code, res)
		}
	}
	for _, kind := range []string{"report", "gate", "triage"} {
		if !ran[kind] {
			t.Errorf("no printed %s command", kind)
		}
	}
	if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	if code := d.end(); code != 130 {
		t.Errorf("exit status %d after Ctrl-C, want 130:\n%s", code, d.output())
	}
	// Ctrl-C reaches every process of the group at once; those still running when the trap
	// runs are stopped and named.
	if out := d.output(); !strings.Contains(out, "==> interrupted") {
		t.Errorf("the demo did not say it was interrupted:\n%s", out)
	}
	d.nothingLeft()
}
