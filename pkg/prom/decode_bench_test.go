package prom

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// BenchmarkDecode compares the client's decoding before decodeAnswer (client_golang's v1 API
// — encoding/json over the envelope, json-iterator over the data into model.Matrix — then a
// copy into Series) with decodeAnswer, on the same answer bodies held in memory: two answers of
// the test bed's Prometheus (1×) and a synthetic matrix of 5,000 series × 1,400 points.
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./pkg/prom/
func BenchmarkDecode(b *testing.B) {
	// Each body is made only when a benchmark that reads it runs (-bench selects).
	testbed := sync.OnceValue(func() []namedBody { return testbedAnswers(b) })
	bodies := []struct {
		name string
		body func() []byte
	}{
		{"test bed P95 by instance 6h at 15s", func() []byte { return testbed()[0].body }},
		{"test bed GPU utilisation 6h at 15s", func() []byte { return testbed()[1].body }},
		{"synthetic 5000 series x 1400 points", sync.OnceValue(func() []byte { return syntheticMatrix(5000, 1400) })},
	}
	for _, nb := range bodies {
		b.Run(nb.name+"/client_golang+copy", func(b *testing.B) {
			body := nb.body()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := viaClientGolang(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(nb.name+"/one-pass", func(b *testing.B) {
			body := nb.body()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeAnswer(bytes.NewReader(body), "query_range", testWhere, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type namedBody struct {
	name string
	body []byte
}

// testbedAnswers asks the 1× test bed's Prometheus for two range answers shaped like the
// engine's: a P95 per instance from bucket rates (the latency type's shape) and every GPU's
// utilisation (the gpu type's), both over the last 6 hours at 15 s.
func testbedAnswers(b *testing.B) []namedBody {
	dir, s := tbtest.TSDBFor(b, testbed.TSDBOptions{})
	srv := promtest.Start(b, promtest.Options{DataDir: dir})
	end := s.End().Truncate(time.Minute)
	var out []namedBody
	for _, q := range []struct{ name, expr string }{
		{"test bed P95 by instance 6h at 15s", `histogram_quantile(0.95, sum by (le, instance, model_name) (rate(inference_latency_seconds_bucket[5m])))`},
		{"test bed GPU utilisation 6h at 15s", `inferscope_gpu_utilization_ratio`},
	} {
		form := url.Values{"query": {q.expr}, "start": {strconv.FormatInt(end.Add(-6*time.Hour).Unix(), 10)},
			"end": {strconv.FormatInt(end.Unix(), 10)}, "step": {"15"}}
		resp, err := http.PostForm(srv.URL+"/api/v1/query_range", form)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: HTTP %d %v: %.300s", q.name, resp.StatusCode, err, body)
		}
		a, err := decodeAnswer(bytes.NewReader(body), "query_range", testWhere, 0, 0)
		if err != nil || len(a.series) == 0 {
			b.Fatalf("%s: %d series, %v", q.name, len(a.series), err)
		}
		b.Logf("%s: %d series, %s", q.name, len(a.series), FormatBytes(int64(len(body))))
		out = append(out, namedBody{q.name, body})
	}
	return out
}

// syntheticMatrix writes a matrix answer as Prometheus does: series of four labels, whole
// seconds a minute apart, values with Go's shortest float text.
func syntheticMatrix(series, points int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	buf.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range series {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"metric":{"__name__":"inferscope_gpu_utilization_ratio","instance":"node-%03d:9400","gpu":"%d","model_name":"model-%02d"},"values":[`, i/8, i%8, i%24)
		for j := range points {
			if j > 0 {
				buf.WriteByte(',')
			}
			buf.WriteByte('[')
			buf.WriteString(strconv.FormatInt(1700000000+int64(j)*60, 10))
			buf.WriteString(`,"`)
			buf.WriteString(strconv.FormatFloat(rng.Float64(), 'f', -1, 64))
			buf.WriteString(`"]`)
		}
		buf.WriteString(`]}`)
	}
	buf.WriteString(`]}}`)
	return buf.Bytes()
}
