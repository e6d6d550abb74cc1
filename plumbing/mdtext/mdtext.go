package mdtext

import "strings"

// Block returns text in a fenced code block (info string lang, "" for
// none), ending with a line break.
func Block(lang, text string) string {
	fence := strings.Repeat("`", max(3, longestRun(text)+1))
	return fence + lang + "\n" + text + "\n" + fence + "\n"
}

// Code returns s on one line in a code span. A span that begins or ends
// with a backtick, or with a space on both sides, is padded with a space
// on each side (which the renderer strips).
func Code(s string) string {
	s = oneLine(s)
	fence := strings.Repeat("`", longestRun(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") && strings.Trim(s, " ") != "") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// Text returns s on one line, escaped for running prose.
func Text(s string) string {
	s = oneLine(s)
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		switch {
		case strings.IndexByte(escaped, c) >= 0, c == ':' && colonMarks(s, i):
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '=' && (i == 0 || s[i-1] == ' ') && equalsWord(s[i:]):
			b.WriteString("&#61;") // a word of "=" only: no line of them underlines a heading
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escaped are the characters Text puts a backslash before: those that
// can begin markup and that both CommonMark and the Web UI's renderer
// (gomarkdown, which escapes no others) take escaped; ":" too where it
// could begin markup (colonMarks). "=", which that
// renderer cannot escape, begins markup only as a line of "=" under a
// paragraph (a heading), and Text writes the first "=" of a word of
// them as an entity.
const escaped = "\\`*_{}[]()#+-.!|&<>~^$"

// colonMarks reports whether the ":" at s[i] could begin markup: an
// autolink's scheme ("http:", "mailto:"; a colon followed by anything but
// a space) or a definition (a colon that begins the text). A colon before
// a space, as in running prose, cannot and stays plain.
func colonMarks(s string, i int) bool {
	return i+1 < len(s) && s[i+1] != ' ' || strings.TrimLeft(s[:i], " ") == ""
}

// equalsWord reports whether s begins with a word of "=" only.
func equalsWord(s string) bool {
	n := len(s) - len(strings.TrimLeft(s, "="))
	return n == len(s) || s[n] == ' '
}

// Lines returns each line of s escaped as Text, for a block of prose such
// as a quoted answer.
func Lines(s string) []string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = Text(l)
	}
	return lines
}

// oneLine replaces line breaks, tabs and other C0 controls and DEL with
// spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// longestRun is the length of the longest run of backticks in s.
func longestRun(s string) int {
	longest, run := 0, 0
	for i := range len(s) {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
