package clip

import (
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"too long here", 3, "too…"},
		{"", 0, ""},
		{"x", 0, "…"},
		{"x", -1, "…"},
		{"héllo", 2, "h…"}, // the é's two bytes are not split
		{"日本語", 4, "日…"},
	} {
		got := Text(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("Text(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
