// Package clip shortens text quoted back in messages (a bad value, a server's answer) so that
// an error stays readable whatever the input was.
package clip

import "unicode/utf8"

// Text returns s cut to at most n bytes followed by "…" when it is longer, never cutting a
// UTF-8 sequence in half.
func Text(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:max(n, 0)]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
