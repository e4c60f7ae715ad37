package prom

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Template safety: every model, version, instance or GPU value that reaches PromQL goes through
// Quote (equality) or MatchAny (multi-value regex). Nothing else in the project builds a string
// literal or a label matcher by hand.

const hexDigits = "0123456789abcdef"

// Quote returns value as a double-quoted PromQL string literal that decodes back to exactly value.
//
// Backslash and double quote are escaped; newline, carriage return and tab use their short
// escapes; other control characters, DEL and bytes that are not valid UTF-8 use \xNN, so an
// invalid byte survives instead of turning into U+FFFD; U+FFFD itself is written \ufffd. Other
// runes are kept as they are.
func Quote(value string) string {
	var b strings.Builder
	b.Grow(len(value) + 2)
	b.WriteByte('"')
	for i := 0; i < len(value); {
		r, size := utf8.DecodeRuneInString(value[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHexByte(&b, value[i])
		case r == utf8.RuneError:
			// A literal U+FFFD is refused by the PromQL lexer, which cannot tell it from a
			// decoding error; the escape decodes to the same rune.
			b.WriteString(`\ufffd`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			writeHexByte(&b, byte(r))
		default:
			b.WriteString(value[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

func writeHexByte(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&0x0f])
}

// RegexEscape returns a regular expression (RE2, as Prometheus uses) that matches exactly value.
func RegexEscape(value string) string {
	return regexp.QuoteMeta(value)
}

// AnyOfRegex returns a regular expression matching exactly the given values and nothing else
// (Prometheus anchors regex matchers at both ends). Values are de-duplicated and sorted so the
// same set always gives the same query text.
func AnyOfRegex(values []string) string {
	set := slices.Clone(values)
	slices.Sort(set)
	set = slices.Compact(set)
	escaped := make([]string, len(set))
	for i, v := range set {
		escaped[i] = RegexEscape(v)
	}
	return strings.Join(escaped, "|")
}

// MatchAny returns the quoted PromQL string literal for a `=~` matcher that selects exactly the
// given values.
func MatchAny(values []string) string {
	return Quote(AnyOfRegex(values))
}

// MatchType is the operator of a label matcher.
type MatchType string

// The four PromQL label-matcher operators.
const (
	MatchEqual     MatchType = "="
	MatchNotEqual  MatchType = "!="
	MatchRegexp    MatchType = "=~"
	MatchNotRegexp MatchType = "!~"
)

// Matcher is one label matcher of a selector. Build it with Eq, NotEq, In or Regex.
type Matcher struct {
	Label  string
	Type   MatchType
	Value  string   // for Eq, NotEq and Regex
	Values []string // for In
	anyOf  bool     // built by In: Values is the set, even when empty
}

// Eq matches series whose label equals value.
func Eq(label, value string) Matcher { return Matcher{Label: label, Type: MatchEqual, Value: value} }

// EqAll is one Eq matcher per label of labels, in label order so that the selector's text is
// stable.
func EqAll(labels map[string]string) []Matcher {
	ms := make([]Matcher, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		ms = append(ms, Eq(k, labels[k]))
	}
	return ms
}

// NotEq matches series whose label differs from value.
func NotEq(label, value string) Matcher {
	return Matcher{Label: label, Type: MatchNotEqual, Value: value}
}

// In matches series whose label is one of values (a regex matcher built with MatchAny).
func In(label string, values ...string) Matcher {
	return Matcher{Label: label, Type: MatchRegexp, Values: values, anyOf: true}
}

// Regex matches series whose label matches the RE2 pattern (anchored, as in Prometheus). The
// pattern is validated; it is still quoted, so it can change what the label matches but never
// the shape of the selector.
func Regex(label, pattern string) Matcher {
	return Matcher{Label: label, Type: MatchRegexp, Value: pattern}
}

var (
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// ValidLabelName reports whether name is a label name every Prometheus release accepts unquoted.
func ValidLabelName(name string) bool { return labelNameRE.MatchString(name) }

// ValidMetricName reports whether name is a metric name every Prometheus release accepts unquoted.
func ValidMetricName(name string) bool { return metricNameRE.MatchString(name) }

// ErrEmptySelector is returned for a selector with neither a metric name nor a matcher.
var ErrEmptySelector = errors.New("a selector needs a metric name or at least one label matcher")

// Selector builds `metric{label="value",...}`. Label and metric names are validated against the
// classic Prometheus name syntax; values may hold anything and are quoted. A value that is not
// valid UTF-8 is refused, since no Prometheus series can carry it.
func Selector(metric string, matchers ...Matcher) (string, error) {
	if metric == "" && len(matchers) == 0 {
		return "", ErrEmptySelector
	}
	if metric != "" && !ValidMetricName(metric) {
		return "", fmt.Errorf("invalid metric name %s", Quote(metric))
	}
	var b strings.Builder
	b.WriteString(metric)
	if len(matchers) == 0 {
		return b.String(), nil
	}
	b.WriteByte('{')
	for i, m := range matchers {
		text, err := m.render()
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(text)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// MatchersText renders matchers as `label="value",...` (no braces), for splicing into an
// existing selector such as `{__name__=~"x", <here>}`.
func MatchersText(matchers ...Matcher) (string, error) {
	parts := make([]string, len(matchers))
	for i, m := range matchers {
		text, err := m.render()
		if err != nil {
			return "", err
		}
		parts[i] = text
	}
	return strings.Join(parts, ","), nil
}

func (m Matcher) render() (string, error) {
	if !ValidLabelName(m.Label) {
		return "", fmt.Errorf("invalid label name %s", Quote(m.Label))
	}
	switch m.Type {
	case MatchEqual, MatchNotEqual:
		if !utf8.ValidString(m.Value) {
			return "", fmt.Errorf("value for label %s is not valid UTF-8", m.Label)
		}
		return m.Label + string(m.Type) + Quote(m.Value), nil
	case MatchRegexp, MatchNotRegexp:
		if m.anyOf || m.Values != nil {
			if len(m.Values) == 0 {
				return "", fmt.Errorf("no values given for label %s", m.Label)
			}
			for _, v := range m.Values {
				if !utf8.ValidString(v) {
					return "", fmt.Errorf("a value for label %s is not valid UTF-8", m.Label)
				}
			}
			return m.Label + string(m.Type) + MatchAny(m.Values), nil
		}
		if !utf8.ValidString(m.Value) {
			return "", fmt.Errorf("pattern for label %s is not valid UTF-8", m.Label)
		}
		if _, err := regexp.Compile("^(?:" + m.Value + ")$"); err != nil {
			return "", fmt.Errorf("invalid regular expression for label %s: %w", m.Label, err)
		}
		return m.Label + string(m.Type) + Quote(m.Value), nil
	default:
		return "", fmt.Errorf("unknown match type %q for label %s", m.Type, m.Label)
	}
}
