package prom

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	// Reads the answer token by token from the body: one pass, straight into our types.
	jsoniter "github.com/json-iterator/go"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// answer is a query or query_range answer, decoded.
type answer struct {
	resultType string   // "matrix", "vector", "scalar" or "string"; "" when the answer had no result
	series     []Series // matrix
	samples    []Sample // vector; a scalar as one sample without labels
	text       string   // string
	warnings   []string
	infos      []string
}

// decodeBufferSize is the iterator's read buffer: large enough that few values straddle two reads.
const decodeBufferSize = 64 << 10

// decoder reads one answer. The first failure is kept in err and stops the reading.
type decoder struct {
	endpoint  string // "query" or "query_range", for messages
	where     string // the server's redacted URL
	maxSeries int    // more series than this are refused (0: no limit)
	maxPoints int    // more points in a series than this are refused (0: no limit)

	err          error
	status       string
	errorType    string
	errorMsg     string
	pendingData  []byte   // a result that came before its resultType, read once the type is known
	num          []byte   // scratch: a timestamp's text
	points       []Point  // scratch: the series being read
	seriesLabels Labels   // the series being read, for messages
	grid         *grid    // a range query's grid, to place the points on (RangeQuery.OnGrid)
	written      []uint64 // scratch, on a grid: the positions of the series being read that hold a point
}

// grid is a range query's evaluation times: start + i·step for i < n, in milliseconds.
type grid struct {
	start, step int64
	n           int
}

// gridOf is the grid of a range query OnGrid; its step must be whole milliseconds.
func gridOf(q RangeQuery) (grid, error) {
	step := q.Step.Milliseconds()
	if step <= 0 || q.Step%time.Millisecond != 0 {
		return grid{}, fmt.Errorf("a query on a grid needs a step of whole milliseconds, not %s", q.Step)
	}
	start, end := q.Start.UnixMilli(), q.End.UnixMilli()
	if end < start {
		return grid{}, fmt.Errorf("the query's end %s is before its start %s", q.End.UTC().Format(time.RFC3339), q.Start.UTC().Format(time.RFC3339))
	}
	if n := (end-start)/step + 1; n <= 1<<30 {
		return grid{start: start, step: step, n: int(n)}, nil
	}
	return grid{}, fmt.Errorf("a query on a grid of more than %d points", 1<<30)
}

// index is the grid position of a point's time, or -1 off the grid.
func (g *grid) index(ms int64) int {
	d := ms - g.start
	if ms < g.start || d < 0 || d%g.step != 0 || d/g.step >= int64(g.n) { // d < 0: overflowed
		return -1
	}
	return int(d / g.step)
}

// decodeAnswer reads the answer to endpoint ("query" or "query_range") from r in one pass. It
// refuses an answer of more than maxSeries series (0: no limit) once it reaches series
// maxSeries+1, counting the rest without decoding them, and a series of more than maxPoints
// points (0: no limit; a range query's grid holds no more), without keeping those past it.
// Every failure is an *Error: malformed JSON or values (KindNotPrometheus), Prometheus' error
// envelope (the kinds of its errorType), native histograms (KindBadQuery), the series limit
// (KindLimit).
func decodeAnswer(r io.Reader, endpoint, where string, maxSeries, maxPoints int) (answer, error) {
	return decodeAnswerOn(r, endpoint, where, maxSeries, maxPoints, nil)
}

