package prom

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shortDecimalCases are values as exporters and Prometheus write them, and the edges of the
// fast path: signs, zeros, the longest integers and decimals it takes, and forms it leaves to
// strconv.ParseFloat.
var shortDecimalCases = []string{
	"0", "-0", "0.0", "-0.0", "00", "007", "1", "-1", "42", "0.37", "178.523", "49", "-12.5",
	"34102040330", "81920", "0.1", "0.3", "0.7", "2.675", "1.005", "9007199254740993", "9007199254740992",
	"18014398509481985", "999999999999999", "99999999999999999", "1234567890123456789", "9999999999999999999",
	"12345678901234567890", "0.123456789012345", "0.1234567890123456", "12345678901234.5", "1234567890123.45",
	"0.000000000000001", "1.", ".5", "-", "", "+1", "1e3", "1E-3", "NaN", "+Inf", "-Inf", "Inf", "0x10", "1_0",
	"1.2.3", "--1", "- 1", " 1", "1 ", "1a", "0.5e",
}

// TestParseShortDecimalIsParseFloat: wherever the fast path answers, it answers strconv.ParseFloat's
// float bit for bit (so decoding gives the same series as before), and it does answer the forms
// exporters write.
func TestParseShortDecimalIsParseFloat(t *testing.T) {
	check := func(s string) bool {
		got, ok := parseShortDecimal([]byte(s))
		if !ok {
			return false
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Errorf("%q: fast path %v, ParseFloat refuses it: %v", s, got, err)
		} else if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%q: fast path %v (%#x), ParseFloat %v (%#x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
		}
		return true
	}
	for _, s := range shortDecimalCases {
		check(s)
	}
	for _, s := range []string{"0", "-0", "0.37", "178.523", "34102040330", "9999999999999999999", "0.123456789012345"} {
		if !check(s) {
			t.Errorf("%q: not taken by the fast path", s)
		}
	}
	// Random decimals of every length around the limits, and the values Prometheus writes for
	// random floats (shortest form: up to 17 digits, which the fast path leaves to ParseFloat).
	r := rand.New(rand.NewPCG(1, 2))
	taken := 0
	for range 200000 {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteByte('-')
		}
		for range 1 + r.IntN(20) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		if r.IntN(2) == 0 {
			b.WriteByte('.')
			for range 1 + r.IntN(16) {
				b.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		if check(b.String()) {
			taken++
		}
		check(strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(30)-15)), 'f', -1, 64))
		check(strconv.FormatFloat(math.Float64frombits(r.Uint64()), 'f', -1, 64))
	}
	if taken == 0 {
		t.Error("no random decimal was taken by the fast path")
	}
}

// FuzzParseShortDecimal: no text makes the fast path answer other than ParseFloat.
func FuzzParseShortDecimal(f *testing.F) {
	for _, s := range shortDecimalCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseShortDecimal([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%q: fast path %v, ParseFloat %v (%v)", s, got, want, err)
		}
	})
}

// TestParseTimestamp: seconds with an optional fraction to milliseconds (digits past the third
// dropped), and the refusals: exponents, a '+', leading zeros, more than 15 digits, anything
// after the number.
func TestParseTimestamp(t *testing.T) {
	for _, c := range []struct {
		in string
		ms int64
		ok bool
	}{
		{"1795413600", 1795413600000, true}, {"1700000000.123", 1700000000123, true}, {"1700000000.5", 1700000000500, true},
		{"1700000002.1239", 1700000002123, true}, {"1.001", 1001, true}, {"0", 0, true}, {"0.25", 250, true}, {"-1.5", -1500, true},
		{" \t\r\n1", 1000, true}, {"999999999999999", 999999999999999000, true}, {"1.0000000000000000000009", 1000, true},
		{"", 0, false}, {"-", 0, false}, {"1e9", 0, false}, {"+1", 0, false}, {"01", 0, false}, {"00.5", 0, false},
		{"1000000000000000", 0, false}, {"1.", 0, false}, {".5", 0, false}, {"1.2.3", 0, false}, {"1 ", 0, false},
		{"1a", 0, false}, {"1.5x", 0, false}, {"--1", 0, false}, {"- 1", 0, false}, {"1.-5", 0, false},
	} {
		ms, ok := parseTimestamp([]byte(c.in))
		if ok != c.ok || ok && ms != c.ms {
			t.Errorf("parseTimestamp(%q) = %d, %v; want %d, %v", c.in, ms, ok, c.ms, c.ok)
		}
	}
}

