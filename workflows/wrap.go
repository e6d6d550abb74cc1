package workflows

import (
	"strings"
	"unicode/utf8"
)

// detailsWidth is the longest line, in characters, of a block of text in
// the current details: the UI shows a block without wrapping it, in a box
// that cuts longer lines on the right.
const detailsWidth = 72

// wrap breaks every line of s longer than width characters: at the last
// space that fits, or, in a word longer than the width, after width
// characters. A continuation line keeps the line's indentation and adds two
// spaces, so wrapped JSON still reads as JSON. Shorter lines are kept.
func wrap(s string, width int) string {
	lines := strings.Split(s, "\n")
	var out []string
	for _, line := range lines {
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		prefix := ""
		for utf8.RuneCountInString(line) > width {
			// The byte offset just past the width-th character.
			end, n := 0, 0
			for end < len(line) && n < width {
				_, size := utf8.DecodeRuneInString(line[end:])
				end += size
				n++
			}
			lead := len(indent) // a space within the indentation is no place to break
			if prefix != "" {
				lead = len(prefix)
			}
			cutAt := strings.LastIndexByte(line[:end], ' ')
			if cutAt <= lead { // no space past the indentation: cut the word
				cutAt = end
			}
			out = append(out, strings.TrimRight(line[:cutAt], " "))
			prefix = indent + "  "
			line = prefix + strings.TrimLeft(line[cutAt:], " ")
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