// decodeAnswerOn is decodeAnswer placing a matrix's points on the grid g (when not nil) as
// Series.Values instead of listing them as Points.
func decodeAnswerOn(r io.Reader, endpoint, where string, maxSeries, maxPoints int, g *grid) (answer, error) {
	// num starts non-nil: the iterator captures into a nil slice as "not capturing", and panics.
	d := &decoder{endpoint: endpoint, where: where, maxSeries: maxSeries, maxPoints: maxPoints, num: make([]byte, 0, 32), grid: g}
	iter := jsoniter.Parse(jsoniter.ConfigDefault, r, decodeBufferSize)
	var a answer
	iter.ReadObjectCB(func(it *jsoniter.Iterator, key string) bool {
		d.envelopeField(it, key, &a)
		return d.err == nil && it.Error == nil
	})
	if d.err == nil && iter.Error == nil && d.pendingData != nil {
		d.result(jsoniter.ParseBytes(jsoniter.ConfigDefault, d.pendingData), &a)
	}
	if d.err != nil {
		return answer{}, d.err
	}
	if iter.Error != nil {
		return answer{}, d.malformed(iter.Error)
	}
	// Nothing but white space may follow the answer.
	if iter.WhatIsNext() != jsoniter.InvalidValue || !errors.Is(iter.Error, io.EOF) {
		if iter.Error != nil && !errors.Is(iter.Error, io.EOF) {
			return answer{}, d.malformed(iter.Error)
		}
		return answer{}, d.bad("more data after the answer's JSON object")
	}
	if d.status == "error" {
		return answer{}, apiFailure(&v1.Error{Type: v1.ErrorType(d.errorType), Msg: d.errorMsg}, d.where)
	}
	if a.resultType == "" {
		return answer{}, d.bad("an unexpected result type (nothing)")
	}
	return a, nil
}

// fieldName is the field a key names as client_golang's decoding (encoding/json's rules, which
// this decoder answers as) matches it: the name itself, else one it equals under Unicode case
// folding ("Warnings" is warnings); a key that names none is returned as it is.
func fieldName(key string, names ...string) string {
	for _, n := range names {
		if key == n {
			return n
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return n
		}
	}
	return key
}

func (d *decoder) envelopeField(it *jsoniter.Iterator, key string, a *answer) {
	switch fieldName(key, "status", "errorType", "error", "warnings", "infos", "data") {
	case "status":
		d.status = validUTF8(it.ReadString())
	case "errorType":
		d.errorType = validUTF8(it.ReadString())
	case "error":
		d.errorMsg = validUTF8(it.ReadString())
	case "warnings":
		a.warnings = d.readStrings(it)
	case "infos":
		a.infos = d.readStrings(it)
	case "data":
		*a = answer{warnings: a.warnings, infos: a.infos}
		d.pendingData = nil
		it.ReadObjectCB(func(it *jsoniter.Iterator, key string) bool {
			d.dataField(it, key, a)
			return d.err == nil && it.Error == nil
		})
	default:
		it.Skip()
	}
}

func (d *decoder) dataField(it *jsoniter.Iterator, key string, a *answer) {
	switch fieldName(key, "resultType", "result") {
	case "resultType":
		a.resultType = it.ReadString()
	case "result":
		if a.resultType == "" {
			// Prometheus writes the type first; another order costs a copy of the result.
			d.pendingData = it.SkipAndReturnBytes()
			return
		}
		d.result(it, a)
	default:
		it.Skip()
	}
}

// result reads the result array of the answer's type.
func (d *decoder) result(it *jsoniter.Iterator, a *answer) {
	switch a.resultType {
	case "matrix":
		a.series = d.matrix(it)
	case "vector":
		a.samples = d.vector(it)
	case "scalar":
		p, _ := d.pair(it, false)
		a.samples = []Sample{{Labels: Labels{}, Point: p}}
	case "string":
		p, text := d.pair(it, true)
		a.text = text
		a.samples = []Sample{{Labels: Labels{}, Point: Point{T: p.T}}}
	default:
		d.err = &Error{Kind: KindNotPrometheus, URL: d.where, Msg: fmt.Sprintf(
			"the server at %s answered %s with an unknown result type %q", d.where, d.endpoint, Snippet([]byte(a.resultType), 40))}
	}
	if it.Error != nil && !errors.Is(it.Error, io.EOF) && d.err == nil {
		d.err = d.malformed(it.Error)
	}
}

