package prom

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// DefaultMaxAnswerBytes bounds the body of one Prometheus answer unless MaxAnswerBytes says
// otherwise. Query answers are decoded as they arrive, never held whole, and a decoded point
// weighs about what its text does, so this keeps one answer to about a hundred MiB; dashboards'
// answers are kilobytes to a few MiB, and 64 MiB is about two million samples of a range query.
const DefaultMaxAnswerBytes int64 = 64 << 20

// Option changes how a Client is built.
type Option func(*options)

type options struct {
	maxAnswer int64
	thanos    ThanosOptions
}

// MaxAnswerBytes bounds the body of one answer; reading stops at the bound and the call fails
// with a KindLimit error that names it. n <= 0 keeps the default.
func MaxAnswerBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxAnswer = n
		}
	}
}

// answerTooLarge is what the bounded body returns once the bound is passed.
type answerTooLarge struct{ limit int64 }

func (e *answerTooLarge) Error() string {
	return fmt.Sprintf("the answer is larger than %s", FormatBytes(e.limit))
}

// boundedTransport stops reading an answer's body past limit bytes, so an oversized answer
// costs memory in proportion to the bound rather than to whatever the server sends.
type boundedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > t.limit {
		resp.Body.Close()
		return nil, &answerTooLarge{limit: t.limit}
	}
	resp.Body = &boundedBody{rc: resp.Body, left: t.limit, limit: t.limit}
	return resp, nil
}

type boundedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, &answerTooLarge{limit: b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// limitError turns a bounded read's failure into the message users act on.
func limitError(err error, where string) error {
	var big *answerTooLarge
	if !errors.As(err, &big) {
		return nil
	}
	return &Error{Kind: KindLimit, URL: where, Err: err, Msg: fmt.Sprintf(
		"the answer of %s is larger than the limit of %s: narrow the query (a model, version or instance filter, a shorter range or a coarser step), or raise the answer-size limit",
		where, FormatBytes(big.limit))}
}

// FormatBytes renders a size in binary units (64 MiB, 512 KiB, 900 B).
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ParseBytes reads a size such as "64MiB", "512 KiB", "1GiB", "100MB" or a plain byte count.
// Decimal units (kB, MB, GB) are powers of 1000, binary ones (KiB, MiB, GiB) of 1024.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	}
	mult, ok := byteUnits[strings.ToLower(unit)]
	x, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || x <= 0 || math.IsInf(x, 0) || x*float64(mult) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size: use a value like 64MiB, 512KiB or 1GiB", s)
	}
	return int64(x * float64(mult)), nil
}

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30,
}
