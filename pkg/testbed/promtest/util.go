package promtest

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"sync"
)

// LogBuffer collects what a server or a goroutine writes, safe for concurrent writers and
// readers; tests keep a process's output in one to show it when they fail.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// insecureTransport is used only for the readiness probe of a server the test started itself.
func insecureTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // our own loopback server
	return tr
}

func (b *LogBuffer) String() string { return string(b.Bytes()) }