// elements reads the result's array, calling one for each element up to the series limit and
// counting those past it without decoding them.
func (d *decoder) elements(it *jsoniter.Iterator, one func(*jsoniter.Iterator)) {
	n := 0
	it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
		n++
		if d.maxSeries > 0 && n > d.maxSeries {
			it.Skip()
		} else {
			one(it)
		}
		return d.err == nil && it.Error == nil
	})
	if d.err == nil && it.Error == nil && d.maxSeries > 0 && n > d.maxSeries {
		d.err = seriesLimitError(d.where, n, d.maxSeries)
	}
}

func (d *decoder) matrix(it *jsoniter.Iterator) []Series {
	out := []Series{}
	d.elements(it, func(it *jsoniter.Iterator) {
		s := Series{Labels: Labels{}}
		d.points, d.seriesLabels = d.points[:0], s.Labels
		extra := 0 // points past maxPoints: checked, not kept, so they cost no memory
		if d.grid != nil {
			s.Values = make([]float64, d.grid.n)
			for i := range s.Values {
				s.Values[i] = math.NaN()
			}
		}
		placed := 0 // on a grid: the points read
		if d.grid != nil {
			d.written = slices.Grow(d.written[:0], (d.grid.n+63)/64)[:(d.grid.n+63)/64]
			clear(d.written)
		}
		it.ReadObjectCB(func(it *jsoniter.Iterator, key string) bool {
			switch fieldName(key, "metric", "values", "histograms") {
			case "metric":
				d.labels(it, s.Labels)
			case "values":
				if d.grid != nil {
					it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
						ms, v := d.gridPair(it)
						if placed++; d.maxPoints > 0 && placed > d.maxPoints {
							extra++
						} else if i := d.grid.index(ms); i >= 0 && d.written[i/64]&(1<<(i%64)) == 0 {
							// A repeated time keeps its first value, as lining a list of points up on
							// the grid does, whatever order the points come in.
							s.Values[i] = v
							d.written[i/64] |= 1 << (i % 64)
						}
						return d.err == nil && it.Error == nil
					})
					return d.err == nil && it.Error == nil
				}
				it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
					p, _ := d.pair(it, false)
					if d.maxPoints > 0 && len(d.points) >= d.maxPoints {
						extra++
					} else {
						d.points = append(d.points, p)
					}
					return d.err == nil && it.Error == nil
				})
			case "histograms":
				d.histograms(it, true)
			default:
				it.Skip()
			}
			return d.err == nil && it.Error == nil
		})
		if extra > 0 && d.err == nil && it.Error == nil {
			d.err = d.bad(fmt.Sprintf("%d points for series %s, more than the %d its range holds at its step", d.maxPoints+extra, s.Labels, d.maxPoints))
		}
		if d.grid == nil {
			// One allocation of the exact size per series; the scratch slice is reused.
			s.Points = slices.Clone(d.points)
		}
		out = append(out, s)
	})
	return out
}

func (d *decoder) vector(it *jsoniter.Iterator) []Sample {
	out := []Sample{}
	d.elements(it, func(it *jsoniter.Iterator) {
		s := Sample{Labels: Labels{}}
		d.seriesLabels = s.Labels
		hasValue := false
		it.ReadObjectCB(func(it *jsoniter.Iterator, key string) bool {
			switch fieldName(key, "metric", "value", "histogram") {
			case "metric":
				d.labels(it, s.Labels)
			case "value":
				s.Point, _ = d.pair(it, false)
				hasValue = true
			case "histogram":
				d.histograms(it, false)
			default:
				it.Skip()
			}
			return d.err == nil && it.Error == nil
		})
		if !hasValue && d.err == nil && it.Error == nil {
			d.err = d.bad("a sample without a value for " + s.Labels.String())
		}
		out = append(out, s)
	})
	return out
}

