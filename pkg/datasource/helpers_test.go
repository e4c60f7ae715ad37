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
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"golang.org/x/crypto/bcrypt"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
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

// closedPortURL returns an http URL on 127.0.0.1 where nothing listens.
func closedPortURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
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
