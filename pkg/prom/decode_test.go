package prom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

const testWhere = "http://prom.test:9090"

func decodeString(body string, maxSeries, maxPoints int) (answer, error) {
	return decodeAnswer(strings.NewReader(body), "query_range", testWhere, maxSeries, maxPoints)
}

func ms(t int64) time.Time { return model.Time(t).Time() }

func TestDecodeAnswer(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name, body string
		want       answer
	}{
		{"matrix with special values and fractional seconds", `{"status":"success","data":{"resultType":"matrix","result":[
			{"metric":{"__name__":"up","job":"a\"b"},"values":[[1700000000.123,"NaN"],[1700000000.5,"+Inf"],[1700000001,"-Inf"],[1700000002.1239,"1e-3"]]},
			{"metric":{},"values":[[-1.5,"42"]]}]}}`,
			answer{resultType: "matrix", series: []Series{
				{Labels: Labels{"__name__": "up", "job": `a"b`}, Points: []Point{
					{ms(1700000000123), nan}, {ms(1700000000500), math.Inf(1)}, {ms(1700000001000), math.Inf(-1)}, {ms(1700000002123), 0.001}}},
				{Labels: Labels{}, Points: []Point{{ms(-1500), 42}}},
			}}},
		{"vector", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"ünï 模型"},"value":[1700000000.001,"3.25"]}]}}`,
			answer{resultType: "vector", samples: []Sample{{Labels: Labels{"a": "ünï 模型"}, Point: Point{ms(1700000000001), 3.25}}}}},
		{"scalar", `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"2"]}}`,
			answer{resultType: "scalar", samples: []Sample{{Labels: Labels{}, Point: Point{ms(1700000000000), 2}}}}},
		{"string", `{"status":"success","data":{"resultType":"string","result":[1700000000.25,"hello"]}}`,
			answer{resultType: "string", text: "hello", samples: []Sample{{Labels: Labels{}, Point: Point{T: ms(1700000000250)}}}}},
		{"empty result", `{"status":"success","data":{"resultType":"matrix","result":[]}}`,
			answer{resultType: "matrix", series: []Series{}}},
		{"warnings and infos", `{"status":"success","warnings":["w1","w2"],"data":{"resultType":"vector","result":[]},"infos":["PromQL info: i1"]}`,
			answer{resultType: "vector", samples: []Sample{}, warnings: []string{"w1", "w2"}, infos: []string{"PromQL info: i1"}}},
		{"unknown fields skipped", `{"status":"success","stats":{"timings":{"a":1}},"data":{"x":[1,{"y":null}],"resultType":"matrix","result":[
			{"metric":{"a":"1"},"exemplars":[{"v":1}],"values":[[1,"1"]],"extra":"z"}],"analysis":{}}}`,
			answer{resultType: "matrix", series: []Series{{Labels: Labels{"a": "1"}, Points: []Point{{ms(1000), 1}}}}}},
		{"result before its type", `{"data":{"result":[{"metric":{"a":"1"},"values":[[2,"5"]]}],"resultType":"matrix"},"status":"success"}`,
			answer{resultType: "matrix", series: []Series{{Labels: Labels{"a": "1"}, Points: []Point{{ms(2000), 5}}}}}},
		{"an empty histogram list holds none", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[2,"5"]],"histograms":[]}]}}`,
			answer{resultType: "matrix", series: []Series{{Labels: Labels{"a": "1"}, Points: []Point{{ms(2000), 5}}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeString(tc.body, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := answerDiff(got, tc.want); diff != "" {
				t.Error(diff)
			}
			// One byte at a time: every value straddles the iterator's reads.
			got, err = decodeAnswer(iotest.OneByteReader(strings.NewReader(tc.body)), "query_range", testWhere, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := answerDiff(got, tc.want); diff != "" {
				t.Errorf("one byte at a time: %s", diff)
			}
		})
	}
}

func TestDecodeAnswerRefuses(t *testing.T) {
	matrix := func(result string) string {
		return `{"status":"success","data":{"resultType":"matrix","result":[` + result + `]}}`
	}
	cases := []struct {
		name, body string
		maxSeries  int
		maxPoints  int
		kind       ErrorKind
		limit      StoreLimit
		msg        []string
	}{
		{"native histograms in a series", matrix(`{"metric":{"job":"api"},"histograms":[[1,{"count":"2","sum":"3","buckets":[[0,"0","1","2"]]}]]}`), 0, 0,
			KindBadQuery, 0, []string{`native histograms (series {job="api"})`, "histogram_quantile"}},
		{"native histogram in a sample", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"api"},"histogram":[1,{"count":"2","sum":"3"}]}]}}`, 0, 0,
			KindBadQuery, 0, []string{"native histograms"}},
		{"truncated", matrix(`{"metric":{},"values":[[1,"2"]]}`)[:60], 0, 0, KindNotPrometheus, 0,
			[]string{"the server at " + testWhere + " answered query_range with malformed JSON"}},
		{"not JSON", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"]x]}]}}`, 0, 0,
			KindNotPrometheus, 0, []string{"answered query_range with malformed JSON", `near "`}},
		{"trailing data", matrix(``) + `{}`, 0, 0, KindNotPrometheus, 0, []string{"more data after the answer's JSON object"}},
		{"a value that is not a number", matrix(`{"metric":{},"values":[[1,"fast"]]}`), 0, 0, KindNotPrometheus, 0, []string{`a sample value that is not a number: "fast"`}},
		{"an unquoted value", matrix(`{"metric":{},"values":[[1,2]]}`), 0, 0, KindNotPrometheus, 0, []string{"malformed JSON"}},
		{"a timestamp in a string", matrix(`{"metric":{},"values":[["1","2"]]}`), 0, 0, KindNotPrometheus, 0, []string{"a timestamp that is not seconds"}},
		{"a timestamp with an exponent", matrix(`{"metric":{},"values":[[1e9,"2"]]}`), 0, 0, KindNotPrometheus, 0, []string{"a timestamp that is not seconds"}},
		{"a sample of three", matrix(`{"metric":{},"values":[[1,"2","3"]]}`), 0, 0, KindNotPrometheus, 0, []string{"more than [timestamp, value]"}},
		{"a sample without a value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"}}]}}`, 0, 0,
			KindNotPrometheus, 0, []string{`a sample without a value for {a="b"}`}},
		{"no result", `{"status":"success","datum":{"resultType":"scalar","result":[1,"1"]}}`, 0, 0, KindNotPrometheus, 0, []string{"answered query_range with an unexpected result type (nothing)"}},
		{"an unknown result type", `{"status":"success","data":{"resultType":"tensor","result":[]}}`, 0, 0, KindNotPrometheus, 0, []string{`unknown result type "tensor"`}},
		{"an empty label name", matrix(`{"metric":{"":"x"},"values":[]}`), 0, 0, KindNotPrometheus, 0, []string{"invalid label name"}},
		{"more points than the range holds", matrix(`{"metric":{"a":"1"},"values":[[1,"1"],[2,"1"],[3,"1"]]}`), 0, 2,
			KindNotPrometheus, 0, []string{`3 points for series {a="1"}, more than the 2 its range holds`}},
		{"Prometheus' error envelope", `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}`, 0, 0,
			KindBadQuery, 0, []string{"Prometheus rejected the query: 1:5: parse error"}},
		{"the store's sample limit", `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`, 0, 0,
			KindExecution, StoreLimitSamples, []string{"Prometheus could not run the query: query processing would load too many samples", "--query.max-samples"}},
		{"Prometheus' query timeout", `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, 0, 0,
			KindTimeout, 0, []string{"the query timed out in Prometheus", "--query.timeout"}},
		// The series past the limit are not decoded: the third's bad value would otherwise be
		// the error.
		{"the series limit", matrix(`{"metric":{"a":"1"},"values":[[1,"1"]]},{"metric":{"a":"2"},"values":[[1,"1"]]},{"metric":{"a":"3"},"values":[[1,"not decoded"]]}`), 2, 0,
			KindLimit, 0, []string{"the query returned 3 series, more than the limit of 2: aggregate it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeString(tc.body, tc.maxSeries, tc.maxPoints)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want an *Error", err, err)
			}
			if e.Kind != tc.kind || e.Limit != tc.limit || e.URL != testWhere {
				t.Errorf("kind %d, limit %d, URL %q; want kind %d, limit %d: %v", e.Kind, e.Limit, e.URL, tc.kind, tc.limit, err)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q\ndoes not say %q", err, m)
				}
			}
		})
	}
	// Within the limit, the same answer is read.
	if _, err := decodeString(matrix(`{"metric":{"a":"1"},"values":[[1,"1"]]},{"metric":{"a":"2"},"values":[[1,"1"]]}`), 2, 0); err != nil {
		t.Errorf("two series under a limit of 2: %v", err)
	}
}