// histograms refuses Prometheus' native histograms, which the engine does not read: a series
// of them would otherwise come back with no points, silently. list: a series' list of
// [timestamp, histogram] (an empty list holds none); otherwise a sample's one pair.
func (d *decoder) histograms(it *jsoniter.Iterator, list bool) {
	if it.WhatIsNext() == jsoniter.NilValue {
		it.Skip()
		return
	}
	found := !list
	if list {
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			found = true
			return false
		})
	}
	if !found || it.Error != nil {
		return
	}
	d.err = &Error{Kind: KindBadQuery, URL: d.where, Msg: fmt.Sprintf(
		"the query returned Prometheus native histograms (series %s), which this data source reads only as float samples: "+
			"turn them into floats in the query (histogram_quantile, histogram_count, histogram_sum or histogram_fraction)",
		d.seriesLabels)}
}

// labels reads a series' label set into l.
func (d *decoder) labels(it *jsoniter.Iterator, l Labels) {
	it.ReadMapCB(func(it *jsoniter.Iterator, name string) bool {
		value := it.ReadString()
		switch {
		case it.Error != nil:
		case name == "" || !utf8.ValidString(name):
			d.err = d.bad(fmt.Sprintf("an invalid label name %q", name))
		case !utf8.ValidString(value):
			d.err = d.bad(fmt.Sprintf("label %s's value %q, which is not UTF-8", name, value))
		default:
			l[name] = value
		}
		return d.err == nil && it.Error == nil
	})
}

// pair reads [timestamp, "value"]; with text, the value is returned as it is instead of parsed.
func (d *decoder) pair(it *jsoniter.Iterator, text bool) (Point, string) {
	ms, v, s, ok := d.pairMs(it, text)
	if !ok {
		return Point{}, s
	}
	return Point{T: model.Time(ms).Time(), V: v}, s
}

// gridPair is pair for a point placed on a grid: its time in milliseconds, no time.Time.
func (d *decoder) gridPair(it *jsoniter.Iterator) (int64, float64) {
	ms, v, _, _ := d.pairMs(it, false)
	return ms, v
}

// pairMs reads [timestamp, "value"]: the time in milliseconds, the value parsed or, with text,
// as it is. ok is false where the timestamp could not be read (d.err or it.Error says why).
func (d *decoder) pairMs(it *jsoniter.Iterator, text bool) (ms int64, v float64, s string, ok bool) {
	if it.WhatIsNext() != jsoniter.ArrayValue || !it.ReadArray() {
		d.fail(it, "a sample that is not [timestamp, value]")
		return 0, 0, "", false
	}
	d.num = it.SkipAndAppendBytes(d.num[:0])
	if ms, ok = parseTimestamp(d.num); !ok {
		d.fail(it, fmt.Sprintf("a timestamp that is not seconds with at most 15 digits and a fraction: %q", d.num))
		return 0, 0, "", false
	}
	if !it.ReadArray() {
		d.fail(it, "a sample without a value")
		return ms, 0, "", true
	}
	if text {
		s = validUTF8(it.ReadString())
	} else {
		v = d.value(it)
	}
	if it.ReadArray() {
		d.fail(it, "a sample with more than [timestamp, value]")
	}
	return ms, v, s, true
}

// value reads a sample value: a quoted float, "NaN", "+Inf" or "-Inf".
func (d *decoder) value(it *jsoniter.Iterator) float64 {
	raw := it.ReadStringAsSlice() // valid until the next read: parsed at once
	if it.Error != nil {
		return 0
	}
	if f, ok := parseShortDecimal(raw); ok {
		return f
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		d.err = d.bad(fmt.Sprintf("a sample value that is not a number: %q", raw))
	}
	return f
}

func (d *decoder) readStrings(it *jsoniter.Iterator) []string {
	var out []string
	it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
		out = append(out, validUTF8(it.ReadString()))
		return it.Error == nil
	})
	return out
}