// alignedOn is the reference for a query OnGrid: the answer's points as listed, each grid time
// taking the first point at exactly that time (NaN where none), as the engine lined them up.
func alignedOn(points []Point, g grid) []float64 {
	out := make([]float64, g.n)
	for i := range out {
		t := g.start + int64(i)*g.step
		out[i] = math.NaN()
		for _, p := range points {
			if p.T.UnixMilli() == t {
				out[i] = p.V
				break
			}
		}
	}
	return out
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// checkOnGrid decodes body both ways and compares: the same series, labels and errors, and
// each series' Values the reference alignment of its Points.
func checkOnGrid(t *testing.T, body string, g grid, maxPoints int) {
	t.Helper()
	want, wantErr := decodeString(body, 0, maxPoints)
	got, err := decodeAnswerOn(strings.NewReader(body), "query_range", testWhere, 0, maxPoints, &g)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%q: on the grid %v, listed %v", body, err, wantErr)
	}
	if err != nil {
		return
	}
	if got.resultType != want.resultType || len(got.series) != len(want.series) || len(got.samples) != len(want.samples) {
		t.Fatalf("%q: on the grid %+v, listed %+v", body, got, want)
	}
	for i, s := range got.series {
		if s.Points != nil || s.Labels.String() != want.series[i].Labels.String() {
			t.Errorf("%q: series %d: %v %v, want %v and no points", body, i, s.Labels, s.Points, want.series[i].Labels)
		}
		if ref := alignedOn(want.series[i].Points, g); !sameBits(s.Values, ref) {
			t.Errorf("%q: series %d: values %v, want %v", body, i, s.Values, ref)
		}
	}
}