// TestDecodeAgreesWithClientGolang decodes a real Prometheus' answers both ways: decodeAnswer
// and client_golang's v1 API (the client's decoding before it), which must give the same series.
func TestDecodeAgreesWithClientGolang(t *testing.T) {
	c := startStored(t)
	for _, q := range []struct {
		path  string
		query url.Values
	}{
		{"/api/v1/query_range", url.Values{"query": {"probe_value"}, "start": {"1709294340"}, "end": {"1709294460.5"}, "step": {"7.5"}}},
		{"/api/v1/query_range", url.Values{"query": {"rate(probe_value[1m]) / 0"}, "start": {"1709294340"}, "end": {"1709294460"}, "step": {"15"}}},
		{"/api/v1/query", url.Values{"query": {"probe_value"}, "time": {"1709294430.125"}}},
		{"/api/v1/query", url.Values{"query": {"-1/0"}, "time": {"1709294430"}}},
		{"/api/v1/query", url.Values{"query": {`"text"`}, "time": {"1709294430"}}},
	} {
		resp, err := http.Get(c.url + q.path + "?" + q.query.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		endpoint := strings.TrimPrefix(q.path, "/api/v1/")
		got, err := decodeAnswer(bytes.NewReader(body.Bytes()), endpoint, testWhere, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", q.query, err)
		}
		if got.resultType == "string" { // client_golang does not decode strings
			if got.text != "text" || len(got.samples) != 1 || got.samples[0].T.Unix() != 1709294430 {
				t.Errorf("string: %+v", got)
			}
			continue
		}
		want, err := viaClientGolang(body.Bytes())
		if err != nil {
			t.Fatalf("%s: client_golang: %v", q.query, err)
		}
		if diff := answerDiff(got, want); diff != "" {
			t.Errorf("%s: %s", q.query, diff)
		}
		if len(got.series)+len(got.samples) == 0 {
			t.Errorf("%s: nothing decoded from %.200s", q.query, body.String())
		}
	}
}

// FuzzDecodeAnswer: no body makes the decoder panic, every refusal is an *Error, and a body
// both decoders accept gives the same answer as client_golang's (same labels, times to the
// millisecond, values, NaN equal to NaN).
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","a":"\u00e9\"x"},"values":[[1700000000.123,"NaN"],[1700000000.5,"+Inf"],[1700000001,"-1e-3"]]}]},"warnings":["w"],"infos":["i"]}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1.001,"3"]}]}}`,
		`{"status":"success","data":{"resultType":"scalar","result":[-0.5,"2"]}}`,
		`{"status":"success","data":{"resultType":"string","result":[1,"s"]}}`,
		`{"status":"success","data":{"result":[{"metric":{},"values":[[1,"1"]]}],"resultType":"matrix"}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"histograms":[[1,{"count":"1","sum":"1"}]]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"]]}]}} x`,
		`null`, `[]`, `{`,
		// Keys in another case are read as client_golang reads them (encoding/json's folding).
		`{"Status":"success","DATA":{"ResultType":"vector","RESULT":[{"Metric":{"a":"b"},"VALUE":[1,"2"]}]},"wArnings":["w"],"INFOS":["i"]}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"METRIC":{"a":"b"},"Value":[1,"2"]}]},"ſtatus":"success"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeAnswer(bytes.NewReader(body), "query_range", testWhere, 0, 0)
		if err != nil {
			if KindOf(err) == 0 {
				t.Fatalf("refusal %v (%T) is not an *Error", err, err)
			}
			return
		}
		want, cgErr := viaClientGolang(body)
		if cgErr != nil {
			return // a body client_golang refuses has nothing to compare with
		}
		if diff := answerDiff(got, want); diff != "" {
			t.Errorf("%q: %s", body, diff)
		}
	})
}

// oracleClient is an api.Client that answers every request with one body, so that client_golang's
// own decoding (its v1 API, which the client used before decodeAnswer) is the oracle.
type oracleClient struct{ body []byte }

func (o oracleClient) URL(ep string, _ map[string]string) *url.URL {
	return &url.URL{Scheme: "http", Host: "oracle", Path: ep}
}

func (o oracleClient) Do(_ context.Context, _ *http.Request) (*http.Response, []byte, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}}, o.body, nil
}

// viaClientGolang decodes body with client_golang's v1 API and copies the result into our
// types, as the client did before decodeAnswer.
func viaClientGolang(body []byte) (answer, error) {
	v, warnings, infos, err := v1.NewAPI(oracleClient{body}).Query(context.Background(), "x", time.Time{})
	if err != nil {
		return answer{}, err
	}
	a := answer{warnings: warnings, infos: infos}
	switch val := v.(type) {
	case model.Matrix:
		a.resultType, a.series = "matrix", make([]Series, len(val))
		for i, ss := range val {
			points := make([]Point, len(ss.Values))
			for j, p := range ss.Values {
				points[j] = Point{T: p.Timestamp.Time(), V: float64(p.Value)}
			}
			a.series[i] = Series{Labels: labelsOf(ss.Metric), Points: points}
		}
	case model.Vector:
		a.resultType, a.samples = "vector", make([]Sample, len(val))
		for i, s := range val {
			a.samples[i] = Sample{Labels: labelsOf(s.Metric), Point: Point{T: s.Timestamp.Time(), V: float64(s.Value)}}
		}
	case *model.Scalar:
		a.resultType = "scalar"
		a.samples = []Sample{{Labels: Labels{}, Point: Point{T: val.Timestamp.Time(), V: float64(val.Value)}}}
	case *model.String:
		a.resultType, a.text = "string", val.Value
		a.samples = []Sample{{Labels: Labels{}, Point: Point{T: val.Timestamp.Time()}}}
	}
	return a, nil
}

func labelsOf(m model.Metric) Labels {
	l := make(Labels, len(m))
	for k, v := range m {
		l[string(k)] = string(v)
	}
	return l
}

// answerDiff describes how got differs from want ("" when it does not): times compared to the
// millisecond, NaN equal to NaN.
func answerDiff(got, want answer) string {
	var d []string
	if got.resultType != want.resultType || got.text != want.text {
		d = append(d, fmt.Sprintf("result %s %q, want %s %q", got.resultType, got.text, want.resultType, want.text))
	}
	if !slices.Equal(got.warnings, want.warnings) || !slices.Equal(got.infos, want.infos) {
		d = append(d, fmt.Sprintf("warnings %q infos %q, want %q %q", got.warnings, got.infos, want.warnings, want.infos))
	}
	if len(got.series) != len(want.series) || len(got.samples) != len(want.samples) {
		return strings.Join(append(d, fmt.Sprintf("%d series %d samples, want %d and %d", len(got.series), len(got.samples), len(want.series), len(want.samples))), "; ")
	}
	for i, s := range got.series {
		w := want.series[i]
		if s.Labels.String() != w.Labels.String() || len(s.Points) != len(w.Points) {
			d = append(d, fmt.Sprintf("series %d: %s with %d points, want %s with %d", i, s.Labels, len(s.Points), w.Labels, len(w.Points)))
			continue
		}
		for j, p := range s.Points {
			if !samePoint(p, w.Points[j]) {
				d = append(d, fmt.Sprintf("series %s point %d: %v, want %v", s.Labels, j, p, w.Points[j]))
			}
		}
	}
	for i, s := range got.samples {
		w := want.samples[i]
		if s.Labels.String() != w.Labels.String() || !samePoint(s.Point, w.Point) {
			d = append(d, fmt.Sprintf("sample %d: %s %v, want %s %v", i, s.Labels, s.Point, w.Labels, w.Point))
		}
	}
	return strings.Join(d, "; ")
}

func samePoint(a, b Point) bool {
	return a.T.UnixMilli() == b.T.UnixMilli() && (a.V == b.V || math.IsNaN(a.V) && math.IsNaN(b.V))
}
