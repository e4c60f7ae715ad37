package promtest

import (
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// FreeAddr returns a 127.0.0.1 address whose port nothing listened on a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ClosedURL is an http URL on 127.0.0.1 where nothing listens: a server that cannot be reached.
func ClosedURL(t testing.TB) string { return "http://" + FreeAddr(t) }

// Process is a server a test started: its output, and its exit once it ends.
type Process struct {
	Logs   *LogBuffer
	Exited <-chan error
	stop   func() error
}

// StartProcess runs bin with args for the rest of the test: interrupted when the test ends, and
// killed if it has not stopped 20 s later.
func StartProcess(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	logs := &LogBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	done := make(chan error, 1)
	go func() { err := cmd.Wait(); exited <- err; done <- err }()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case stopErr = <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				stopErr = <-done
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	return &Process{Logs: logs, Exited: exited, stop: stop}
}

// stopProcess interrupts p and waits for it (killing it after 20 s); once only.
func stopProcess(p *Process) error { return p.stop() }