// validUTF8 is s as encoding/json (client_golang) decodes a JSON string: each byte that is not
// part of valid UTF-8 becomes U+FFFD (strings.ToValidUTF8 would replace a run of them with one).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// fail records a malformed sample unless the iterator already failed (its message is better).
func (d *decoder) fail(it *jsoniter.Iterator, what string) {
	if it.Error == nil && d.err == nil {
		d.err = d.bad(what)
	}
}

// bad is an answer that is JSON but not Prometheus' format.
func (d *decoder) bad(what string) *Error {
	return &Error{Kind: KindNotPrometheus, URL: d.where, Msg: fmt.Sprintf(
		"the server at %s answered %s with %s", d.where, d.endpoint, what)}
}

// malformed is an answer that is not JSON (or ends early).
func (d *decoder) malformed(err error) *Error {
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the answer ends before its JSON does"
	} else if op, rest, ok := strings.Cut(msg, ", error found in #"); ok {
		// The iterator's message quotes the body around the error; keep a short, printable part.
		msg = op
		if _, near, ok := strings.Cut(rest, "bigger context ...|"); ok {
			msg += " near " + strconv.Quote(Snippet([]byte(strings.TrimSuffix(near, "|...")), 80))
		}
	}
	return &Error{Kind: KindNotPrometheus, URL: d.where, Err: err, Msg: fmt.Sprintf(
		"the server at %s answered %s with malformed JSON: %s", d.where, d.endpoint, msg)}
}

// parseTimestamp reads Prometheus' timestamp, seconds with an optional fraction
// ("1700000000.123"), into milliseconds: digits past the third of the fraction are dropped, as
// client_golang's model.Time does. Exponents, a leading '+' and leading zeros are refused.
func parseTimestamp(b []byte) (int64, bool) {
	// One pass over the text: it is read for every sample.
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++ // the captured text may start with white space
	}
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var sec int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i-start == 15 {
			return 0, false
		}
		sec = sec*10 + int64(b[i]-'0')
	}
	if n := i - start; n == 0 || n > 1 && b[start] == '0' {
		return 0, false
	}
	ms := sec * 1000
	if i < len(b) {
		if b[i] != '.' {
			return 0, false
		}
		i++
		frac := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			switch i - frac {
			case 0:
				ms += 100 * int64(b[i]-'0')
			case 1:
				ms += 10 * int64(b[i]-'0')
			case 2:
				ms += int64(b[i] - '0')
			}
		}
		if i == frac || i < len(b) {
			return 0, false
		}
	}
	if neg {
		ms = -ms
	}
	return ms, true
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
	1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseShortDecimal parses the values exporters mostly write — an integer ("34102040330") or
// a short decimal ("0.37", "178.523") — bit for bit as strconv.ParseFloat does, without its
// general path (a sixth of decoding a GPU answer): an integer of up to 19 digits converts to
// the nearest float64 as ParseFloat rounds it, and a decimal whose digits make at most 2^53 is
// an exact float64 mantissa divided by an exact power of ten, one correctly rounded operation
// (the fast path of strconv itself). Anything else (exponents, more digits, "NaN", "+Inf")
// answers false.
func parseShortDecimal(b []byte) (float64, bool) {
	i := 0
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		i++
	}
	start := i
	var m uint64 // wraps past 19 digits, which are refused below
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		m = m*10 + uint64(b[i]-'0')
	}
	nInt, nFrac := i-start, 0
	if i < len(b) {
		if b[i] != '.' {
			return 0, false
		}
		i++
		frac := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			m = m*10 + uint64(b[i]-'0')
		}
		if nFrac = i - frac; nFrac == 0 || i < len(b) {
			return 0, false
		}
	}
	if nInt == 0 || nInt+nFrac > 19 || nFrac > 0 && (m > 1<<53 || nFrac >= len(pow10)) {
		return 0, false
	}
	f := float64(m)
	if nFrac > 0 {
		f /= pow10[nFrac]
	}
	if neg {
		f = -f
	}
	return f, true
}
