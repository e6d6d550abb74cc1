package workflows

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// encoded is v as the sdk's converter sends it: what the server measures.
func encoded(t *testing.T, v string) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestJSONLen: jsonLen is the length encoding/json gives, for every kind
// of character it escapes.
func TestJSONLen(t *testing.T) {
	for _, v := range []string{"", "tool/1/0/create_ticket", `"\` + "\n\r\t\b\f\x00\x1f\x7f", "<>&", "\u2028\u2029", "héllo…世界😀", "\xff\xfe ok \xc3", strings.Repeat("a<", 50)} {
		if got, want := jsonLen(v), encoded(t, v); got != want {
			t.Errorf("jsonLen(%q) = %d, encoding/json writes %d", v, got, want)
		}
	}
}

// TestBoundAttr: a value whose encoding fits is kept whole; a longer one
// is cut at a UTF-8 boundary to at most the limit (as encoded), keeps the
// longest start that fits, and ends in "…+N bytes" with N the bytes cut.
func TestBoundAttr(t *testing.T) {
	for _, tc := range []struct {
		name, v string
		limit   int
	}{
		{"ascii", strings.Repeat("a", 3000), MaxAttrValue},
		{"escaped", "tool/1/0/" + strings.Repeat("&", 400), MaxAttrValue},
		{"multibyte", strings.Repeat("世", 1000), MaxAttrValue},
		{"emoji at the edge", "ab" + strings.Repeat("😀", 20), 40},
		{"invalid UTF-8", strings.Repeat("\xff", 500), 100},
		{"control", strings.Repeat("\x01", 500), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := boundAttr(tc.v, tc.limit)
			if n := encoded(t, got); n > tc.limit {
				t.Fatalf("%d bytes encoded, want at most %d: %q", n, tc.limit, got)
			}
			at := strings.LastIndex(got, "…+")
			if at < 0 || !strings.HasSuffix(got, " bytes") {
				t.Fatalf("%q has no cut mark", got)
			}
			kept := got[:at]
			n, err := strconv.Atoi(strings.TrimSuffix(got[at+len("…+"):], " bytes"))
			if err != nil || !strings.HasPrefix(tc.v, kept) || len(kept)+n != len(tc.v) {
				t.Fatalf("%q: keeps %d bytes and says %d more; the value has %d", got, len(kept), n, len(tc.v))
			}
			if utf8.ValidString(tc.v) && !utf8.ValidString(got) {
				t.Fatalf("%q: cut inside a character", got)
			}
			// The longest start that fits: one more character would not.
			_, size := utf8.DecodeRuneInString(tc.v[len(kept):])
			if longer := tc.v[:len(kept)+size] + cutMark(n-size); encoded(t, longer) <= tc.limit {
				t.Fatalf("%q: %q would fit too", got, longer)
			}
		})
	}
	if v := strings.Repeat("a", 1998); boundAttr(v, MaxAttrValue) != v {
		t.Fatalf("a value of exactly %d bytes encoded was cut", MaxAttrValue)
	}
	if got := boundAttr(strings.Repeat("a", 100), 5); got != "" {
		t.Fatalf("a limit too small for the mark: %q, want \"\"", got)
	}
}

// TestBoundAttrs: each value is bounded, the total too, and short values
// are kept whole while the long ones share what is left.
func TestBoundAttrs(t *testing.T) {
	short, long := "AwaitingApproval", strings.Repeat("x", 5000)
	got := boundAttrs([]string{long, short, long}, MaxAttrValue, 3000)
	total := 0
	for _, v := range got {
		total += encoded(t, v)
	}
	if got[1] != short || total > 3000 || encoded(t, got[0]) > MaxAttrValue || !strings.HasSuffix(got[0], " bytes") {
		t.Fatalf("lengths %d %d %d (total %d); want the short value whole and the total at most 3000", len(got[0]), len(got[1]), len(got[2]), total)
	}
	if a, b := encoded(t, got[0]), encoded(t, got[2]); a-b > 1 || b-a > 1 {
		t.Fatalf("the long values got %d and %d bytes; want equal shares", a, b)
	}
	got = boundAttrs([]string{short, long}, MaxAttrValue, MaxAttrTotal)
	if got[0] != short || encoded(t, got[1]) > MaxAttrValue || encoded(t, got[1]) < MaxAttrValue-10 {
		t.Fatalf("%q and %d bytes; want the status whole and the step cut near %d", got[0], encoded(t, got[1]), MaxAttrValue)
	}
}
