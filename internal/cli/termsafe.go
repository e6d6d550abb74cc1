package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// termSafe is a writer that escapes what could drive the terminal it
// prints to: reconcile show prints text from the model, tools and MCP
// servers, and such text must not move the cursor, rewrite lines or change
// the terminal's state. Each Write is escaped on its own (callers write
// whole lines): newline and tab pass; every other C0 control, DEL and the
// C1 controls are written as Go escapes (ESC as \x1b, CR as \r, U+009B as
// \u009b); bytes that are not UTF-8 as \xNN (a lone 0x9b is CSI to an
// 8-bit terminal); and the bidirectional formatting characters (U+202A to
// U+202E, U+2066 to U+2069), which reorder what a line seems to say, as
// \uNNNN.
type termSafe struct{ w io.Writer }

func (t termSafe) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, TermSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// TermSafe returns s with the characters that could drive a terminal
// escaped, as termSafe writes it.
func TermSafe(s string) string {
	clean := true
	for i, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			if _, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size == 1 {
				clean = false
				break
			}
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether r is a control or bidirectional formatting
// character other than newline and tab.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