// TestDecodeOnGrid: a range answer placed on its grid as it is decoded holds what lining its
// listed points up on the grid gives: missing points NaN, points off the grid or outside it
// left out, a repeated time its first value, in whatever order the points come; the limits and
// refusals are the same.
func TestDecodeOnGrid(t *testing.T) {
	matrix := func(result string) string {
		return `{"status":"success","data":{"resultType":"matrix","result":[` + result + `]}}`
	}
	g := grid{start: 1700000000000, step: 60000, n: 4}
	for _, body := range []string{
		matrix(`{"metric":{"a":"1"},"values":[[1700000000,"1"],[1700000060,"0.37"],[1700000120,"NaN"],[1700000180,"-Inf"]]}`),
		matrix(`{"metric":{"a":"1"},"values":[[1700000060,"2"],[1700000180,"34102040330"]]},{"metric":{"a":"2"},"values":[]},{"metric":{"a":"3"}}`),
		matrix(`{"metric":{"a":"1"},"values":[[1699999940,"1"],[1700000030,"2"],[1700000060.5,"3"],[1700000120,"4"],[1700000240,"5"]]}`),
		matrix(`{"metric":{"a":"1"},"values":[[1700000060,"1"],[1700000060,"2"],[1700000120,"3"]]}`),
		matrix(`{"metric":{"a":"1"},"values":[[1700000000,"1"],[1700000060,"2"],[1700000120,"3"],[1700000180,"4"],[1700000240,"5"],[1700000300,"6"]]}`),
		matrix(`{"metric":{"a":"1"},"values":[[1700000000,"fast"]]}`),
		matrix(`{"metric":{"a":"1"},"values":[[1700000120,"3"],[1700000000,"1"],[1700000120,"4"],[1700000060,"NaN"],[1700000060,"2"]]}`),
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1700000000,"3"]}]}}`,
	} {
		checkOnGrid(t, body, g, 5)
	}
}

// FuzzDecodeOnGrid: whatever the body, decoding onto a grid answers what decoding the list and
// lining it up does.
func FuzzDecodeOnGrid(f *testing.F) {
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[1,"1"],[2,"0.5"],[2.001,"3"],[4,"NaN"]]}]}}`, int64(1000), int64(1000), uint8(4), uint8(0))
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0.5,"1"],[1.5,"2"]]}]}}`, int64(500), int64(500), uint8(3), uint8(2))
	f.Fuzz(func(t *testing.T, body string, start, step int64, n, maxPoints uint8) {
		if step <= 0 || n == 0 {
			return
		}
		checkOnGrid(t, body, grid{start: start, step: step, n: int(n)}, int(maxPoints))
	})
}

// TestGridOf: a query's grid counts its start and every whole step up to its end; a step that
// is not whole milliseconds, or an end before the start, is refused.
func TestGridOf(t *testing.T) {
	start := ms(1700000000000)
	for _, c := range []struct {
		q    RangeQuery
		want grid
		ok   bool
	}{
		{RangeQuery{Start: start, End: start.Add(6 * time.Hour), Step: time.Minute}, grid{1700000000000, 60000, 361}, true},
		{RangeQuery{Start: start, End: start.Add(90 * time.Second), Step: time.Minute}, grid{1700000000000, 60000, 2}, true},
		{RangeQuery{Start: start, End: start, Step: 15 * time.Second}, grid{1700000000000, 15000, 1}, true},
		{RangeQuery{Start: start, End: start.Add(time.Second), Step: 1500 * time.Microsecond}, grid{}, false},
		{RangeQuery{Start: start, End: start.Add(-time.Minute), Step: time.Minute}, grid{}, false},
	} {
		g, err := gridOf(c.q)
		if (err == nil) != c.ok || g != c.want {
			t.Errorf("gridOf(%s … %s, %s) = %+v, %v; want %+v", c.q.Start, c.q.End, c.q.Step, g, err, c.want)
		}
	}
}

// TestQueryRangeOnGridOnRealPrometheus: a real Prometheus' range answers read onto their grid
// hold, bit for bit, the listed answer lined up on it — a grid from the first sample, one that
// starts before the history (leading NaN) and a step that does not divide the minute.
func TestQueryRangeOnGridOnRealPrometheus(t *testing.T) {
	c := startStored(t)
	for _, q := range []RangeQuery{
		{Expr: "probe_value", Start: blockTime, End: blockTime.Add(10 * time.Minute), Step: 15 * time.Second},
		{Expr: "probe_value * 0.37", Start: blockTime.Add(-5 * time.Minute), End: blockTime.Add(3 * time.Minute), Step: time.Minute},
		{Expr: "rate(probe_value[2m]) / 3", Start: blockTime.Add(-30 * time.Second), End: blockTime.Add(4 * time.Minute), Step: 7500 * time.Millisecond},
	} {
		listed, err := c.QueryRange(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		q.OnGrid = true
		on, err := c.QueryRange(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := gridOf(q)
		if len(on.Series) != len(listed.Series) || len(listed.Series) == 0 {
			t.Fatalf("%s: %d series on the grid, %d listed", q.Expr, len(on.Series), len(listed.Series))
		}
		values := 0
		for i, s := range on.Series {
			if s.Labels.String() != listed.Series[i].Labels.String() || s.Points != nil {
				t.Errorf("%s: series %d is %v with %d points, want %v and none", q.Expr, i, s.Labels, len(s.Points), listed.Series[i].Labels)
			}
			if ref := alignedOn(listed.Series[i].Points, g); !sameBits(s.Values, ref) {
				t.Errorf("%s %v: on the grid %v, listed and lined up %v", q.Expr, s.Labels, s.Values, ref)
			}
			for _, v := range s.Values {
				if !math.IsNaN(v) {
					values++
				}
			}
		}
		if values == 0 {
			t.Errorf("%s: no value on the grid", q.Expr)
		}
	}
}
