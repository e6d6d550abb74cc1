package safetext

import (
	"net/url"
	"unicode/utf8"
)

// RedactURL hides a password in a URL.
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// KeyState says whether a key is set, never what it is.
func KeyState(key string) string {
	if key == "" {
		return "not set"
	}
	return "set"
}

// Truncate shortens s to at most n bytes, on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
