package datasource

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"golang.org/x/crypto/bcrypt"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// dataStart is where the synthetic history of startPromWithCounters begins.
var dataStart = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// Known truth of startPromWithCounters: per model, a counter growing at this many requests per
// second, sampled every 15 s for an hour.
var counterRates = map[string]float64{"resnet50": 10, "bert-base": 2.5, `we"ird\name`: 0.5}

const counterSpan = time.Hour

// startPromWithCounters starts Prometheus on a TSDB with
// inference_requests_total{model_name=<m>} rising by counterRates[m]/s from dataStart.
func startPromWithCounters(t *testing.T, opts promtest.Options) *promtest.Server {
	t.Helper()
	promtest.RequireBinary(t, "promtool")
	dir := t.TempDir()
	var om strings.Builder
	om.WriteString("# HELP inference_requests_total Requests.\n# TYPE inference_requests_total counter\n")
	for m, rate := range counterRates {
		name := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(m)
		for ts := time.Duration(0); ts <= counterSpan; ts += 15 * time.Second {
			fmt.Fprintf(&om, "inference_requests_total{model_name=\"%s\"} %g %d\n", name, rate*ts.Seconds(), dataStart.Add(ts).Unix())
		}
	}
	om.WriteString("# EOF\n")
	file := filepath.Join(dir, "history.om")
	if err := os.WriteFile(file, []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.DataDir = filepath.Join(dir, "data")
	if err := promtest.CreateBlocks(context.Background(), file, opts.DataDir); err != nil {
		t.Fatal(err)
	}
	return promtest.Start(t, opts)
}

// settingsJSON builds instance settings the way Grafana hands them to the plugin.
func instanceSettings(t testing.TB, url string, jsonData map[string]any, secure map[string]string) backend.DataSourceInstanceSettings {
	t.Helper()
	raw, err := json.Marshal(jsonData)
	if err != nil {
		t.Fatal(err)
	}
	s := backend.DataSourceInstanceSettings{
		UID: "inferscope-test", Name: "Inferscope", Type: PluginID, URL: url,
		JSONData: raw, DecryptedSecureJSONData: secure, Updated: time.Now(),
	}
	if v, ok := jsonData["basicAuth"].(bool); ok && v {
		s.BasicAuthEnabled = true
		s.BasicAuthUser, _ = jsonData["basicAuthUser"].(string)
	}
	return s
}

func newTestDS(t testing.TB, s backend.DataSourceInstanceSettings) *Datasource {
	t.Helper()
	d := New(context.Background(), s, "1.2.3-test", DefaultLimits)
	t.Cleanup(d.Dispose)
	return d
}

// resourceAnswer calls a resource in process and returns its one answer.
func resourceAnswer(t *testing.T, d *Datasource, req *backend.CallResourceRequest) *backend.CallResourceResponse {
	t.Helper()
	var got []*backend.CallResourceResponse
	err := d.CallResource(context.Background(), req, backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		got = append(got, r)
		return nil
	}))
	if err != nil || len(got) != 1 {
		t.Fatalf("%s %s: %v, %d answers", req.Method, req.URL+req.Path, err, len(got))
	}
	return got[0]
}

// getReport calls a GET resource in process (query: its URL with the query string) and returns
// the status, the answer decoded as R (zero when it is not one) and the body.
func getReport[R any](t *testing.T, d *Datasource, path, query string) (int, R, string) {
	t.Helper()
	ans := resourceAnswer(t, d, &backend.CallResourceRequest{Method: http.MethodGet, Path: path, URL: query})
	var r R
	_ = json.Unmarshal(ans.Body, &r)
	return ans.Status, r, string(ans.Body)
}

// startPluginOnBed builds and runs the plugin executable the way Grafana does, its data source
// set (jsonData) on a real Prometheus serving the test bed's history. Skipped with -short.
func startPluginOnBed(t *testing.T, jsonData map[string]any) (*plugintest.Plugin, *pluginv2.PluginContext, *testbed.Scenario) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the plugin executable")
	}
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	p := plugintest.Start(t, plugintest.Binary(t, protocolVersion))
	return p, plugintest.PluginContext(PluginID, instanceSettings(t, srv.URL, jsonData, nil)), s
}

// resourceOverGRPC calls a resource through the plugin as Grafana does and returns the answer's
// status and whole body.
func resourceOverGRPC(t *testing.T, p *plugintest.Plugin, req *pluginv2.CallResourceRequest) (int, []byte) {
	t.Helper()
	stream, err := p.Resource.CallResource(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var status int
	var body []byte
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if status == 0 {
			status = int(chunk.Code)
		}
		body = append(body, chunk.Body...)
	}
	return status, body
}

// checkRecorded keeps a recorded answer that the app's tests replay (under src/) equal to the
// data source's answer, compared as JSON values (a formatter may re-indent the file).
// INFERSCOPE_UPDATE_FIXTURES=1 rewrites the file instead.
func checkRecorded(t *testing.T, path string, answer any) {
	t.Helper()
	want, err := json.MarshalIndent(answer, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if os.Getenv("INFERSCOPE_UPDATE_FIXTURES") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	var gotV, wantV any
	if err == nil {
		err = json.Unmarshal(got, &gotV)
	}
	_ = json.Unmarshal(want, &wantV)
	if err != nil || !reflect.DeepEqual(gotV, wantV) {
		test, _, _ := strings.Cut(t.Name(), "/")
		t.Errorf("%s is not the data source's answer (%v): regenerate with INFERSCOPE_UPDATE_FIXTURES=1 go test ./pkg/datasource -run %s", path, err, test)
	}
}

// testPKI is a CA and a server certificate for 127.0.0.1 signed by it.
type testPKI struct {
	CAPEM             string
	CertFile, KeyFile string
	OtherCAPEM        string // a CA that did not sign the server certificate
}

var (
	pkiOnce sync.Once
	pkiDir  string
	pki     testPKI
	pkiErr  error
)

func makePKI(t *testing.T) testPKI {
	t.Helper()
	pkiOnce.Do(func() {
		pkiDir, pkiErr = os.MkdirTemp("", "inferscope-pki-")
		if pkiErr != nil {
			return
		}
		pki, pkiErr = writePKI(pkiDir)
	})
	if pkiErr != nil {
		t.Fatal(pkiErr)
	}
	return pki
}

func writePKI(dir string) (testPKI, error) {
	newCA := func(cn string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, nil, nil, err
		}
		cert, err := x509.ParseCertificate(der)
		return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), err
	}
	ca, caKey, caPEM, err := newCA("Inferscope test CA")
	if err != nil {
		return testPKI{}, err
	}
	_, _, otherPEM, err := newCA("Some other CA")
	if err != nil {
		return testPKI{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return testPKI{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano() + 1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return testPKI{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return testPKI{}, err
	}
	p := testPKI{CAPEM: string(caPEM), OtherCAPEM: string(otherPEM),
		CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key")}
	if err := os.WriteFile(p.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return testPKI{}, err
	}
	if err := os.WriteFile(p.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return testPKI{}, err
	}
	return p, nil
}

// webConfig is a Prometheus --web.config.file with basic auth for user/password and, when
// pki is not nil, TLS.
func webConfig(t *testing.T, user, password string, p *testPKI) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if p != nil {
		fmt.Fprintf(&b, "tls_server_config:\n  cert_file: %s\n  key_file: %s\n", p.CertFile, p.KeyFile)
	}
	fmt.Fprintf(&b, "basic_auth_users:\n  %s: %s\n", user, hash)
	return b.String()
}

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	if pkiDir != "" {
		os.RemoveAll(pkiDir)
	}
	os.Exit(code)
}
