// Package plugintest runs a backend plugin binary the way Grafana does (hashicorp/go-plugin,
// gRPC, the SDK's handshake) and calls it through the SDK's protocol clients, so tests exercise
// the real executable over the real wire.
package plugintest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
)

// DistEnv names a built dist/ folder; when set, Binary uses its executable instead of building.
const DistEnv = "INFERSCOPE_DIST"

// ExecutableName is the data source's executable, without the _<os>_<arch> suffix.
const ExecutableName = "gpx_inferscope_datasource"

var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

// Binary returns the path of the data source executable for this platform: from $INFERSCOPE_DIST
// (dist/datasource/gpx_inferscope_datasource_<os>_<arch>) when set, else built once per test
// process from ./pkg with main.version set to version.
func Binary(t testing.TB, version string) string {
	t.Helper()
	name := fmt.Sprintf("%s_%s_%s", ExecutableName, runtime.GOOS, runtime.GOARCH)
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if dist := os.Getenv(DistEnv); dist != "" {
		p := filepath.Join(dist, "datasource", name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s, but the executable is not there: %v", DistEnv, dist, err)
		}
		return p
	}
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		buildDir, buildErr = os.MkdirTemp("", "plugintest-")
		if buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, name)
		cmd := exec.Command("go", "build", "-tags", "arrow_json_stdlib", "-ldflags", "-X main.version="+version, "-o", buildPath, "./pkg")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./pkg: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// Cleanup removes the binary Binary built; call it from TestMain after m.Run.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the Go module")
	}
	return filepath.Dir(mod), nil
}

// Plugin is a running plugin process with the protocol clients Grafana uses.
type Plugin struct {
	Diagnostics grpcplugin.DiagnosticsClient
	Resource    grpcplugin.ResourceClient
	Data        grpcplugin.DataClient
	client      *plugin.Client
}

// Start launches binary as Grafana does and dispenses the clients. The process is killed when
// the test ends.
func Start(t testing.TB, binary string) *Plugin {
	t.Helper()
	w := &testWriter{t: t}
	t.Cleanup(w.stop) // registered first, so it runs after the process is killed
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Warn, Output: w})
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]plugin.PluginSet{
			grpcplugin.ProtocolVersion: {
				"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
				"resource":    &grpcplugin.ResourceGRPCPlugin{},
				"data":        &grpcplugin.DataGRPCPlugin{},
				"stream":      &grpcplugin.StreamGRPCPlugin{},
			},
		},
		Cmd:              exec.Command(binary),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start %s over the plugin protocol: %v", binary, err)
	}
	if v := client.NegotiatedVersion(); v != grpcplugin.ProtocolVersion {
		t.Fatalf("negotiated protocol version %d, want %d", v, grpcplugin.ProtocolVersion)
	}
	p := &Plugin{client: client}
	for name, dst := range map[string]any{"diagnostics": &p.Diagnostics, "resource": &p.Resource, "data": &p.Data} {
		raw, err := rpc.Dispense(name)
		if err != nil {
			t.Fatalf("dispense %s: %v", name, err)
		}
		switch d := dst.(type) {
		case *grpcplugin.DiagnosticsClient:
			*d = raw.(grpcplugin.DiagnosticsClient)
		case *grpcplugin.ResourceClient:
			*d = raw.(grpcplugin.ResourceClient)
		case *grpcplugin.DataClient:
			*d = raw.(grpcplugin.DataClient)
		}
	}
	return p
}

// Exited reports whether the plugin process has ended (a crash, for instance).
func (p *Plugin) Exited() bool { return p.client.Exited() }

// PluginContext is what Grafana sends with every call for a data-source instance.
func PluginContext(pluginID string, s backend.DataSourceInstanceSettings) *pluginv2.PluginContext {
	s.Type = pluginID
	return backend.ToProto().PluginContext(backend.PluginContext{OrgID: 1, PluginID: pluginID, DataSourceInstanceSettings: &s})
}

// CheckHealth calls the health check.
func (p *Plugin) CheckHealth(ctx context.Context, pc *pluginv2.PluginContext) (*backend.CheckHealthResult, error) {
	resp, err := p.Diagnostics.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: pc})
	if err != nil {
		return nil, err
	}
	return backend.FromProto().CheckHealthResponse(resp), nil
}

// QueryData sends queries and decodes the frames.
func (p *Plugin) QueryData(ctx context.Context, pc *pluginv2.PluginContext, queries ...backend.DataQuery) (*backend.QueryDataResponse, error) {
	req := backend.ToProto().QueryDataRequest(&backend.QueryDataRequest{Queries: queries})
	req.PluginContext = pc
	resp, err := p.Data.QueryData(ctx, req)
	if err != nil {
		return nil, err
	}
	return backend.FromProto().QueryDataResponse(resp)
}

// CallResource calls a resource and joins the streamed answer.
func (p *Plugin) CallResource(ctx context.Context, pc *pluginv2.PluginContext, method, path string) (*backend.CallResourceResponse, error) {
	stream, err := p.Resource.CallResource(ctx, &pluginv2.CallResourceRequest{PluginContext: pc, Method: method, Path: path, Url: path})
	if err != nil {
		return nil, err
	}
	var out *backend.CallResourceResponse
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		r := backend.FromProto().CallResourceResponse(chunk)
		if out == nil {
			out = r
			continue
		}
		out.Body = append(out.Body, r.Body...)
	}
	if out == nil {
		return nil, errors.New("the resource call answered nothing")
	}
	return out, nil
}

// testWriter sends the host-side protocol log to the test log until the test ends; go-plugin's
// goroutines may still write after that, when t.Log would panic.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
