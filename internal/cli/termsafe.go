package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// termWriter is the writer every line the programs print goes through
// (StartLocal, ReconcileLocal, Start and Reconcile wrap their writer in
// one): the runs' outcomes, reconcile show, the model's text as it streams,
// the lines of --wait. Such text comes from the model, tools and MCP
// servers, and must not move the cursor, rewrite lines, set the window
// title or the clipboard (OSC 52), or change the terminal's state.
//
// Newline and tab pass; every other C0 control, DEL and the C1 controls
// are written as Go escapes (ESC as \x1b, CR as \r, U+009B as \u009b);
// bytes that are not UTF-8 as \xNN (a lone 0x9b is CSI to an 8-bit
// terminal); and the bidirectional formatting characters (U+202A to
// U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C), which reorder what
// a line seems to say, as \uNNNN.
//
// A Write that ends inside a UTF-8 character (a streamed piece of the
// model's text may) holds those bytes back until the next Write completes
// it, so that a character split across pieces is printed whole, not
// escaped as broken; Flush writes what is held (escaped, as it is not a
// whole character). A termWriter is safe for concurrent use.
type termWriter struct {
	w io.Writer

	mu   sync.Mutex
	tail []byte // the start of a character that the next Write may complete
}

// newTermWriter returns a termWriter on w; w itself when it is one.
func newTermWriter(w io.Writer) *termWriter {
	if t, ok := w.(*termWriter); ok {
		return t
	}
	return &termWriter{w: w}
}

func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := append(t.tail, p...)
	keep := partialRune(buf)
	t.tail = append([]byte(nil), buf[len(buf)-keep:]...)
	if _, err := io.WriteString(t.w, TermSafe(string(buf[:len(buf)-keep]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the bytes held back, escaped.
func (t *termWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.tail) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, TermSafe(string(t.tail)))
	t.tail = nil
	return err
}

// partialRune is the length of the start of a UTF-8 character that ends
// p and needs more bytes: 0 when p ends with a whole character or with
// bytes that no further byte makes valid.
func partialRune(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return 0
			}
			return len(p) - i
		}
	}
	return 0
}

// TermSafe returns s with the characters that could drive a terminal
// escaped, as termWriter writes them. The programs print their error
// lines through it.
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
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
