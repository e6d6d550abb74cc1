package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTermSafe: what could drive a terminal is escaped, and text that
// cannot is left as it is.
func TestTermSafe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines, é, 日本", "plain text, tabs\tand\nnewlines, é, 日本"},
		{"\x1b[2J\x1b]0;title\x07", `\x1b[2J\x1b]0;title\x07`},
		{"ok\rFAKE", `ok\rFAKE`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"csi \u009b31m c1", `csi \u009b31m c1`},
		{"lone \x9b byte", `lone \x9b byte`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`},
		{"marks \u200e\u200f\u061c", `marks \u200e\u200f\u061c`},
		{"\uFFFD stays", "\uFFFD stays"},
	} {
		if got := TermSafe(c.in); got != c.want {
			t.Errorf("TermSafe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var b strings.Builder
	if n, err := newTermWriter(&b).Write([]byte("a\x1bb")); n != 3 || err != nil || b.String() != `a\x1bb` {
		t.Fatalf("Write: %d, %v, %q", n, err, b.String())
	}
}

// TestTermWriterKeepsSplitCharacters: a character whose bytes come in two
// Writes (a streamed piece of text may end inside one) is printed whole,
// a C1 control split that way is still escaped, and bytes that never
// become a character are escaped by Flush.
func TestTermWriterKeepsSplitCharacters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pieces []string
		want   string
	}{
		{[]string{"caf\xc3", "\xa9 ", "\xe6\x97", "\xa5\xe6\x9c\xac"}, "café 日本"},
		{[]string{"a\xc2", "\x9b31m"}, `a\u009b31m`},
		{[]string{"x\xe2\x80", "\xae evil"}, `x\u202e evil`},
		{[]string{"\xf0\x9f", "\x98", "\x80!"}, "😀!"},
		{[]string{"cut \xe2\x80"}, `cut \xe2\x80`},
		{[]string{"broken \xe2", "x"}, `broken \xe2x`},
		{[]string{"\x1b", "[2J"}, `\x1b[2J`},
	} {
		var b strings.Builder
		w := newTermWriter(&b)
		for _, p := range c.pieces {
			if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", p, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("pieces %q printed %q, want %q", c.pieces, b.String(), c.want)
		}
	}
}

// FuzzTermSafe: the escaped text holds no control character but newline
// and tab, no bidirectional formatting character, and is valid UTF-8.
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"", "\x1b[31mred", "\r\n\t", "\xc2\x9b", "\xff\xfe", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := TermSafe(s)
		if !utf8.ValidString(got) {
			t.Fatalf("TermSafe(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if unsafeRune(r) {
				t.Fatalf("TermSafe(%q) = %q: holds %U", s, got, r)
			}
		}
	})
}

// FuzzParseOperator: the reconcile tool's argument decoder never panics;
// what it accepts is a signal whose shape the journal accepts, with a
// well-formed digest when it has one; what it refuses is one line.
func FuzzParseOperator(f *testing.F) {
	for _, s := range []string{
		"approve\x00r1\x00tool/2/0/create_ticket",
		"approve\x00r1\x00tool/2/0/create_ticket\x00--digest\x00sha256:0123456789abcdef",
		"deny\x00r1\x00tool/2/0/create_ticket\x00not\x00now\x00--digest=sha256:0123456789abcdef",
		"approve\x00r1\x00tool/2/0/create_ticket\x00--digest",
		"done\x00r1\x00tool/2/0/create_ticket\x00T-1",
		"retry\x00r1\x00tool/2/0/create_ticket",
		"budget\x00r1\x0040\x00200000",
		"message\x00r1\x00hello\x00--wait",
		"frobnicate",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		_, sig, err := ParseOperator(args)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(line, "\n") {
				t.Fatalf("%q: refusal is not one line: %q", args, err)
			}
			return
		}
		if sig.Digest != "" && len(sig.Digest) != len("sha256:")+16 {
			t.Fatalf("%q: accepted digest %q", args, sig.Digest)
		}
		if sig.Execution != "" {
			t.Fatalf("%q: the command line set an execution", args)
		}
	})
}
